import Basics
import Foundation

/// One setting of a configuration file, declared once: its key, where its value goes (a key path, which fixes
/// the type; the default is that field's initial value), the values it may take, the environment variable that
/// overrides it and its help line. The loader, the bounds check (`check-config` and the worker's start),
/// the overrides, `herald worker --help` and the tables in docs/configuration.md are all made from these
/// (`Configuration.settings`). A provider declares its section and its apps' credential block with these in its
/// own module, rooted at its own settings type; the worker lifts them under the section's key (`lifted`).
///
/// @unchecked: the closures touch only the root they are handed (through key paths) and capture nothing mutable.
public struct Setting<Root>: @unchecked Sendable {
    /// Dotted key from the root of its file: `worker.lease_seconds`, `tls.ca_file` within `redis`.
    public let key: String
    /// The environment variable that overrides it, if any.
    public let environment: String?
    /// The meaning, as the docs' table and `worker --help` show it.
    public let help: String
    /// The values it may take, for the docs (`2...86400`, `"priority", "weighted"`); empty for free text.
    public let allowed: String
    /// The default as the docs show it: the declaration's text, else the field's value in `Root`'s default.
    public let defaultText: (Root) -> String
    /// Reads a JSON value (never nil) into the root; returns a problem naming `name` instead.
    public let read: (Any, inout Root, _ name: String) -> String?
    /// Reads the environment variable's text; nil when the setting has none.
    public let readEnvironment: ((String, inout Root, _ key: String) -> String?)?
    /// The bounds check of the value in the root (whatever set it), naming `name`; nil when it is fine.
    public let check: (Root, _ name: String) -> String?
    /// Whole numbers: the field's value widened, so tests can drive each one to its bounds.
    public let number: NumberAccess<Root>?
    /// How it is given on a command line, for a setting that is a flag (the simulators'); nil: not a flag.
    public var commandLine: CommandLineForm<Root>? = nil

    /// The same setting inside a larger root (`\Configuration.retry`), its key under `prefix`.
    public func lifted<Outer>(_ path: WritableKeyPath<Outer, Root>, prefix: String) -> Setting<Outer> {
        let readEnvironment = self.readEnvironment
        return Setting<Outer>(
            key: prefix + key, environment: environment, help: help, allowed: allowed,
            defaultText: { [defaultText] in defaultText($0[keyPath: path]) },
            read: { [read] value, root, name in read(value, &root[keyPath: path], name) },
            readEnvironment: readEnvironment.map { reader in { text, root, key in reader(text, &root[keyPath: path], key) } },
            check: { [check] root, name in check(root[keyPath: path], name) },
            number: number.map { n in
                NumberAccess(minimum: n.minimum, maximum: n.maximum, get: { n.get($0[keyPath: path]) }, set: { n.set(&$0[keyPath: path], $1) })
            },
            commandLine: commandLine.map { form in
                CommandLineForm(valueName: form.valueName, repeatable: form.repeatable) { args, root throws(UsageError) in try form.read(args, &root[keyPath: path]) }
            })
    }
}

/// A numeric setting's bounds and its value as a Double, for tests and the fuzz target that try every bound.
public struct NumberAccess<Root> {
    public let minimum: Double
    public let maximum: Double
    public let get: (Root) -> Double
    /// Sets the field to the value (which must lie within the bounds).
    public let set: (inout Root, Double) -> Void
}

extension Setting {
    /// A whole number within `range` (inclusive). `off`: what 0 means, when 0 turns the feature off (shown as
    /// `0 (off) ... max`). The bounds are chosen so every value the worker derives (milliseconds, nanoseconds,
    /// doubled back-offs, due times) stays far from overflow.
    public static func integer<T: FixedWidthInteger & Sendable>(
        _ key: String, _ path: WritableKeyPath<Root, T>, _ range: ClosedRange<T>, off: Bool = false, environment: String? = nil,
        default defaultText: String? = nil, _ help: String
    ) -> Setting {
        let rangeText = off && range.lowerBound == 0 ? "0 (off) ... \(range.upperBound)" : "\(range.lowerBound)...\(range.upperBound)"
        func outOfRange(_ name: String, _ got: String) -> String { "\(name) must be \(rangeText), got \(got)" }
        /// A number is taken only when it is whole and within the bounds, compared as a Double first, so a value
        /// beyond Int64 (`1e300`, `99999999999999999999`) is named as out of range rather than clamped.
        func parse(_ double: Double, text: String, name: String) -> Result<T, SettingProblem> {
            guard double >= Double(range.lowerBound) && double <= Double(range.upperBound) else { return .failure(.init(outOfRange(name, text))) }
            guard double == double.rounded() else { return .failure(.init("\(name) must be a whole number, got \(text)")) }
            return .success(T(double))
        }
        return Setting(
            key: key, environment: environment, help: help, allowed: rangeText,
            defaultText: { root in defaultText ?? "\(root[keyPath: path])" },
            read: { value, root, name in
                guard let n = value as? NSNumber, !isBoolean(n) else { return "\(name) must be a whole number" }
                switch parse(n.doubleValue, text: n.stringValue, name: name) {
                case .success(let v): root[keyPath: path] = v; return nil
                case .failure(let problem): return problem.text
                }
            },
            readEnvironment: environment.map { variable in
                { text, root, key in
                    guard let double = Double(text), Int64(text) != nil || text.allSatisfy(\.isNumber) else {
                        return "\(variable) must be a whole number, got '\(text)'"
                    }
                    switch parse(double, text: text, name: "\(variable) (\(key))") {
                    case .success(let v): root[keyPath: path] = v; return nil
                    case .failure(let problem): return problem.text
                    }
                }
            },
            check: { root, name in range.contains(root[keyPath: path]) ? nil : outOfRange(name, "\(root[keyPath: path])") },
            number: NumberAccess(minimum: Double(range.lowerBound), maximum: Double(range.upperBound),
                                 get: { Double($0[keyPath: path]) }, set: { $0[keyPath: path] = T($1) }))
    }

    /// A number from `minimum` up to but not including `below`.
    public static func fraction(_ key: String, _ path: WritableKeyPath<Root, Double>, from minimum: Double, below: Double, _ help: String) -> Setting {
        func plain(_ v: Double) -> String { v == v.rounded() && abs(v) < 1e15 ? "\(Int64(v))" : "\(v)" }
        let rangeText = "\(plain(minimum)) to below \(plain(below))"
        let fits = { (v: Double) in v >= minimum && v < below }
        return Setting(
            key: key, environment: nil, help: help, allowed: rangeText,
            defaultText: { "\($0[keyPath: path])" },
            read: { value, root, name in
                guard let n = value as? NSNumber, !isBoolean(n) else { return "\(name) must be a number" }
                guard fits(n.doubleValue) else { return "\(name) must be \(rangeText), got \(n.stringValue)" }
                root[keyPath: path] = n.doubleValue
                return nil
            },
            readEnvironment: nil,
            check: { root, name in fits(root[keyPath: path]) ? nil : "\(name) must be \(rangeText), got \(root[keyPath: path])" },
            number: nil)
    }

    /// Text. `emptyFromEnvironment`: a set but empty variable applies (metrics.listen: off); else it is ignored.
    public static func text(_ key: String, _ path: WritableKeyPath<Root, String>, environment: String? = nil, emptyFromEnvironment: Bool = false,
                     default defaultText: String? = nil, _ help: String) -> Setting {
        Setting(
            key: key, environment: environment, help: help, allowed: "",
            defaultText: { root in defaultText ?? (root[keyPath: path].isEmpty ? "none" : "`\(root[keyPath: path])`") },
            read: { value, root, name in
                guard let s = value as? String else { return "\(name) must be a string" }
                root[keyPath: path] = s
                return nil
            },
            readEnvironment: environment.map { _ in
                { text, root, _ in
                    if !text.isEmpty || emptyFromEnvironment { root[keyPath: path] = text }
                    return nil
                }
            },
            check: { _, _ in nil }, number: nil)
    }

    /// Text that may be absent (JSON null clears it).
    public static func optionalText(_ key: String, _ path: WritableKeyPath<Root, String?>, environment: String? = nil,
                             default defaultText: String? = nil, _ help: String) -> Setting {
        Setting(
            key: key, environment: environment, help: help, allowed: "",
            defaultText: { root in defaultText ?? root[keyPath: path].map { "`\($0)`" } ?? "none" },
            read: { value, root, name in
                if value is NSNull { root[keyPath: path] = nil; return nil }
                guard let s = value as? String else { return "\(name) must be a string" }
                root[keyPath: path] = s
                return nil
            },
            readEnvironment: environment.map { _ in
                { text, root, _ in
                    if !text.isEmpty { root[keyPath: path] = text }
                    return nil
                }
            },
            check: { _, _ in nil }, number: nil)
    }

    /// A list of strings; from the environment, comma-separated.
    public static func list(_ key: String, _ path: WritableKeyPath<Root, [String]>, environment: String? = nil,
                     default defaultText: String? = nil, _ help: String) -> Setting {
        Setting(
            key: key, environment: environment, help: help, allowed: "",
            defaultText: { root in defaultText ?? (root[keyPath: path].isEmpty ? "none" : "`\(root[keyPath: path])`") },
            read: { value, root, name in
                guard let list = value as? [String] else { return "\(name) must be a list of strings" }
                root[keyPath: path] = list
                return nil
            },
            readEnvironment: environment.map { _ in
                { text, root, _ in
                    guard !text.isEmpty else { return nil }
                    root[keyPath: path] = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                    return nil
                }
            },
            check: { _, _ in nil }, number: nil)
    }

    public static func flag(_ key: String, _ path: WritableKeyPath<Root, Bool>, _ help: String) -> Setting {
        Setting(
            key: key, environment: nil, help: help, allowed: "`true`, `false`",
            defaultText: { "`\($0[keyPath: path])`" },
            read: { value, root, name in
                guard let n = value as? NSNumber, isBoolean(n) else { return "\(name) must be true or false" }
                root[keyPath: path] = n.boolValue
                return nil
            },
            readEnvironment: nil, check: { _, _ in nil }, number: nil)
    }

    /// One of `choices` (their raw values, in the order the message and docs list them).
    public static func choice<T: RawRepresentable<String>>(_ key: String, _ path: WritableKeyPath<Root, T>, _ choices: [T], _ help: String) -> Setting {
        let listed = choices.map { "\"\($0.rawValue)\"" }.joinedAsList("or")
        return Setting(
            key: key, environment: nil, help: help, allowed: choices.map { "`\($0.rawValue)`" }.joined(separator: ", "),
            defaultText: { "`\($0[keyPath: path].rawValue)`" },
            read: { value, root, name in
                guard let text = value as? String, let parsed = T(rawValue: text) else { return "\(name) must be \(listed)" }
                root[keyPath: path] = parsed
                return nil
            },
            readEnvironment: nil, check: { _, _ in nil }, number: nil)
    }

    /// A value with its own structure (a map, a list of objects): `read` gets the JSON value and reports its
    /// problems itself; `check` checks the loaded value.
    public static func custom(_ key: String, default defaultText: String, allowed: String = "", _ help: String,
                       read: @escaping (Any, inout Root, _ name: String, _ problems: inout [String]) -> Void,
                       check: @escaping (Root) -> [String] = { _ in [] }) -> Setting {
        Setting(
            key: key, environment: nil, help: help, allowed: allowed, defaultText: { _ in defaultText },
            read: { value, root, name in
                var problems: [String] = []
                read(value, &root, name, &problems)
                return problems.isEmpty ? nil : problems.joined(separator: "\n")
            },
            readEnvironment: nil,
            check: { root, _ in let problems = check(root); return problems.isEmpty ? nil : problems.joined(separator: "\n") },
            number: nil)
    }
}

private struct SettingProblem: Error {
    let text: String
    init(_ text: String) { self.text = text }
}

/// JSONSerialization hands booleans back as NSNumber; their Objective-C type code is "c".
public func isBoolean(_ n: NSNumber) -> Bool { String(cString: n.objCType) == "c" }

extension Setting {
    /// The help's first sentence (up to a full stop before a capital, so "e.g. the" does not end it), for
    /// one-line listings (`worker --help`).
    public var summary: String {
        var search = help.startIndex..<help.endIndex
        while let stop = help.range(of: ". ", range: search) {
            if let next = help[stop.upperBound...].first, next.isUppercase { return String(help[..<stop.lowerBound]) + "." }
            search = stop.upperBound..<help.endIndex
        }
        return help
    }
}

import Basics
import Foundation
import Settings

/// A fault rule as a fault file gives it: its keys declared as `Setting`s, read into a blank rule (`fate`, which
/// every rule must give, is then set from the file).
public protocol DeclaredFaultRule: Encodable, Sendable, Equatable {
    /// The rule before its object is read.
    static var blank: Self { get }
    /// Its keys (one of them `fate`).
    static var declared: [Setting<Self>] { get }
}

/// The fault files' values (`--config`, `POST /_mock/config`). Most are optional, as a script leaves out what it
/// does not use, and JSON null is the same as leaving them out. Their bounds are the script's checks
/// (`FaultVocabulary.check`), which name the key the same way.
extension Setting {
    /// A whole number of `T` (any in its range; the checks bound it).
    static func whole<T: FixedWidthInteger>(_ key: String, _ path: WritableKeyPath<Root, T?>, _ help: String) -> Setting {
        field(key, help, parse: wholeNumber) { $0[keyPath: path] = $1 }
    }

    /// A whole number that may not be left out or null (inside an object that is given).
    static func whole<T: FixedWidthInteger>(_ key: String, _ path: WritableKeyPath<Root, T>, _ help: String) -> Setting {
        field(key, help, nullable: false, parse: wholeNumber) { root, value in value.map { root[keyPath: path] = $0 } }
    }

    /// A number (a fraction allowed).
    static func number(_ key: String, _ path: WritableKeyPath<Root, Double?>, _ help: String) -> Setting {
        field(key, help, parse: anyNumber) { $0[keyPath: path] = $1 }
    }

    /// A number that may not be left out or null.
    static func number(_ key: String, _ path: WritableKeyPath<Root, Double>, _ help: String) -> Setting {
        field(key, help, nullable: false, parse: anyNumber) { root, value in value.map { root[keyPath: path] = $0 } }
    }

    /// true or false.
    static func yesNo(_ key: String, _ path: WritableKeyPath<Root, Bool?>, _ help: String) -> Setting {
        field(key, help, parse: { value, name in
            guard let n = value as? NSNumber, isBoolean(n) else { return .failure("\(name) must be true or false") }
            return .success(n.boolValue)
        }) { $0[keyPath: path] = $1 }
    }

    /// A list of strings.
    static func strings(_ key: String, _ path: WritableKeyPath<Root, [String]?>, _ help: String) -> Setting {
        field(key, help, parse: { value, name in
            guard let list = value as? [String] else { return .failure("\(name) must be a list of strings") }
            return .success(list)
        }) { $0[keyPath: path] = $1 }
    }

    /// A latency in milliseconds: a number (`20`) or a range (`[5, 50]`).
    static func latency(_ key: String, _ path: WritableKeyPath<Root, MockLatency?>, _ help: String) -> Setting {
        field(key, help, parse: { value, name in
            func whole(_ value: Any) -> Int? { (value as? NSNumber).flatMap { isBoolean($0) ? nil : Int(exactly: $0.doubleValue) } }
            if let fixed = whole(value) { return .success(MockLatency(milliseconds: fixed)) }
            if let pair = value as? [Any], pair.count == 2, let low = whole(pair[0]), let high = whole(pair[1]) {
                return .success(MockLatency(min: low, max: high))
            }
            return .failure("\(name) must be a whole number of milliseconds or [min, max]")
        }) { $0[keyPath: path] = $1 }
    }

    /// An object of its own declared keys (`appQuota`), read into `blank` first; `required` of them must be given.
    static func object<Value>(_ key: String, _ path: WritableKeyPath<Root, Value?>, blank: Value, required: [String],
                              _ declared: [Setting<Value>], _ help: String) -> Setting {
        .custom(key, default: "none", help) { value, root, name, problems in
            if value is NSNull { root[keyPath: path] = nil; return }
            guard let object = value as? [String: Any] else { problems.append("\(name) must be an object"); return }
            var read = blank
            var found = required.filter { object[$0] == nil }.map { "\(name).\($0) is required" }
            found += SettingsReader.apply(declared, object: object, to: &read, at: name + ".")
            if found.isEmpty { root[keyPath: path] = read } else { problems += found }
        }
    }

    /// A list of rules, each an object of the rule's declared keys; `fate` is required.
    static func rules<Rule: DeclaredFaultRule>(_ key: String, _ path: WritableKeyPath<Root, [Rule]>, _ help: String) -> Setting {
        .custom(key, default: "none", help) { value, root, name, problems in
            guard let list = value as? [Any] else { problems.append("\(name) must be a list of objects"); return }
            var rules: [Rule] = []
            for (index, element) in list.enumerated() {
                let place = "\(name)[\(index)]"
                guard let object = element as? [String: Any] else { problems.append("\(place) must be an object"); continue }
                var rule = Rule.blank
                if object["fate"] == nil { problems.append("\(place).fate is required") }
                problems += SettingsReader.apply(Rule.declared, object: object, to: &rule, at: place + ".")
                rules.append(rule)
            }
            root[keyPath: path] = rules
        }
    }

    /// A value read by `parse` and stored by `set` (nil: JSON null, where `nullable`).
    private static func field<Value>(_ key: String, _ help: String, nullable: Bool = true,
                                     parse: @escaping (Any, String) -> Result<Value, FaultValueProblem>,
                                     set: @escaping (inout Root, Value?) -> Void) -> Setting {
        .custom(key, default: "none", help) { value, root, name, problems in
            if value is NSNull && nullable { set(&root, nil); return }
            switch parse(value, name) {
            case .success(let parsed): set(&root, parsed)
            case .failure(let problem): problems.append(problem.text)
            }
        }
    }

    private static func wholeNumber<T: FixedWidthInteger>(_ value: Any, _ name: String) -> Result<T, FaultValueProblem> {
        guard let n = value as? NSNumber, !isBoolean(n), n.doubleValue == n.doubleValue.rounded() else {
            return .failure("\(name) must be a whole number")
        }
        guard let whole = T(n.stringValue) ?? T(exactly: n.doubleValue) else {
            return .failure("\(name) must be a whole number from \(T.min) to \(T.max), got \(n.stringValue)")
        }
        return .success(whole)
    }

    private static func anyNumber(_ value: Any, _ name: String) -> Result<Double, FaultValueProblem> {
        guard let n = value as? NSNumber, !isBoolean(n) else { return .failure("\(name) must be a number") }
        return .success(n.doubleValue)
    }
}

/// A fault file's value that does not read, in words naming its key.
private struct FaultValueProblem: Error, ExpressibleByStringInterpolation {
    let text: String
    init(stringLiteral text: String) { self.text = text }
}

/// The arguments of one command invocation, parsed against its `CommandSpec`. Accessors take declared names
/// only (a typo in a name is a programming error and traps), so an option cannot be read that `--help` omits.
public struct ParsedArguments: Sendable {
    public private(set) var positionals: [String] = []
    /// `--help` or `-h` was given: the caller prints the help instead of running.
    public private(set) var helpRequested = false
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []
    private let declared: [String: OptionSpec]

    init(declared: [String: OptionSpec]) { self.declared = declared }

    /// Parses `--name value`, `--name=value`, `--flag`, positionals and `--` (the rest are positionals).
    /// Unknown options, stray arguments, missing values and repeats of a non-repeatable option are usage
    /// errors. A value may not start with `--` unless written `--name=--value`: a forgotten value must not
    /// swallow the next option. `--help` anywhere (before `--`) wins over every error.
    public static func parse(_ arguments: [String], spec: CommandSpec) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments(declared: Dictionary(spec.options.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a }))
        do {
            try parsed.consume(arguments, acceptsPositionals: !spec.positionals.isEmpty)
        } catch {
            let options = arguments.prefix { $0 != "--" }
            guard options.contains("--help") || options.contains("-h") else { throw error }
            parsed.helpRequested = true
        }
        return parsed
    }

    private mutating func consume(_ arguments: [String], acceptsPositionals: Bool) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                guard acceptsPositionals || index == arguments.count else {
                    throw UsageError("unexpected argument '\(arguments[index])'")
                }
                positionals += arguments[index...]
                return
            }
            if argument == "--help" || argument == "-h" {
                helpRequested = true
                continue
            }
            guard argument.hasPrefix("--"), argument.count > 2 else {
                if argument.hasPrefix("-") && argument != "-" { throw UsageError("unknown option '\(argument)'") }
                guard acceptsPositionals else { throw UsageError("unexpected argument '\(argument)'") }
                positionals.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String? = nil
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = declared[name] else {
                let close = Suggestion.closest(to: name, among: declared.keys.sorted()).map { "; did you mean '--\($0)'?" } ?? ""
                throw UsageError("unknown option '--\(name)'" + close)
            }
            guard let valueName = option.valueName else {
                if inlineValue != nil { throw UsageError("--\(name) takes no value") }
                flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.count, !(arguments[index].hasPrefix("--") && arguments[index].count > 2) else {
                    throw UsageError("--\(name) needs a value (<\(valueName)>)")
                }
                value = arguments[index]
                index += 1
            }
            if !option.repeatable && values[name] != nil { throw UsageError("--\(name) given more than once") }
            values[name, default: []].append(value)
        }
    }

    private func checked(_ name: String) -> String {
        precondition(declared[name] != nil, "--\(name) is not a declared option")
        return name
    }

    /// The value of `--name`, nil when absent.
    public func value(_ name: String) -> String? { values[checked(name)]?.last }
    /// Every value of a repeatable `--name`, in order.
    public func all(_ name: String) -> [String] { values[checked(name)] ?? [] }
    public func flag(_ name: String) -> Bool { flags.contains(checked(name)) }

    public func required(_ name: String) throws(UsageError) -> String {
        guard let value = value(name) else { throw UsageError("missing --\(name)") }
        return value
    }

    /// A whole number of type `T`, optionally limited to `range`; nil when absent.
    public func integer<T: FixedWidthInteger>(_ name: String, as type: T.Type, in range: ClosedRange<T>? = nil) throws(UsageError) -> T? {
        guard let raw = value(name) else { return nil }
        guard let number = T(raw) else { throw UsageError("--\(name) expects a whole number, got '\(raw)'") }
        if let range, !range.contains(number) { throw UsageError("--\(name) must be in \(range.lowerBound)...\(range.upperBound), got \(number)") }
        return number
    }

    public func int(_ name: String) throws(UsageError) -> Int? { try integer(name, as: Int.self) }

    /// A number, optionally at least `minimum`; nil when absent.
    public func double(_ name: String, minimum: Double? = nil) throws(UsageError) -> Double? {
        guard let raw = value(name) else { return nil }
        guard let number = Double(raw), number.isFinite else { throw UsageError("--\(name) expects a number, got '\(raw)'") }
        if let minimum, number < minimum { throw UsageError("--\(name) must be at least \(minimum), got \(raw)") }
        return number
    }

    /// A comma-separated list (blanks dropped); nil when absent.
    public func list(_ name: String) -> [String]? {
        value(name).map { text in
            text.split(separator: ",").map { String($0).trimmingSpaces() }.filter { !$0.isEmpty }
        }
    }

    /// One of `choices` (by raw value); nil when absent.
    public func choice<T: RawRepresentable>(_ name: String, _ choices: [T]) throws(UsageError) -> T? where T.RawValue == String {
        guard let raw = value(name) else { return nil }
        guard let chosen = T(rawValue: raw), choices.contains(where: { $0.rawValue == raw }) else {
            throw UsageError("--\(name) must be \(choices.map(\.rawValue).joined(separator: ", ")), got '\(raw)'")
        }
        return chosen
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { $0 != " " && $0 != "\t" }),
              let last = scalars.lastIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        return String(scalars[first...last])
    }
}

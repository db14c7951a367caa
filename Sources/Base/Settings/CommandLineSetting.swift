import Basics

/// How a setting is given on a command line: `--key <valueName>`, or a bare `--key` switch. One declaration then
/// makes the command's option, its `--help` line, its docs row and its parsing. The readers go through
/// `ParsedArguments`' typed accessors, so a bad value gets the usage error every herald command gives.
///
/// @unchecked: `read` touches only the root it is handed and captures nothing mutable.
public struct CommandLineForm<Root>: @unchecked Sendable {
    /// What `<...>` the flag takes; nil: a switch.
    public let valueName: String?
    /// May be given more than once (`read` sees every value).
    public let repeatable: Bool
    /// Sets the root from the flag's value(s); leaves it alone when the flag is absent.
    public let read: (ParsedArguments, inout Root) throws(UsageError) -> Void

    public init(valueName: String?, repeatable: Bool = false, read: @escaping (ParsedArguments, inout Root) throws(UsageError) -> Void) {
        self.valueName = valueName
        self.repeatable = repeatable
        self.read = read
    }
}

extension Setting {
    /// A command-line flag with its own reader (`--mint [prefix:]n`, `--app id:secret`): the other kinds below
    /// are this with a typed reader. It has no JSON form.
    public static func commandLine(_ key: String, _ valueName: String?, repeatable: Bool = false, allowed: String = "",
                                   default defaultText: String = "none", _ help: String,
                                   read: @escaping (ParsedArguments, inout Root) throws(UsageError) -> Void) -> Setting {
        Setting(
            key: key, environment: nil, help: help, allowed: allowed, defaultText: { _ in defaultText },
            read: { _, _, name in "\(name) is a command-line flag" }, readEnvironment: nil, check: { _, _ in nil }, number: nil,
            commandLine: CommandLineForm(valueName: valueName, repeatable: repeatable, read: read))
    }

    /// `--key`: sets the field to true when given.
    public static func option(_ key: String, _ path: WritableKeyPath<Root, Bool>, _ help: String) -> Setting {
        commandLine(key, nil, allowed: "`true`, `false`", default: "`false`", help) { args, root throws(UsageError) in
            if args.flag(key) { root[keyPath: path] = true }
        }
    }

    /// `--key <text>`, over a default.
    public static func option(_ key: String, _ path: WritableKeyPath<Root, String>, _ valueName: String, _ help: String) -> Setting {
        commandLine(key, valueName, help) { args, root throws(UsageError) in
            if let value = args.value(key) { root[keyPath: path] = value }
        }
    }

    /// `--key <text>`, absent by default; `transform` makes the field's value from the text (an absolute path).
    public static func option(_ key: String, _ path: WritableKeyPath<Root, String?>, _ valueName: String,
                              as transform: @escaping @Sendable (String) -> String = { $0 }, _ help: String) -> Setting {
        commandLine(key, valueName, help) { args, root throws(UsageError) in
            if let value = args.value(key) { root[keyPath: path] = transform(value) }
        }
    }

    /// `--key <n>`: a whole number, within `range` when given.
    public static func option<T: FixedWidthInteger & Sendable>(_ key: String, _ path: WritableKeyPath<Root, T>, _ valueName: String,
                                                               in range: ClosedRange<T>? = nil, _ help: String) -> Setting {
        commandLine(key, valueName, allowed: range.map { "\($0.lowerBound)...\($0.upperBound)" } ?? "", help) { args, root throws(UsageError) in
            if let value = try args.integer(key, as: T.self, in: range) { root[keyPath: path] = value }
        }
    }

    /// `--key <n>`: a whole number, absent by default.
    public static func option<T: FixedWidthInteger & Sendable>(_ key: String, _ path: WritableKeyPath<Root, T?>, _ valueName: String,
                                                               in range: ClosedRange<T>? = nil, _ help: String) -> Setting {
        commandLine(key, valueName, allowed: range.map { "\($0.lowerBound)...\($0.upperBound)" } ?? "", help) { args, root throws(UsageError) in
            if let value = try args.integer(key, as: T.self, in: range) { root[keyPath: path] = value }
        }
    }

    /// `--key <x>`: a number, at least `minimum`, absent by default.
    public static func option(_ key: String, _ path: WritableKeyPath<Root, Double?>, _ valueName: String, minimum: Double? = nil,
                              _ help: String) -> Setting {
        commandLine(key, valueName, allowed: minimum.map { "\($0) or more" } ?? "", help) { args, root throws(UsageError) in
            if let value = try args.double(key, minimum: minimum) { root[keyPath: path] = value }
        }
    }

    /// `--key <choice>`: one of `choices` by raw value.
    public static func option<T: RawRepresentable<String>>(_ key: String, _ path: WritableKeyPath<Root, T>, _ valueName: String,
                                                           _ choices: [T], _ help: String) -> Setting {
        commandLine(key, valueName, allowed: choices.map { "`\($0.rawValue)`" }.joined(separator: ", "), help) { args, root throws(UsageError) in
            if let value = try args.choice(key, choices) { root[keyPath: path] = value }
        }
    }

    /// `--key <a,b>`: a comma-separated list (blanks dropped), absent by default.
    public static func commaList(_ key: String, _ path: WritableKeyPath<Root, [String]?>, _ valueName: String, _ help: String) -> Setting {
        commandLine(key, valueName, help) { args, root throws(UsageError) in
            if let list = args.list(key) { root[keyPath: path] = list }
        }
    }

    /// `--key <a,b>`: a comma-separated list (blanks dropped), over a default.
    public static func commaList(_ key: String, _ path: WritableKeyPath<Root, [String]>, _ valueName: String, _ help: String) -> Setting {
        commandLine(key, valueName, help) { args, root throws(UsageError) in
            if let list = args.list(key) { root[keyPath: path] = list }
        }
    }

    /// `--key <value>`, repeatable: every value, in order.
    public static func repeated(_ key: String, _ path: WritableKeyPath<Root, [String]>, _ valueName: String,
                                as transform: @escaping @Sendable (String) -> String = { $0 }, _ help: String) -> Setting {
        commandLine(key, valueName, repeatable: true, help) { args, root throws(UsageError) in
            let values = args.all(key)
            if !values.isEmpty { root[keyPath: path] = values.map(transform) }
        }
    }
}

extension SettingsReader {
    /// The command's options, in declaration order (settings without a command-line form are left out).
    public static func options<Root>(_ settings: [Setting<Root>]) -> [OptionSpec] {
        settings.compactMap { setting in
            setting.commandLine.map { form in
                form.valueName.map { .value(setting.key, $0, setting.help, repeatable: form.repeatable) } ?? .flag(setting.key, setting.help)
            }
        }
    }

    /// Sets `root` from the parsed command line, flag by flag in declaration order; the first bad value throws.
    public static func apply<Root>(_ settings: [Setting<Root>], arguments: ParsedArguments, to root: inout Root) throws(UsageError) {
        for setting in settings { try setting.commandLine?.read(arguments, &root) }
    }
}

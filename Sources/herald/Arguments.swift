import Foundation

/// Exit codes from sysexits(3), as swift-argument-parser uses them.
enum ExitCode {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 64
    static let dataError: Int32 = 65
    static let unavailable: Int32 = 69
    static let configuration: Int32 = 78
}

/// A command-line mistake: printed with the command's help, exit 64.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}

/// One `--name value` option, or a `--name` flag when `valueName` is nil.
struct OptionSpec: Sendable {
    let name: String
    let valueName: String?
    let help: String
    var repeatable = false

    static func flag(_ name: String, _ help: String) -> OptionSpec { OptionSpec(name: name, valueName: nil, help: help) }
    static func value(_ name: String, _ valueName: String, _ help: String, repeatable: Bool = false) -> OptionSpec {
        OptionSpec(name: name, valueName: valueName, help: help, repeatable: repeatable)
    }
}

/// A subcommand of `herald`: its help text, its options and what it runs.
struct CommandSpec: Sendable {
    let name: String
    let abstract: String
    var discussion: String = ""
    var positionals: String = ""
    var options: [OptionSpec]
    /// Commands that parse their own arguments (mock-apns) set this and get the raw arguments.
    var passThrough: (@Sendable ([String]) -> Int32)? = nil
    var run: @Sendable (ParsedArguments) throws -> Int32 = { _ in ExitCode.success }

    var help: String {
        var text = "OVERVIEW: \(abstract)\n\nUSAGE: herald \(name)"
        if !options.isEmpty { text += " [options]" }
        if !positionals.isEmpty { text += " \(positionals)" }
        text += "\n"
        if !discussion.isEmpty { text += "\n\(discussion)\n" }
        if !options.isEmpty {
            text += "\nOPTIONS:\n"
            for option in options + [.flag("help", "Show this help.")] {
                var left = "  --\(option.name)"
                if let valueName = option.valueName { left += " <\(valueName)>" }
                let pad = max(2, 34 - left.count)
                text += left + String(repeating: " ", count: pad) + option.help + "\n"
            }
        }
        return text
    }
}

/// The parsed options of one command invocation.
struct ParsedArguments {
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func flag(_ name: String) -> Bool { flags.contains(name) }

    func int(_ name: String) throws -> Int? {
        guard let raw = value(name) else { return nil }
        guard let number = Int(raw) else { throw UsageError("--\(name) expects a whole number, got '\(raw)'") }
        return number
    }

    func double(_ name: String) throws -> Double? {
        guard let raw = value(name) else { return nil }
        guard let number = Double(raw) else { throw UsageError("--\(name) expects a number, got '\(raw)'") }
        return number
    }

    func required(_ name: String) throws -> String {
        guard let v = value(name) else { throw UsageError("missing --\(name)") }
        return v
    }

    static func parse(_ arguments: [String], spec: CommandSpec) throws -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        let byName = Dictionary(spec.options.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                parsed.positionals += arguments[index...]
                break
            }
            guard argument.hasPrefix("--"), argument.count > 2 else {
                if argument.hasPrefix("-") && argument != "-" {
                    throw UsageError("unknown option '\(argument)'")
                }
                if spec.positionals.isEmpty { throw UsageError("unexpected argument '\(argument)'") }
                parsed.positionals.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String? = nil
            if let eq = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard let option = byName[name] else { throw UsageError("unknown option '--\(name)'") }
            if option.valueName == nil {
                if inlineValue != nil { throw UsageError("--\(name) takes no value") }
                parsed.flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.count else { throw UsageError("--\(name) needs a value (<\(option.valueName!)>)") }
                value = arguments[index]
                index += 1
            }
            if !option.repeatable && parsed.values[name] != nil {
                throw UsageError("--\(name) given twice")
            }
            parsed.values[name, default: []].append(value)
        }
        return parsed
    }
}

/// Writes to stderr without buffering, for usage errors and human messages.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message.hasSuffix("\n") ? message : message + "\n").utf8))
}

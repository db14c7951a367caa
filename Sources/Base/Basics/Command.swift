#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A command: what it accepts and what it runs. `run` returns the exit status; a `UsageError` it throws is
/// reported like a parse error (message and help, exit 64), anything else through the group's `failure`.
public struct Command: Sendable {
    public let spec: CommandSpec
    public let run: @Sendable (ParsedArguments) throws -> Int32

    public init(_ spec: CommandSpec, run: @escaping @Sendable (ParsedArguments) throws -> Int32) {
        self.spec = spec
        self.run = run
    }

    /// Parses and runs: `--help` prints the help on stdout (exit 0); usage errors print the message and the
    /// help on stderr (exit 64); other errors print `failure`'s message and return its status.
    public func main(_ arguments: [String], failure: (any Error) -> (message: String, status: Int32) = Command.plainFailure) -> Int32 {
        do {
            let parsed = try ParsedArguments.parse(arguments, spec: spec)
            if parsed.helpRequested {
                print(spec.help, terminator: "")
                return ExitCode.success
            }
            return try run(parsed)
        } catch let error as UsageError {
            printError("\(spec.usageName): \(error.description)\n\n" + spec.help)
            return ExitCode.usage
        } catch {
            let (message, status) = failure(error)
            printError("\(spec.usageName): \(message)")
            return status
        }
    }

    /// Any error: its description, exit 1.
    public static func plainFailure(_ error: any Error) -> (message: String, status: Int32) { ("\(error)", ExitCode.failure) }
}

/// An executable made of subcommands (`herald <command>`, `herald-bench <command>`) with a generated overview.
public struct CommandGroup: Sendable {
    public let program: String
    public let abstract: String
    public let commands: [Command]
    /// Printed by `--version`; nil when the program has none.
    public let version: String?
    public let failure: @Sendable (any Error) -> (message: String, status: Int32)

    public init(program: String, abstract: String, commands: [Command], version: String? = nil,
                failure: @escaping @Sendable (any Error) -> (message: String, status: Int32) = Command.plainFailure) {
        self.program = program
        self.abstract = abstract
        self.commands = commands
        self.version = version
        self.failure = failure
    }

    public var help: String {
        var text = "OVERVIEW: \(abstract)\n\nUSAGE: \(program) <command> [options]\n\nCOMMANDS:\n"
        let column = max(12, commands.map(\.spec.name.count).max() ?? 0) + 2
        for command in commands {
            let name = command.spec.name
            text += "  " + name + String(repeating: " ", count: column - name.count) + command.spec.abstract + "\n"
        }
        text += "\nOPTIONS:\n"
        if version != nil { text += HelpLayout.row("--version", "Print the version and exit.") }
        text += HelpLayout.row("--help", "Show this help.")
        text += "\nSee '\(program) <command> --help' for a command's options.\n"
        return text
    }

    /// Dispatches `arguments` (without the program name) to a command and returns the exit status.
    public func main(_ arguments: [String]) -> Int32 {
        guard let first = arguments.first else {
            printError(help)
            return ExitCode.usage
        }
        if first == "--help" || first == "-h" || first == "help" {
            if arguments.count > 1, let command = commands.first(where: { $0.spec.name == arguments[1] }) {
                print(command.spec.help, terminator: "")
            } else {
                print(help, terminator: "")
            }
            return ExitCode.success
        }
        if first == "--version", let version {
            print(version)
            return ExitCode.success
        }
        guard let command = commands.first(where: { $0.spec.name == first }) else {
            let unknown = Suggestion.text("\(program): unknown command '\(first)'", word: first, among: commands.map(\.spec.name))
            printError(unknown + "\n\n" + help)
            return ExitCode.usage
        }
        return command.main(Array(arguments.dropFirst()), failure: failure)
    }
}

/// Writes to stderr (unbuffered), adding a final newline when missing.
public func printError(_ message: String) {
    var bytes = Array((message.hasSuffix("\n") ? message : message + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress! + offset, $0.count - offset) }
        if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
    }
}

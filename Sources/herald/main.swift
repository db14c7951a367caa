import CLinux
import Foundation
import Worker

/// `herald <command>`: the command tree. Usage errors exit 64, configuration errors 78.
let commands: [CommandSpec] = [
    WorkerCommand.spec,
    SchedulerCommand.spec,
    EnqueueCommand.spec,
    SendCommand.spec,
    TailCommand.spec,
    StatsCommand.spec,
    MockAPNsCLI.spec,
    CheckConfigCommand.spec,
    DemoCommand.spec,
]

func topLevelHelp() -> String {
    var text = """
    OVERVIEW: Herald delivers push notifications from a Redis queue to APNs.

    USAGE: herald <command> [options]

    COMMANDS:

    """
    for command in commands {
        text += "  " + command.name.padding(toLength: 14, withPad: " ", startingAt: 0) + command.abstract + "\n"
    }
    text += "\nSee 'herald <command> --help' for a command's options.\n"
    return text
}

func runMain() -> Int32 {
    let arguments = Array(CommandLine.arguments.dropFirst())
    guard let first = arguments.first else {
        printError(topLevelHelp())
        return ExitCode.usage
    }
    if first == "--help" || first == "-h" || first == "help" {
        if arguments.count > 1, let command = commands.first(where: { $0.name == arguments[1] }) {
            print(command.help, terminator: "")
        } else {
            print(topLevelHelp(), terminator: "")
        }
        return ExitCode.success
    }
    if first == "--version" {
        print(heraldVersion)
        return ExitCode.success
    }
    guard let command = commands.first(where: { $0.name == first }) else {
        printError("herald: unknown command '\(first)'\n\n" + topLevelHelp())
        return ExitCode.usage
    }
    let rest = Array(arguments.dropFirst())
    if let passThrough = command.passThrough { return passThrough(rest) }
    if rest.contains("--help") || rest.contains("-h") {
        print(command.help, terminator: "")
        return ExitCode.success
    }
    do {
        let parsed = try ParsedArguments.parse(rest, spec: command)
        return try command.run(parsed)
    } catch let error as UsageError {
        printError("herald \(command.name): \(error.description)\n\n" + command.help)
        return ExitCode.usage
    } catch let error as ConfigurationError {
        printError("herald \(command.name): configuration problems:\n" + error.problems.map { "  - \($0)" }.joined(separator: "\n"))
        return ExitCode.configuration
    } catch {
        printError("herald \(command.name): \(error)")
        return ExitCode.failure
    }
}

let heraldVersion = "herald 0.1.0"
clinux_line_buffer_stdout()
signal(SIGPIPE, SIG_IGN)
// A parent (a test runner's thread, a supervisor) may have left signals blocked; SIGTERM must reach us.
var unblocked = sigset_t()
sigemptyset(&unblocked)
sigprocmask(SIG_SETMASK, &unblocked, nil)
exit(runMain())

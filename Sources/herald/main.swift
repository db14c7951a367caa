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
// A known signal mask whatever the parent left (a test runner's thread, a supervisor): SIGTERM, SIGINT and
// SIGHUP blocked in every thread, everything else unblocked. The commands take those three through
// DispatchSource, which on Linux reads a signalfd: a signal only reaches it while blocked everywhere. With
// them unblocked, libdispatch's fallback handler catches the first one but a second SIGTERM is lost (the
// "second signal exits at once" rule then fails). This runs before any thread exists, so all inherit it;
// children we spawn get these unblocked again (`spawnWithDefaultSignals`).
var handledSignals = sigset_t()
sigemptyset(&handledSignals)
for sig in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&handledSignals, sig) }
sigprocmask(SIG_SETMASK, &handledSignals, nil)
exit(runMain())

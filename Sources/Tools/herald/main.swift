import Basics
import CLinux
import Foundation
import Simulators
import PushCore
import RedisQueue
import TLS
import Worker

// Before anything can touch OpenSSL (see its comment).
keepOpenSSLUntilExit()

/// `herald 0.1.0 (commit 1a2b3c4d5e6f, built 2026-12-01T20:00:00Z)`: the version first, which scripts/package reads.
let heraldVersion = "herald \(BuildInfo.version) (\(BuildInfo.stamp))"

/// `herald <command>`: the command tree. Usage errors exit 64, configuration errors 78.
let herald = CommandGroup(
    program: "herald",
    abstract: "Herald delivers push notifications from a Redis queue to " + Platform.allCases.map(\.displayName).joinedAsList("and") + ".",
    commands: [
        WorkerCommand.command,
        SchedulerCommand.command,
        EnqueueCommand.command,
        ApiCommand.command,
        SendCommand.command,
        ChannelsCommand.command,
        TailCommand.command,
        StatsCommand.command,
        ReplayCommand.command,
        DeadCommand.command,
        DevicesCommand.command,
        CampaignsCommand.command,
        ScheduledCommand.command,
        QueueCommand.command,
        ForwardCommand.command,
        MockAPNsCommand.command,
        MockFCMCommand.command,
        MockWebPushCommand.command,
        MockHMSCommand.command,
        MockHarmonyCommand.command,
        MockExpoCommand.command,
        CheckConfigCommand.command,
        DemoCommand.command,
        DashboardCommand.command,
    ],
    version: heraldVersion,
    failure: { error in
        if let error = error as? ConfigurationError {
            return ("configuration problems:\n" + error.problems.map { "  - \($0)" }.joined(separator: "\n"), ExitCode.configuration)
        }
        // Redis out of reach is a service unavailable (69), as the worker's documented codes have it, not a failure.
        if let error = error as? RedisError, error.isUnreachable { return ("\(error)", ExitCode.unavailable) }
        return ("\(error)", ExitCode.failure)
    })

clinux_line_buffer_stdout()
signal(SIGPIPE, SIG_IGN)
// A known signal mask whatever the parent left (a test runner's thread, a supervisor): SIGTERM, SIGINT and
// SIGHUP blocked in every thread, everything else unblocked (`herald worker` reloads on SIGHUP; the other
// commands never read it, so it changes nothing). The commands take those three through
// DispatchSource, which on Linux reads a signalfd: a signal only reaches it while blocked everywhere. With
// them unblocked, libdispatch's fallback handler catches the first one but a second SIGTERM is lost (the
// "second signal exits at once" rule then fails). This runs before any thread exists, so all inherit it;
// children we spawn get these unblocked again (`spawnWithDefaultSignals`).
var handledSignals = sigset_t()
sigemptyset(&handledSignals)
for sig in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&handledSignals, sig) }
sigprocmask(SIG_SETMASK, &handledSignals, nil)
exit(herald.main(Array(CommandLine.arguments.dropFirst())))

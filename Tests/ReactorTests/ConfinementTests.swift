import Foundation
import Glibc
import HeraldTestSupport
import Reactor
import Testing

/// Loop-only calls made off the loop stop the process with a message naming the call. A failed precondition
/// cannot be caught in-process, so each case runs this same test binary again as a child, with
/// `HERALD_CONFINEMENT_PROBE` naming the violation; the child commits it and must die of the trap.
@Suite struct ConfinementTests {
    static let probeVariable = "HERALD_CONFINEMENT_PROBE"

    enum Violation: String, CaseIterable, Sendable {
        case schedule, register, setInterest, unregister, registeredCount, cancelTimer
        case readLoopBound, bindOffTheLoop, readLoopBoundAfterStop

        /// What the trap message must name.
        var call: String {
            switch self {
            case .schedule: "schedule(afterNanoseconds:_:)"
            case .register: "register(fd:handler:readable:writable:)"
            case .setInterest: "setInterest(fd:readable:writable:)"
            case .unregister: "unregister(fd:)"
            case .registeredCount: "registeredCount"
            case .cancelTimer: "cancel()"
            case .readLoopBound, .readLoopBoundAfterStop: "value"
            case .bindOffTheLoop: "init(_:loop:)"
            }
        }

        /// Runs in the child: each of these must stop the process before it returns.
        func commit() throws {
            let loop = try EventLoop.startThread(name: "probe")
            switch self {
            case .schedule: loop.schedule(afterMilliseconds: 1) {}
            case .register: try loop.register(fd: 0, handler: NullHandler())
            case .setInterest: try loop.setInterest(fd: 0, readable: true, writable: false)
            case .unregister: loop.unregister(fd: 0)
            case .registeredCount: _ = loop.registeredCount
            case .cancelTimer:
                // Smuggled out past the compiler on purpose, which is exactly what the check is for.
                let smuggler = Smuggler()
                try loop.submit { smuggler.timer = loop.schedule(afterMilliseconds: 60_000) {} }
                smuggler.timer?.cancel()
            case .readLoopBound:
                let bound = try loop.submit { LoopBound(NullHandler(), loop: loop) }
                _ = bound.value
            case .bindOffTheLoop: _ = LoopBound(NullHandler(), loop: loop)
            case .readLoopBoundAfterStop:
                let bound = try loop.submit { LoopBound(NullHandler(), loop: loop) }
                loop.stop()
                loop.waitUntilStopped()
                _ = bound.value
            }
        }
    }

    @Test(arguments: Violation.allCases)
    func loopOnlyAccessOffTheLoopStopsTheProcess(_ violation: Violation) throws {
        if let probe = ProcessInfo.processInfo.environment[Self.probeVariable] {
            guard probe == violation.rawValue else { return }
            try violation.commit()
            Issue.record("\(violation) off the loop did not stop the process")
            return
        }
        let executable = try #require(currentExecutable())
        let child = try ChildProcess(
            name: "confinement-\(violation)", executable: executable,
            arguments: ["--testing-library", "swift-testing", "--filter", "ConfinementTests/loopOnlyAccessOffTheLoopStopsTheProcess"],
            environment: [Self.probeVariable: violation.rawValue, "SWIFT_BACKTRACE": "enable=no"])
        let status = try #require(child.waitForExit(seconds: 60), "the probe child did not exit")
        #expect(child.process.terminationReason == .uncaughtSignal, "exit \(status): \(child.output.suffix(2000))")
        #expect([SIGILL, SIGTRAP].contains(status), "signal \(status)")
        #expect(child.output.contains("loop confinement: \(violation.call) called off the thread of event loop 'probe'"),
                "\(child.output.suffix(2000))")
    }

    @Test func afterTheLoopHasFinishedTeardownMayUnregisterAndCancelFromAnyThread() throws {
        let loop = try EventLoop.startThread(name: "finished")
        let smuggler = Smuggler()
        try loop.submit { smuggler.timer = loop.schedule(afterMilliseconds: 60_000) {} }
        loop.stop()
        #expect(loop.waitUntilStopped())
        // What a connection's deinit does when its owner drops it after the loop is gone.
        smuggler.timer?.cancel()
        loop.unregister(fd: 12345)
        #expect(smuggler.timer?.isCancelled == true)
        #expect(loop.registeredCount == 0)
    }
}

private final class NullHandler: FileDescriptorHandler {
    func handleIO(readable: Bool, writable: Bool, hangup: Bool) {}
}

/// Test-only escape hatch that carries a loop-confined timer off the loop, to prove the timer checks.
private final class Smuggler: @unchecked Sendable {
    var timer: LoopTimer?
}

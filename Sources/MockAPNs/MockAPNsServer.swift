import Basics
import Foundation
import Glibc
import Reactor

/// An HTTP/2 server that answers like APNs, with scripted device state and faults, on its own loop thread.
///
/// Thread-safe: every method hops onto the loop (`submit`/`execute`); the request path never leaves it. The
/// core and the listener live on the loop and are reached only through a `LoopBound`, so that is checked.
public final class MockAPNsServer: Sendable {
    /// The port actually bound (useful with port 0).
    public let port: Int
    public let configuration: MockAPNsConfiguration
    private let loop: EventLoop
    private let state: LoopBound<(core: ServerCore, listener: ServerListener)>
    private let isStopped = LockedValue(false)

    /// Binds, starts the loop thread and begins accepting connections.
    public init(configuration: MockAPNsConfiguration) throws {
        self.configuration = configuration
        (loop, state, port) = try ServerLoop.start(name: "mock-apns", host: configuration.host, port: configuration.port) { loop in
            try ServerCore(loop: loop, configuration: configuration)
        }
    }

    deinit { stop() }

    /// A snapshot of the counters.
    public func stats() -> MockAPNsStats {
        (try? loop.submit { [state] in state.value.core.snapshot() }) ?? MockAPNsStats()
    }

    /// Accepted notifications so far (only when `recordAccepted` is on).
    public func acceptedNotifications() -> [MockAcceptedNotification] {
        (try? loop.submit { [state] in state.value.core.accepted }) ?? []
    }

    /// The fault script in force.
    public func faults() -> MockFaultScript {
        (try? loop.submit { [state] in state.value.core.faults.script }) ?? MockFaultScript()
    }

    /// Replaces device state and faults (per-token counters start afresh). Takes effect for the next request.
    public func replaceFaults(_ script: MockFaultScript) throws {
        try script.check()
        try loop.submit { [state, configuration] in state.value.core.faults.replace(script, defaultSeed: configuration.seed) }
    }

    /// Zeroes the counters, the accepted log and the fault counters (open connections stay).
    public func resetStats() {
        try? loop.submit { [state] in state.value.core.resetCounters() }
    }

    /// Closes every connection and the listener, and ends the loop thread. Idempotent.
    public func stop() {
        ServerLoop.stop(loop: loop, state: state, isStopped: isStopped)
    }
}

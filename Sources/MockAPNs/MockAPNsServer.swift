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
    /// The channel-management port when `managementPort` was set (Apple's separate `api-manage-broadcast` host).
    public let managementPort: Int?
    public let configuration: MockAPNsConfiguration
    private let loop: EventLoop
    private let state: LoopBound<(core: ServerCore, listeners: [ServerListener])>
    private let isStopped = LockedValue(false)

    /// Binds, starts the loop thread and begins accepting connections.
    public init(configuration: MockAPNsConfiguration) throws {
        self.configuration = configuration
        let ports: [Int]
        // With a management port, each port answers only its own API, as Apple's hosts do (ServerCore maps the listener).
        (loop, state, ports) = try ServerLoop.start(name: "mock-apns", host: configuration.host,
                                                    ports: [configuration.port] + (configuration.managementPort.map { [$0] } ?? [])) { loop in
            try ServerCore(loop: loop, configuration: configuration)
        }
        port = ports[0]
        managementPort = ports.count > 1 ? ports[1] : nil
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

    /// Broadcasts accepted so far, oldest first (only when `recordAccepted` is on).
    public func broadcastsReceived() -> [MockBroadcast] {
        (try? loop.submit { [state] in state.value.core.broadcasts }) ?? []
    }

    /// Every broadcast channel the simulator holds, in creation order, with its broadcast count.
    public func channels() -> [MockChannel] {
        (try? loop.submit { [state] in state.value.core.channels.all }) ?? []
    }

    /// APNs requests as received (only when `recordRequests` is on).
    public func recordedRequests() -> [MockRecordedRequest] {
        (try? loop.submit { [state] in state.value.core.requests }) ?? []
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

    /// Closes every connection and the listeners, and ends the loop thread. Idempotent.
    public func stop() {
        ServerLoop.stop(loop: loop, state: state, isStopped: isStopped)
    }
}

/// Which API a port answers: Apple serves pushes and broadcasts on `api[.sandbox].push.apple.com`, channel
/// management on `api-manage-broadcast[.sandbox].push.apple.com`; a path of the other API is `404 BadPath`.
enum ListenerRole {
    case push, management, both
}

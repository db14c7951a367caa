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
    private let simulator: SimulatorHandle<APNsCore>

    /// Binds, starts the loop thread and begins accepting connections.
    public init(configuration: MockAPNsConfiguration) throws {
        self.configuration = configuration
        // With a management port, each port answers only its own API, as Apple's hosts do (APNsCore maps the listener).
        simulator = try SimulatorHandle(name: "mock-apns", host: configuration.host,
                                        ports: [configuration.port] + (configuration.managementPort.map { [$0] } ?? [])) { counters in
            try APNsCore(configuration: configuration, counters: counters)
        }
        let ports = simulator.ports
        port = ports[0]
        managementPort = ports.count > 1 ? ports[1] : nil
    }

    deinit { stop() }

    /// A snapshot of the counters.
    public func stats() -> MockAPNsStats {
        simulator.read(MockAPNsStats()) { $0.snapshot() }
    }

    /// Accepted notifications so far (only when `recordAccepted` is on).
    public func acceptedNotifications() -> [MockAcceptedNotification] {
        simulator.read([]) { $0.accepted }
    }

    /// Broadcasts accepted so far, oldest first (only when `recordAccepted` is on).
    public func broadcastsReceived() -> [MockBroadcast] {
        simulator.read([]) { $0.broadcasts }
    }

    /// Every broadcast channel the simulator holds, in creation order, with its broadcast count.
    public func channels() -> [MockChannel] {
        simulator.read([]) { $0.channels.all }
    }

    /// APNs requests as received (only when `recordRequests` is on).
    public func recordedRequests() -> [MockRecordedRequest] {
        simulator.read([]) { $0.requests }
    }

    /// The fault script in force.
    public func faults() -> MockFaultScript {
        simulator.read(MockFaultScript()) { $0.faults.script }
    }

    /// Replaces device state and faults (per-token counters start afresh). Takes effect for the next request.
    public func replaceFaults(_ script: MockFaultScript) throws {
        try script.check()
        try simulator.run { [configuration] in $0.faults.replace(script, defaultSeed: configuration.seed) }
    }

    /// Zeroes the counters, the accepted log and the fault counters (open connections stay).
    public func resetStats() {
        try? simulator.run { $0.resetCounters() }
    }

    /// Closes every connection and the listeners, and ends the loop thread. Idempotent.
    public func stop() {
        simulator.stop()
    }
}

/// Which API a port answers: Apple serves pushes and broadcasts on `api[.sandbox].push.apple.com`, channel
/// management on `api-manage-broadcast[.sandbox].push.apple.com`; a path of the other API is `404 BadPath`.
enum ListenerRole {
    case push, management, both
}

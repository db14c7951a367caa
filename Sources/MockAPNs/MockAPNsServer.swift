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
    private let state: LoopBound<(core: ServerCore, listeners: [RoleListener])>
    private let isStopped = LockedValue(false)

    /// Binds, starts the loop thread and begins accepting connections.
    public init(configuration: MockAPNsConfiguration) throws {
        self.configuration = configuration
        let loop = try EventLoop.startThread(name: "mock-apns")
        self.loop = loop
        do {
            let (state, ports) = try loop.submit { () throws -> (LoopBound<(core: ServerCore, listeners: [RoleListener])>, [Int]) in
                let core = try ServerCore(loop: loop, configuration: configuration)
                var listeners: [RoleListener] = []
                do {
                    // With a management port, each port answers only its own API, as Apple's hosts do.
                    let separate = configuration.managementPort != nil
                    for (port, role) in [(configuration.port, separate ? ListenerRole.push : .both)]
                        + (configuration.managementPort.map { [($0, ListenerRole.management)] } ?? []) {
                        let fd = try Sockets.listen(host: configuration.host, port: port)
                        let listener = RoleListener(fd: fd, core: core, role: role)
                        do { try loop.register(fd: fd, handler: listener) } catch {
                            Glibc.close(fd)
                            throw error
                        }
                        listeners.append(listener)
                    }
                } catch {
                    for listener in listeners {
                        loop.unregister(fd: listener.fd)
                        Glibc.close(listener.fd)
                    }
                    throw error
                }
                return (LoopBound((core, listeners), loop: loop), listeners.map { Sockets.localPort($0.fd) })
            }
            self.state = state
            self.port = ports[0]
            self.managementPort = ports.count > 1 ? ports[1] : nil
        } catch {
            loop.stop()
            loop.waitUntilStopped()
            throw error
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

    /// Closes every connection and the listener, and ends the loop thread. Idempotent.
    public func stop() {
        let already = isStopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        if already { return }
        try? loop.submit { [state, loop] in
            let (core, listeners) = state.value
            for listener in listeners {
                loop.unregister(fd: listener.fd)
                Glibc.close(listener.fd)
            }
            core.closeAll()
        }
        loop.stop()
        loop.waitUntilStopped()
    }
}

/// Accepts connections on one of the APNs simulator's ports (push, management or both) and hands them to the core
/// with that role (ServerLoop's `ServerListener` has no role). Loop-confined; the listening descriptor is closed by `stop()`.
final class RoleListener: FileDescriptorHandler {
    let fd: Int32
    unowned let core: ServerCore
    let role: ListenerRole

    init(fd: Int32, core: ServerCore, role: ListenerRole) {
        self.fd = fd
        self.core = core
        self.role = role
    }

    func handleIO(readable: Bool, writable: Bool, hangup: Bool) {
        for _ in 0..<64 {
            guard let client = try? Sockets.accept(fd) else { return }
            core.accepted(fd: client, role: role)
        }
    }
}

/// Which API a port answers: Apple serves pushes and broadcasts on `api[.sandbox].push.apple.com`, channel
/// management on `api-manage-broadcast[.sandbox].push.apple.com`; a path of the other API is `404 BadPath`.
enum ListenerRole {
    case push, management, both
}

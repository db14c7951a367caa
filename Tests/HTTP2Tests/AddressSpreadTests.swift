import Basics
import Foundation
import Glibc
import HeraldTestSupport
import HTTP2
import Simulators
import Reactor
import Testing

/// A pool connects as Apple asks: each connection resolves the name afresh, prefers an address no other
/// connection uses, falls back to the next when one fails, and the connections open staggered, not in a burst.
/// No name in this machine's /etc/hosts has two addresses (`localhost` is 127.0.0.1 only), so the pool's
/// resolver maps `localhost` with getaddrinfo to both 127.0.0.1 and 127.0.0.2, where simulators listen.
@Suite struct AddressSpreadTests {
    /// getaddrinfo for each of `hosts` at the asked port, concatenated; counts its calls.
    final class TwoAddressResolver: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        let hosts: [String]
        init(_ hosts: [String]) { self.hosts = hosts }
        var calls: Int { lock.withLock { count } }

        var resolve: HTTP2ClientConnection.Resolver {
            { [self] (_: String, port: Int) throws(SystemError) -> [SocketAddress] in
                lock.withLock { count += 1 }
                var all: [SocketAddress] = []
                for host in hosts { all += try Sockets.resolve(host: host, port: port) }
                return all
            }
        }
    }

    /// Connection events with when they arrived (monotonic nanoseconds).
    final class TimedEvents: @unchecked Sendable {
        private let lock = NSLock()
        private var events: [(UInt64, HTTP2PoolEvent)] = []
        func append(_ event: HTTP2PoolEvent) { lock.withLock { events.append((monotonicNanos(), event)) } }
        var connectedAt: [UInt64] { lock.withLock { events.compactMap { if case .connection(.connected) = $0.1 { $0.0 } else { nil } } } }
        var openingAt: [UInt64] { lock.withLock { events.compactMap { if case .opening = $0.1 { $0.0 } else { nil } } } }
        var closedCount: Int { lock.withLock { events.count { if case .connection(.closed) = $0.1 { true } else { false } } } }
    }

    private func makePool(
        _ fixture: SimulatorFixture, port: Int, count: Int, staggerMilliseconds: Int, resolver: TwoAddressResolver, events: TimedEvents
    ) throws -> LoopBound<HTTP2ConnectionPool> {
        let options = HTTP2PoolOptions(connectionCount: count, reconnectMinimumMilliseconds: 50, reconnectMaximumMilliseconds: 400,
                                       staggerMilliseconds: staggerMilliseconds)
        return try fixture.loop.submit {
            let pool = HTTP2ConnectionPool(loop: fixture.loop, endpoint: HTTP2Endpoint(host: "localhost", port: port), tls: fixture.tls, options: options)
            pool.resolver = resolver.resolve
            pool.onEvent = { events.append($0) }
            pool.start()
            return LoopBound(pool, loop: fixture.loop)
        }
    }

    private func remotes(_ fixture: SimulatorFixture, _ pool: LoopBound<HTTP2ConnectionPool>) -> [String: Int] {
        (try? fixture.loop.submit { pool.value.connectionsByRemoteAddress }) ?? [:]
    }

    @Test(.timeLimit(.minutes(1)))
    func connectionsOfOnePoolLandOnDifferentAddressesOfTheNameEachResolvedAfresh() throws {
        let fixture = try SimulatorFixture { $0.host = "127.0.0.2" }
        defer { fixture.stop() }
        let port = fixture.server.port
        var second = fixture.configuration
        second.host = "127.0.0.1"
        second.port = port
        let other = try MockAPNsServer(configuration: second)
        defer { other.stop() }
        let resolver = TwoAddressResolver(["127.0.0.1", "127.0.0.2"])
        let events = TimedEvents()
        let pool = try makePool(fixture, port: port, count: 2, staggerMilliseconds: 0, resolver: resolver, events: events)
        defer { try? fixture.loop.submit { pool.value.close(graceful: false) } }  // on the loop, before the fixture stops it
        let spread = ["127.0.0.1:\(port)": 1, "127.0.0.2:\(port)": 1]
        #expect(waitUntil(seconds: 10) { remotes(fixture, pool) == spread }, "\(remotes(fixture, pool))")
        #expect(fixture.server.stats().connectionsAccepted == 1 && other.stats().connectionsAccepted == 1)
        #expect(resolver.calls == 2)

        // The replacement of a retired connection resolves again and takes the address it left free.
        let retired = try fixture.loop.submit { pool.value.connectionIDs[0] }
        try fixture.loop.submit { pool.value.retire(connectionID: retired) }
        #expect(waitUntil(seconds: 10) { events.connectedAt.count == 3 && remotes(fixture, pool) == spread }, "\(remotes(fixture, pool))")
        #expect(resolver.calls == 3)
        #expect(fixture.server.stats().connectionsAccepted + other.stats().connectionsAccepted == 3)
    }

    @Test(.timeLimit(.minutes(1)))
    func anAddressThatRefusesTheConnectFallsBackToTheNext() throws {
        let fixture = try SimulatorFixture()  // 127.0.0.1 only: nothing listens on 127.0.0.2
        defer { fixture.stop() }
        let port = fixture.server.port
        let resolver = TwoAddressResolver(["127.0.0.2", "127.0.0.1"])
        let events = TimedEvents()
        let pool = try makePool(fixture, port: port, count: 2, staggerMilliseconds: 0, resolver: resolver, events: events)
        defer { try? fixture.loop.submit { pool.value.close(graceful: false) } }  // on the loop, before the fixture stops it
        // The first tries 127.0.0.2 first; the second prefers the address not in use, 127.0.0.2 again: both fall back.
        #expect(waitUntil(seconds: 10) { remotes(fixture, pool) == ["127.0.0.1:\(port)": 2] }, "\(remotes(fixture, pool))")
        #expect(events.closedCount == 0)
        #expect(try fixture.loop.submit { pool.value.status.consecutiveFailures } == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func connectionsOpenTheStaggerIntervalApartAndStayOpen() throws {
        let fixture = try SimulatorFixture()
        defer { fixture.stop() }
        let resolver = TwoAddressResolver(["127.0.0.1"])
        let events = TimedEvents()
        let start = monotonicNanos()
        let pool = try makePool(fixture, port: fixture.server.port, count: 3, staggerMilliseconds: 300, resolver: resolver, events: events)
        defer { try? fixture.loop.submit { pool.value.close(graceful: false) } }  // on the loop, before the fixture stops it
        #expect(waitUntil(seconds: 10) { (try? fixture.loop.submit { pool.value.liveConnections }) == 3 })
        #expect(events.connectedAt.count == 3)
        // The pool starts each connection 300 ms after the one before (its events come from the loop's thread, so
        // their stamps show the stagger); DNS and handshakes run elsewhere and may bunch on a loaded machine.
        let times = events.openingAt
        #expect(times.count == 3)
        let gaps = zip(times.dropFirst(), times).map { Double($0 &- $1) / 1e6 }
        #expect(gaps.allSatisfy { $0 >= 290 }, "gaps \(gaps) ms")
        #expect(Double((times.last ?? start) &- start) / 1e6 >= 580, "last open after \(Double((times.last ?? start) &- start) / 1e6) ms")
        // No churn: idle connections stay, nothing reopens.
        usleep(500_000)
        #expect(events.closedCount == 0 && events.connectedAt.count == 3 && events.openingAt.count == 3 && resolver.calls == 3)
    }
}

import Foundation
import Glibc
import HeraldTestSupport
import HTTP2
import Reactor
import Testing

@Suite final class PoolTests {
    let loop: EventLoop
    let certificates: TestCertificates

    init() throws {
        loop = try EventLoop.startThread(name: "http2-pool-test")
        certificates = try TestCertificates()
    }

    deinit {
        loop.stop()
        loop.waitUntilStopped()
    }

    private func makePool(port: Int, options: HTTP2PoolOptions, events: EventLog) throws -> LoopBound<HTTP2ConnectionPool> {
        let tls = try TLSContext(TLSConfiguration(caFile: certificates.caCertificate))
        return try loop.submit { [loop] in
            let pool = HTTP2ConnectionPool(loop: loop, endpoint: HTTP2Endpoint(host: "127.0.0.1", port: port), tls: tls, options: options)
            pool.onEvent = { events.append($0) }
            pool.start()
            return LoopBound(pool, loop: loop)
        }
    }

    /// nghttpd on a port of its own serving a fresh docroot, and a one-connection pool to it with `reconnect` back-off.
    private func restartablePool(reconnect: ClosedRange<Int>, events: EventLog) throws
        -> (server: RestartableNghttpd, pool: LoopBound<HTTP2ConnectionPool>) {
        let server = try RestartableNghttpd(certificates: certificates)
        let options = HTTP2PoolOptions(connectionCount: 1, reconnectMinimumMilliseconds: reconnect.lowerBound,
                                       reconnectMaximumMilliseconds: reconnect.upperBound)
        return (server, try makePool(port: server.port, options: options, events: events))
    }

    /// Sends `count` requests through the pool from the loop; returns the outcomes to wait on.
    private func send(_ count: Int, on pool: LoopBound<HTTP2ConnectionPool>, request: HTTP2Request = postRequest()) throws -> Outcomes {
        let outcomes = Outcomes(expected: count)
        try loop.submit {
            for index in 0..<count {
                if !pool.value.send(request, completion: { outcomes.record(index, $0) }) { outcomes.record(index, .failure(.queueFull)) }
            }
        }
        return outcomes
    }

    @Test func spreadsRequestsOverSeveralConnections() throws {
        let docroot = try makeDocroot()
        defer { try? FileManager.default.removeItem(atPath: docroot) }
        let server = try ServerProcess.nghttpd(port: freeLoopbackPort(), docroot: docroot, certificates: certificates, extra: ["--max-concurrent-streams=10"])
        defer { server.stop() }
        let events = EventLog()
        let pool = try makePool(port: server.port, options: HTTP2PoolOptions(connectionCount: 3), events: events)
        #expect(waitUntil(seconds: 10) { (try? loop.submit { pool.value.liveConnections }) == 3 })
        let outcomes = try send(2_000, on: pool)
        #expect(outcomes.wait(seconds: 60))
        #expect(outcomes.completedOnceEach)
        #expect(outcomes.successes.count == 2_000)
        #expect(Set(outcomes.successes.map(\.connectionID)).count == 3)
        #expect(try loop.submit { pool.value.maxObservedOpenStreams } <= 10)
        #expect(try loop.submit { (pool.value.inFlight, pool.value.queued) } == (0, 0))
        try loop.submit { pool.value.close(graceful: true) }
        #expect(waitUntil(seconds: 5) { events.all.filter { if case .connection(.closed) = $0 { true } else { false } }.count == 3 })
    }

    @Test func completionsMayCallBackIntoThePool() throws {
        let docroot = try makeDocroot()
        defer { try? FileManager.default.removeItem(atPath: docroot) }
        let server = try ServerProcess.nghttpd(port: freeLoopbackPort(), docroot: docroot, certificates: certificates, extra: ["--max-concurrent-streams=7"])
        defer { server.stop() }
        let pool = try makePool(port: server.port, options: HTTP2PoolOptions(connectionCount: 2), events: EventLog())
        let total = 500
        let outcomes = Outcomes(expected: total + 20)
        try loop.submit {
            var next = 0
            func chain() {
                let index = next
                next += 1
                let accepted = pool.value.send(postRequest()) { result in
                    outcomes.record(index, result)
                    if next < total { chain() }  // re-enters the pool from inside a completion
                    if index == total - 1 {
                        // ...and so does closing it: these 20 complete with .closed, exactly once each.
                        for extra in 0..<20 {
                            _ = pool.value.send(postRequest()) { outcomes.record(total + extra, $0) }
                        }
                        pool.value.close(graceful: false)
                    }
                }
                if !accepted { outcomes.record(index, .failure(.queueFull)) }
            }
            for _ in 0..<10 { chain() }
        }
        #expect(outcomes.wait(seconds: 60))
        #expect(outcomes.completedOnceEach)
        #expect(outcomes.successes.count >= total - 10)
        #expect(outcomes.failures.allSatisfy { $0 == .closed || $0 == .connectionLost("closed by client") }, "\(outcomes.failures)")
    }

    @Test func reconnectsAfterTheServerIsKilledAndRestarted() throws {
        let events = EventLog()
        let (server, pool) = try restartablePool(reconnect: 100...400, events: events)
        defer { server.stop() }
        let first = try send(10, on: pool)
        #expect(first.wait(seconds: 10))
        #expect(first.successes.count == 10)

        server.kill()
        #expect(waitUntil(seconds: 10) { (try? loop.submit { pool.value.liveConnections }) == 0 })
        // While the server is down requests fail as never sent: at the next failed attempt, or at their deadline.
        let during = try send(5, on: pool, request: postRequest(timeoutMilliseconds: 300))
        #expect(during.wait(seconds: 10))
        #expect(during.failures.count == 5)
        #expect(during.failures.allSatisfy { $0.safeToResend }, "\(during.failures)")

        try server.start()
        let after = try send(10, on: pool)
        #expect(after.wait(seconds: 30))
        #expect(after.completedOnceEach)
        #expect(after.successes.count == 10)
        let log = events.all
        #expect(log.filter { if case .connection(.connected) = $0 { true } else { false } }.count >= 2)
        #expect(log.contains { if case .reconnectScheduled = $0 { true } else { false } })
        try loop.submit { pool.value.close(graceful: false) }
    }

    /// Issue 54: a connection that answered requests and then died was counted as a failed connect, so a server
    /// that cuts connections now and then drove the back-off up (and the destination into pauses). Six times over,
    /// the server serves and is then killed and restarted: the failures in a row never pile up beyond the
    /// connects that failed while it was down, because each connection that served resets them.
    @Test func aConnectionThatServedResetsTheFailuresHoweverItEnds() throws {
        let events = EventLog()
        let (server, pool) = try restartablePool(reconnect: 200...60_000, events: events)
        defer { server.stop() }
        var mostInARow = 0
        for cycle in 0..<6 {
            let served = try send(5, on: pool)
            #expect(served.wait(seconds: 30), "cycle \(cycle)")
            #expect(served.successes.count == 5, "cycle \(cycle): \(served.failures)")
            mostInARow = max(mostInARow, try loop.submit { pool.value.status.consecutiveFailures })
            server.kill()
            try server.start()
        }
        let scheduled = events.all.compactMap { if case .reconnectScheduled(_, let failures) = $0 { failures } else { nil } }
        print("served-then-cut: reconnects scheduled after \(scheduled) failures in a row")
        #expect(mostInARow <= 2 && (scheduled.max() ?? 0) <= 3, "each cut counted as a failure: \(scheduled)")
        try loop.submit { pool.value.close(graceful: false) }
    }

    @Test func aFullQueuePushesBack() throws {
        let events = EventLog()
        // Nobody listens: nothing can leave the queue.
        let options = HTTP2PoolOptions(maxQueuedRequests: 5, reconnectMinimumMilliseconds: 100, reconnectMaximumMilliseconds: 200,
                                       failWaitingRequestsWhenUnreachable: false)
        let pool = try makePool(port: freeLoopbackPort(), options: options, events: events)
        let accepted = try loop.submit { () -> [Bool] in
            (0..<7).map { _ in pool.value.send(postRequest(timeoutMilliseconds: 200)) { _ in } }
        }
        #expect(accepted == [true, true, true, true, true, false, false])
        #expect(try loop.submit { pool.value.queued } == 5)
        #expect(waitUntil(seconds: 5) { (try? loop.submit { pool.value.queued }) == 0 })
        #expect(waitUntil(seconds: 5) { events.all.contains { if case .connection(.closed(_, .connectFailed?)) = $0 { true } else { false } } })
        try loop.submit { pool.value.close(graceful: false) }
        #expect(try loop.submit { pool.value.send(postRequest()) { _ in } } == false)
    }

    @Test func aDroppedPoolStillCompletesEveryRequest() throws {
        let tls = try TLSContext(TLSConfiguration(caFile: certificates.caCertificate))
        let port = freeLoopbackPort()
        let outcomes = Outcomes(expected: 3)
        try loop.submit { [loop] in
            let pool = HTTP2ConnectionPool(loop: loop, endpoint: HTTP2Endpoint(host: "127.0.0.1", port: port), tls: tls)
            for index in 0..<3 {
                if !pool.send(postRequest(), completion: { outcomes.record(index, $0) }) { outcomes.record(index, .failure(.queueFull)) }
            }
        }  // the pool's last reference goes here
        #expect(outcomes.wait(seconds: 10))
        #expect(outcomes.completedOnceEach)
        #expect(outcomes.failures == [.closed, .closed, .closed])
    }

    @Test func anUnreachableServerFailsWaitingRequestsAtOnce() throws {
        let pool = try makePool(port: freeLoopbackPort(), options: HTTP2PoolOptions(), events: EventLog())
        let outcomes = try send(3, on: pool)  // 20 s deadlines: an answer within 10 s proves they did not wait
        #expect(outcomes.wait(seconds: 10))
        #expect(outcomes.failures.allSatisfy { if case .connectFailed = $0 { true } else { false } }, "\(outcomes.failures)")
        try loop.submit { pool.value.close(graceful: false) }
    }

    /// Issue 30, item 14: a request sent while the pool waited out a long reconnect back-off sat in its queue
    /// until its deadline, holding its job. With no connection open or opening and the next attempt after its
    /// queue deadline, it now fails at once as never sent, so its owner can hand the job on.
    @Test func aRequestThatCannotGetAConnectionBeforeItsDeadlineFailsAtOnceAsNeverSent() throws {
        let options = HTTP2PoolOptions(reconnectMinimumMilliseconds: 20_000, reconnectMaximumMilliseconds: 20_000)
        let pool = try makePool(port: freeLoopbackPort(), options: options, events: EventLog())
        defer { try? loop.submit { pool.value.close(graceful: false) } }
        #expect(waitUntil(seconds: 10) { ((try? loop.submit { pool.value.status.consecutiveFailures }) ?? 0) >= 1 })
        let started = Date()
        let outcomes = try send(1, on: pool, request: postRequest(timeoutMilliseconds: 5_000))
        #expect(outcomes.wait(seconds: 10))
        #expect(Date().timeIntervalSince(started) < 2.5, "failed at once, not at its 5 s deadline")
        let error = try #require(outcomes.failures.first)
        #expect(error.safeToResend)
        guard case .connectFailed(let detail) = error else { Issue.record("got \(error)"); return }
        #expect(detail.contains("reconnecting in"), "\(detail)")
    }

    /// Issue 30, item 13: the owner's probe after its own pause must not also wait out the pool's back-off.
    @Test func connectNowCutsAReconnectBackOffShort() throws {
        let docroot = try makeDocroot()
        defer { try? FileManager.default.removeItem(atPath: docroot) }
        let port = freeLoopbackPort()
        let options = HTTP2PoolOptions(reconnectMinimumMilliseconds: 60_000, reconnectMaximumMilliseconds: 60_000)
        let pool = try makePool(port: port, options: options, events: EventLog())
        defer { try? loop.submit { pool.value.close(graceful: false) } }
        #expect(waitUntil(seconds: 10) { ((try? loop.submit { pool.value.status.consecutiveFailures }) ?? 0) >= 1 })
        let server = try ServerProcess.nghttpd(port: port, docroot: docroot, certificates: certificates)
        defer { server.stop() }
        try loop.submit { pool.value.connectNow() }
        #expect(waitUntil(seconds: 10) { (try? loop.submit { pool.value.liveConnections }) == 1 }, "the next attempt was 30-60 s away")
        let outcomes = try send(1, on: pool)
        #expect(outcomes.wait(seconds: 10))
        #expect(outcomes.successes.first?.status == 200, "\(outcomes.failures)")
    }

    @Test func retiringAConnectionMovesRequestsToAFreshOne() throws {
        let docroot = try makeDocroot()
        defer { try? FileManager.default.removeItem(atPath: docroot) }
        let server = try ServerProcess.nghttpd(port: freeLoopbackPort(), docroot: docroot, certificates: certificates)
        defer { server.stop() }
        let events = EventLog()
        let pool = try makePool(port: server.port, options: HTTP2PoolOptions(connectionCount: 1), events: events)
        let first = try send(1, on: pool)
        #expect(first.wait(seconds: 10))
        let oldID = try #require(first.successes.first?.connectionID)
        let resent = Outcomes(expected: 1)
        try loop.submit {
            pool.value.retire(connectionID: oldID)
            _ = pool.value.send(postRequest(), onConnectionNewerThan: oldID) { resent.record(0, $0) }
        }
        #expect(resent.wait(seconds: 10))
        let newID = try #require(resent.successes.first?.connectionID)
        #expect(newID > oldID)
        #expect(waitUntil(seconds: 5) { events.all.contains(.connection(.closed(connectionID: oldID, error: nil))) })
        try loop.submit { pool.value.close(graceful: true) }
    }

    @Test func statusCountsFailuresInARowWhileTheServerIsUnreachable() throws {
        let options = HTTP2PoolOptions(reconnectMinimumMilliseconds: 20, reconnectMaximumMilliseconds: 40)
        let pool = try makePool(port: freeLoopbackPort(), options: options, events: EventLog())
        #expect(waitUntil(seconds: 10) { ((try? loop.submit { pool.value.status.consecutiveFailures }) ?? 0) >= 3 })
        let status = try loop.submit { pool.value.status }
        #expect(!status.hasUsableConnection)
        #expect(status.streamLimit == nil)
        try loop.submit { pool.value.close(graceful: false) }
    }

    /// A server advertising MAX_CONCURRENT_STREAMS 0 is connected yet takes nothing: the status says so, and
    /// a request waits (never sent) until its deadline.
    @Test(arguments: [0, 7]) func statusReportsTheServersStreamLimitEvenZero(limit: Int) throws {
        let docroot = try makeDocroot()
        defer { try? FileManager.default.removeItem(atPath: docroot) }
        let server = try ServerProcess.nghttpd(port: freeLoopbackPort(), docroot: docroot, certificates: certificates, extra: ["--max-concurrent-streams=\(limit)"])
        defer { server.stop() }
        let pool = try makePool(port: server.port, options: HTTP2PoolOptions(), events: EventLog())
        #expect(waitUntil(seconds: 10) { (try? loop.submit { pool.value.status.hasUsableConnection }) == true })
        #expect(try loop.submit { pool.value.status } == HTTP2PoolStatus(hasUsableConnection: true, consecutiveFailures: 0, streamLimit: limit))
        let outcomes = try send(1, on: pool, request: postRequest(timeoutMilliseconds: 500))
        #expect(outcomes.wait(seconds: 10))
        if limit == 0 {
            #expect(outcomes.failures == [.queueTimedOut])
        } else {
            #expect(outcomes.successes.first?.status == 200, "\(outcomes.failures)")
        }
        try loop.submit { pool.value.close(graceful: false) }
    }
}

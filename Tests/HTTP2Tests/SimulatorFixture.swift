import Basics
import Foundation
import Glibc
import HeraldTestSupport
import HTTP2
import Simulators
import Reactor

/// Herald's APNs simulator in-process (HeraldTestSupport's `APNsSimulatorFixture`) plus a client loop.
/// `stop()` closes the pools it made, ends both loops and removes the directory; every test calls it.
final class SimulatorFixture: Sendable {
    static let topic = APNsSimulatorFixture.topic

    let simulator: APNsSimulatorFixture
    var server: MockAPNsServer { simulator.server }
    var configuration: MockAPNsConfiguration { simulator.configuration }
    var bearer: String { simulator.bearer }
    let loop: EventLoop
    let tls: TLSContext
    private let pools = LockedValue<[LoopBound<HTTP2ConnectionPool>]>([])

    init(faults: MockFaultScript = MockFaultScript(), _ configure: (inout MockAPNsConfiguration) -> Void = { _ in }) throws {
        simulator = try APNsSimulatorFixture(faults: faults, configure)
        do {
            tls = try TLSContext(TLSConfiguration(caFile: simulator.tls.caFile))
            loop = try EventLoop.startThread(name: "simtests-client")
        } catch {
            simulator.stop()
            throw error
        }
    }

    /// A started pool to the simulator; events go to `events`. Fast reconnects: the faults kill connections often.
    func makePool(
        connectionCount: Int = 1, connection: HTTP2ConnectionOptions = .init(), events: EventLog = EventLog()
    ) throws -> LoopBound<HTTP2ConnectionPool> {
        let options = HTTP2PoolOptions(
            connectionCount: connectionCount, reconnectMinimumMilliseconds: 50, reconnectMaximumMilliseconds: 400,
            connection: connection)
        let pool = try loop.submit {
            let pool = HTTP2ConnectionPool(loop: self.loop, endpoint: HTTP2Endpoint(host: "127.0.0.1", port: self.server.port), tls: self.tls, options: options)
            pool.onEvent = { events.append($0) }
            pool.start()
            return LoopBound(pool, loop: self.loop)
        }
        pools.withLock { $0.append(pool) }
        return pool
    }

    /// An APNs-shaped push: `POST /3/device/<token>` with topic, push type, our `apns-id` and the bearer token.
    func request(token: String, apnsID: String, timeoutMilliseconds: Int = 60_000) -> HTTP2Request {
        HTTP2Request(
            method: "POST", path: "/3/device/" + token,
            headers: [
                HTTP2Header(name: "apns-push-type", value: "alert"),
                HTTP2Header(name: "apns-topic", value: Self.topic),
                HTTP2Header(name: "apns-id", value: apnsID),
                HTTP2Header(name: "authorization", value: bearer, neverIndex: true),
            ],
            body: Array(#"{"aps":{"alert":"hello"}}"#.utf8), timeoutMilliseconds: timeoutMilliseconds)
    }

    /// The ids of what the simulator accepted, with how often each was accepted.
    func acceptedIDs() -> [String: Int] {
        var counts: [String: Int] = [:]
        for notification in server.acceptedNotifications() { counts[notification.apnsID.lowercased(), default: 0] += 1 }
        return counts
    }

    func stop() {
        let all = pools.withLock { $0 }
        try? loop.submit { for pool in all { pool.value.close(graceful: false) } }
        loop.stop()
        loop.waitUntilStopped()
        simulator.stop()
    }
}

/// A 64-hex-digit device token: `prefix` (hex) followed by `index`.
func deviceToken(_ prefix: String = "ab", _ index: Int) -> String {
    let digits = String(index, radix: 16)
    return prefix + String(repeating: "0", count: 64 - prefix.count - digits.count) + digits
}

func lowerUUID() -> String { UUID().uuidString.lowercased() }

/// Every attempt of every request, for "each attempt ends exactly once" and "resent until delivered" checks.
/// Completions are recorded on the loop's thread; the test thread waits with a deadline.
final class AttemptLedger: @unchecked Sendable {
    private let lock = NSLock()
    private var sent: [Int: Int] = [:]
    private var results: [Int: [Result<HTTP2Response, HTTP2ClientError>]] = [:]
    private var finished: Set<Int> = []
    private let expected: Int
    private let done = DispatchSemaphore(value: 0)

    init(expected: Int) { self.expected = expected }

    func attemptSent(_ index: Int) { lock.withLock { sent[index, default: 0] += 1 } }

    /// Records one completion; `final` marks the request as over (delivered, answered, or given up).
    func record(_ index: Int, _ result: Result<HTTP2Response, HTTP2ClientError>, final: Bool) {
        let all = lock.withLock { () -> Bool in
            results[index, default: []].append(result)
            if final { finished.insert(index) }
            return final && finished.count == expected
        }
        if all { done.signal() }
    }

    func wait(seconds: Double) -> Bool { done.wait(timeout: .now() + seconds) == .success }

    /// Every attempt sent completed exactly once (no lost and no double completions).
    var everyAttemptCompletedOnce: Bool {
        lock.withLock {
            sent.count == expected && finished.count == expected
                && sent.allSatisfy { results[$0.key]?.count == $0.value }
        }
    }

    var attempts: [Int: [Result<HTTP2Response, HTTP2ClientError>]] { lock.withLock { results } }
    var finalResults: [Int: Result<HTTP2Response, HTTP2ClientError>] { lock.withLock { results.compactMapValues(\.last) } }
    var allFailures: [HTTP2ClientError] {
        lock.withLock { results.values.flatMap { $0 }.compactMap { if case let .failure(e) = $0 { e } else { nil } } }
    }
}

/// Sends `requests[i]` through the pool (on the loop's thread) and, when `resend` allows it, sends it again
/// from its completion, up to `maxAttempts`. The pool itself never resends: this is what a caller does.
func sendAll(
    _ requests: [HTTP2Request], on bound: LoopBound<HTTP2ConnectionPool>, into ledger: AttemptLedger, maxAttempts: Int = 1,
    resend: @escaping (HTTP2ClientError) -> Bool = { $0.safeToResend }
) {
    let pool = bound.value
    func attempt(_ index: Int, _ number: Int) {
        ledger.attemptSent(index)
        let accepted = pool.send(requests[index]) { result in
            var again = false
            if case let .failure(error) = result, number < maxAttempts, resend(error) { again = true }
            ledger.record(index, result, final: !again)
            if again { attempt(index, number + 1) }
        }
        if !accepted { ledger.record(index, .failure(.queueFull), final: true) }
    }
    for index in requests.indices { attempt(index, 1) }
}

extension HTTP2ClientError {
    var isGoawayUnprocessed: Bool { if case .goawayUnprocessed = self { true } else { false } }
    var isConnectionLost: Bool { if case .connectionLost = self { true } else { false } }
    var goawayReason: String? { if case let .goawayUnprocessed(_, _, reason) = self { reason } else { nil } }
}

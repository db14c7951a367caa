@testable import HTTP2
import Testing

/// The pure parts of a connection and a pool: PING liveness, the proxy's answer, the reconnect back-off.
@Suite struct ConnectionPartsTests {
    @Test func livenessPingsAfterIdleAndDeclaresDeathWithoutAnAnswer() {
        var liveness = Liveness(lastReadAt: 1_000)
        #expect(liveness.verdict(at: 1_099, idleNanos: 100, timeoutNanos: 50) == .alive)
        #expect(liveness.verdict(at: 1_100, idleNanos: 100, timeoutNanos: 50) == .sendPing)
        liveness.pingSent(at: 1_100)
        #expect(liveness.verdict(at: 1_149, idleNanos: 100, timeoutNanos: 50) == .alive)
        #expect(liveness.verdict(at: 1_150, idleNanos: 100, timeoutNanos: 50) == .dead)
        liveness.received(at: 1_120)  // any byte answers the PING
        #expect(liveness.verdict(at: 1_150, idleNanos: 100, timeoutNanos: 50) == .alive)
        liveness.pingSent(at: 1_300)
        liveness.pingAcknowledged()
        #expect(liveness.verdict(at: 1_400, idleNanos: 1_000, timeoutNanos: 50) == .alive)
    }

    @Test func proxyAnswerNeedsA2xxHeadAndNothingAfterIt() {
        func reply(_ parts: [String]) -> [ProxyHandshake.Reply] {
            var received: [UInt8] = []
            return parts.map { part in
                received += Array(part.utf8)
                return ProxyHandshake.judge(received)
            }
        }
        #expect(reply(["HTTP/1.1 200 Connection established\r\n", "\r\n"]) == [.incomplete, .established])
        #expect(reply(["HTTP/1.0 403 Forbidden\r\n\r\n"]) == [.failed("proxy refused CONNECT: HTTP/1.0 403 Forbidden")])
        #expect(reply(["HTTP/1.1 200 OK\r\n\r\nxyz"]) == [.failed("proxy sent data before the TLS handshake")])
        #expect(reply([String(repeating: "x", count: 16_385)]) == [.failed("proxy answer too long")])
    }

    @Test func reconnectBackoffDoublesFromTheMinimumToTheMaximumAndResets() {
        var backoff = ReconnectBackoff(minimumMilliseconds: 1_000, maximumMilliseconds: 60_000)
        #expect(backoff.failed() == 500...1_000)
        #expect(backoff.failed() == 1_000...2_000)
        #expect(backoff.failed() == 2_000...4_000)
        for _ in 0..<10 { _ = backoff.failed() }
        #expect(backoff.failed() == 30_000...60_000)
        #expect(backoff.consecutiveFailures == 14)
        backoff.succeeded()
        #expect(backoff.consecutiveFailures == 0)
        #expect(backoff.failed() == 500...1_000)
    }
}

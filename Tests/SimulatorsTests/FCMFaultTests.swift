import Foundation
import HeraldTestSupport
import Testing
@testable import Simulators

/// Faults and quotas of the FCM simulator, seen by curl over HTTP/2 and HTTP/1.1.
@Suite struct FCMFaultTests {
    @Test func theProjectQuotaRefusesSendsOverTheMinuteWithRetryAfter() throws {
        let fixture = try FCMFixture(faults: MockFCMFaultScript(projectQuotaPerMinute: 3))
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        let statuses = try (0..<4).map { try fixture.send(FCMFixture.message(token: "t\($0)"), bearer: bearer).status }
        #expect(statuses == [200, 200, 200, 429])
        let over = try fixture.send(FCMFixture.message(token: "t9"), bearer: bearer, http1: true)
        #expect(over.status == 429)
        #expect(over.errorStatus == "RESOURCE_EXHAUSTED")
        #expect(over.fcmErrorCode == "QUOTA_EXCEEDED")
        let retryAfter = try #require(over.headers["retry-after"].flatMap { Int($0) })
        #expect((1...60).contains(retryAfter))
        #expect(fixture.server.stats().quotaRejections == 2)
    }

    @Test func theDeviceQuotaIsEnforcedOnlyWhenAskedFor() throws {
        let fixture = try FCMFixture(faults: MockFCMFaultScript(deviceQuotaPerMinute: 2))
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        let send = { (token: String) in try fixture.send(FCMFixture.message(token: token), bearer: bearer).status }
        #expect(try [send("a"), send("a"), send("a")] == [200, 200, 200])
        try fixture.server.replaceFaults(MockFCMFaultScript(deviceQuota: true, deviceQuotaPerMinute: 2, deviceQuotaPerHour: 3))
        #expect(try [send("a"), send("a"), send("a"), send("b")] == [200, 200, 429, 200])
        // The hour counts as well as the minute, and a refused send is counted in neither.
        try fixture.server.replaceFaults(MockFCMFaultScript(deviceQuota: true, deviceQuotaPerMinute: 10, deviceQuotaPerHour: 2))
        let refused = try fixture.send(FCMFixture.message(token: "d"), bearer: bearer)
        #expect(refused.status == 200)
        #expect(try [send("d"), send("d"), send("d"), send("e")] == [200, 429, 429, 200])
        let over = try fixture.send(FCMFixture.message(token: "d"), bearer: bearer)
        #expect(over.fcmErrorCode == "QUOTA_EXCEEDED")
        #expect(over.headers["retry-after"].flatMap { Int($0) }.map { $0 > 60 } == true)  // the end of the hour, not the minute
        #expect(fixture.server.stats().quotaRejections == 4)
    }

    @Test func failFirstThrottleAndLatencyRulesActPerToken() throws {
        let fixture = try FCMFixture(faults: MockFCMFaultScript(rules: [
            MockFCMRule(fate: .delay, tokenPrefix: "slow", latencyMs: MockLatency(milliseconds: 300)),
            MockFCMRule(fate: .failFirst, tokenPrefix: "e5", count: 2, retryAfterSeconds: 3),
            MockFCMRule(fate: .throttle, tokenPrefix: "hot", limit: 1, windowSeconds: 600),
        ]))
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        let first = try fixture.send(FCMFixture.message(token: "e5-a"), bearer: bearer)
        #expect(first.status == 503)
        #expect(first.fcmErrorCode == "UNAVAILABLE")
        #expect(first.headers["retry-after"] == "3")
        #expect(try fixture.send(FCMFixture.message(token: "e5-a"), bearer: bearer, http1: true).status == 503)
        #expect(try fixture.send(FCMFixture.message(token: "e5-a"), bearer: bearer).status == 200)
        #expect(try fixture.send(FCMFixture.message(token: "e5-b"), bearer: bearer).status == 503)
        #expect(try fixture.send(FCMFixture.message(token: "hot-1"), bearer: bearer).status == 200)
        let throttled = try fixture.send(FCMFixture.message(token: "hot-1"), bearer: bearer)
        #expect(throttled.status == 429)
        #expect(throttled.headers["retry-after"].flatMap { Int($0) }.map { $0 > 500 } == true)
        let started = Date()
        #expect(try fixture.send(FCMFixture.message(token: "slow-1"), bearer: bearer, http1: true).status == 200)
        #expect(Date().timeIntervalSince(started) >= 0.3)  // a lower bound only: a loaded machine is slower, never faster
    }

    @Test func goawayAfterRequestsEndsTheConnectionAfterItsNthSendOnBothProtocols() throws {
        let fixture = try FCMFixture(faults: MockFCMFaultScript(goawayAfterRequests: 1))
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        let transfer = (url: fixture.server.sendURL(), method: "POST", headers: ["authorization: Bearer \(bearer)"], body: Optional(FCMFixture.message()))
        let before = fixture.server.stats().connectionsAccepted
        let h2 = try curl(caFile: fixture.caFile, [transfer, transfer])
        #expect(h2.map(\.status) == [200, 200])  // curl opens a new connection after the GOAWAY
        let h1 = try curl(caFile: fixture.caFile, [transfer, transfer], extra: ["--http1.1"])
        #expect(h1.map(\.status) == [200, 200])
        #expect(h1[0].headers["connection"] == "close")
        let stats = fixture.server.stats()
        #expect(stats.goawaysSent >= 2)
        #expect(stats.connectionsAccepted - before == 4)
        #expect(stats.accepted == 4)
    }

    @Test func dropAndSilenceLeaveTheClientWithoutAnAnswer() throws {
        let fixture = try FCMFixture(faults: MockFCMFaultScript(rules: [
            MockFCMRule(fate: .drop, tokenPrefix: "drop"),
            MockFCMRule(fate: .silence, tokenPrefix: "mute"),
            MockFCMRule(fate: .goaway, tokenPrefix: "away"),
        ]))
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        for http1 in [false, true] {
            for token in ["drop-1", "away-1"] {
                let answer = try curl(caFile: fixture.caFile, [(fixture.server.sendURL(), "POST", ["authorization: Bearer \(bearer)"], FCMFixture.message(token: token)),
                                                              (fixture.server.sendURL(), "POST", ["authorization: Bearer \(bearer)"], FCMFixture.message(token: "fine"))],
                                      extra: http1 ? ["--http1.1"] : [])
                #expect(answer[0].status == 0, "\(token) http1=\(http1)")
                #expect(answer[1].status == 200, "\(token) http1=\(http1): the next send goes through on a new connection")
            }
            // curl gives up after its --max-time (exit 28), having had no answer at all.
            #expect(throws: ProcessError.self) {
                try curl(caFile: fixture.caFile, [(fixture.server.sendURL(), "POST", ["authorization: Bearer \(bearer)"], FCMFixture.message(token: "mute-1"))],
                         extra: (http1 ? ["--http1.1"] : []) + ["--max-time", "1"])
            }
        }
        let stats = fixture.server.stats()
        #expect(stats.connectionsDropped == 2)
        #expect(stats.silencedRequests == 2)
        #expect(stats.accepted == 4)
    }

    @Test func http1HandlesExpectContinueAndKeepAlive() throws {
        let fixture = try FCMFixture()
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        let big = FCMFixture.message(token: "k1", extra: #","notification":{"body":"\#(String(repeating: "z", count: 3000))"}"#)
        let transfer = (url: fixture.server.sendURL(), method: "POST", headers: ["authorization: Bearer \(bearer)", "content-type: application/json"], body: Optional(big))
        let answers = try curl(caFile: fixture.caFile, [transfer, transfer, transfer], extra: ["--http1.1"])
        #expect(answers.map(\.status) == [200, 200, 200])
        let stats = fixture.server.stats()
        #expect(stats.http1Connections == 2)  // the token request's, and one kept alive for all three sends
        #expect(fixture.server.acceptedMessages().allSatisfy { $0.messageBytes.count > 3000 })
    }

    @Test func aBadConfigIsRefusedAndTheCommandReportsUsageErrors() throws {
        #expect(throws: SimulatorError.self) { try MockFCMFaultScript.parse(Data(#"{"rules":[{"fate":"throttle"}]}"#.utf8)) }
        #expect(throws: SimulatorError.self) { try MockFCMFaultScript.parse(Data(#"{"rules":[{"fate":"vanish"}]}"#.utf8)) }
        #expect(throws: SimulatorError.self) { try MockFCMFaultScript.parse(Data(#"{"projectQuotaPerMinute":-1}"#.utf8)) }
        #expect(MockFCMCommand.main(arguments: ["--bogus"]) == 64)
        #expect(MockFCMCommand.main(arguments: ["--cert", "a.pem"]) == 64)
        let directory = makeTemporaryDirectory("herald-sim-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try #"{"rules":[{"fate":"nope"}]}"#.write(toFile: directory + "/bad.json", atomically: true, encoding: .utf8)
        let options = try MockFCMOptions.parse(["--config", directory + "/bad.json", "--generate-tls", directory])
        #expect(SendAPICommand<MockFCMServer>.run(options) { _, _ in Issue.record("must not start") } == 78)
    }

    @Test func theConfigCanBeReplacedAtRunTimeThroughTheControlPath() throws {
        let fixture = try FCMFixture()
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        #expect(try fixture.send(FCMFixture.message(token: "dead-1"), bearer: bearer).status == 200)
        let posted = try curl(caFile: fixture.caFile, [(fixture.server.baseURL + "/_mock/config", "POST", [],
                                                        #"{"rules":[{"tokenPrefix":"dead","fate":"unregistered"}]}"#)])[0]
        #expect(posted.status == 200)
        #expect(try fixture.send(FCMFixture.message(token: "dead-1"), bearer: bearer).status == 404)
        let refused = try curl(caFile: fixture.caFile, [(fixture.server.baseURL + "/_mock/config", "POST", [], #"{"rules":[{"fate":"nope"}]}"#)])[0]
        #expect(refused.status == 400)
        #expect(fixture.server.faults().rules.first?.fate == .unregistered)
        #expect(try curl(caFile: fixture.caFile, [(fixture.server.baseURL + "/_mock/reset", "POST", [], "")])[0].status == 200)
        #expect(fixture.server.stats().requests == 0)
    }
}

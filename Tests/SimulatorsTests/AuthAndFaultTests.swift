import Foundation
import Testing
@testable import Simulators

/// Token auth rules and scripted device state, each with the exact answer of the reference.
@Suite("auth and faults")
struct AuthAndFaultTests {
    @Test func tokenRules() throws {
        let sandboxOnly = try MockProviderKey.generate(keyID: "SANDBOX001", teamID: "TEAM123456", environment: .sandbox)
        let limited = try MockProviderKey.generate(keyID: "LIMITED001", teamID: "TEAM123456", topics: ["com.other.app"])
        let fixture = try Fixture(extraKeys: [sandboxOnly, limited])
        defer { fixture.stop() }
        let unknown = try MockProviderKey.generate(keyID: "UNKNOWN001", teamID: "TEAM123456")
        let stale = wallClockSeconds() - 3700
        let cases: [(String?, Int, String)] = [
            (nil, 403, "MissingProviderToken"),
            ("bearer not.a.jwt", 403, "InvalidProviderToken"),
            ("Basic abc", 403, "InvalidProviderToken"),
            (try fixture.bearer(unknown), 403, "InvalidProviderToken"),
            ("bearer " + (try fixture.key.makeToken(teamID: "OTHERTEAM1")), 403, "InvalidProviderToken"),
            // An unknown key says InvalidProviderToken even when iat is stale.
            (try fixture.bearer(unknown, issuedAt: stale), 403, "InvalidProviderToken"),
            (try fixture.bearer(issuedAt: stale), 403, "ExpiredProviderToken"),
            (try fixture.bearer(sandboxOnly), 403, "BadEnvironmentKeyIdInToken"),
            (try fixture.bearer(limited), 400, "TopicDisallowed"),
        ]
        for (authorization, status, reason) in cases {
            var headers = try fixture.headers()
            headers.removeFirst()
            if let authorization { headers.append("authorization: \(authorization)") }
            let answer = try push(fixture, headers: headers)
            #expect(answer.status == status, "\(reason)")
            #expect(answer.reason == reason)
        }
        let allowed = try push(fixture, headers: ["authorization: \(try fixture.bearer(limited))", "apns-topic: com.other.app.voip", "apns-push-type: voip"])
        #expect(allowed.status == 200)
    }

    @Test func deviceStateAnswers() throws {
        let faults = MockFaultScript(rules: [
            MockFaultRule(fate: .unregistered, tokenPrefix: "dead", timestamp: 1_700_000_000_000),
            MockFaultRule(fate: .otherEnvironment, tokenPrefix: "5a"),
            MockFaultRule(fate: .otherTopic, token: "0f0f"),
            MockFaultRule(fate: .error, tokenPrefix: "e500", status: 500, reason: "InternalServerError"),
            MockFaultRule(fate: .error, tokenPrefix: "e503", status: 503, reason: "ServiceUnavailable"),
            MockFaultRule(fate: .expiredToken, tokenSuffix: "ee"),
        ])
        let fixture = try Fixture(faults: faults)
        defer { fixture.stop() }
        let expectations: [(String, Int, String)] = [
            ("deadbeef", 410, "Unregistered"), ("5a5a", 400, "BadDeviceToken"), ("0f0f", 400, "DeviceTokenNotForTopic"),
            ("e50001", 500, "InternalServerError"), ("e50301", 503, "ServiceUnavailable"), ("01ee", 410, "ExpiredToken"),
            ("0f0f0f", 200, ""),
        ]
        for (token, status, reason) in expectations {
            let answer = try push(fixture, token: token)
            #expect(answer.status == status, "\(token)")
            if status != 200 { #expect(answer.reason == reason, "\(token)") }
        }
        let gone = try push(fixture, token: "deadbeef")
        #expect(gone.body == #"{"reason":"Unregistered","timestamp":1700000000000}"#)
        #expect(fixture.server.stats().byStatus["410"] == 3)
    }

    @Test func failFirstThenDeliverAndThrottleThenDeliver() throws {
        let faults = MockFaultScript(rules: [
            MockFaultRule(fate: .failFirst, tokenPrefix: "f1", status: 500, reason: "InternalServerError", count: 2),
            MockFaultRule(fate: .throttle, tokenPrefix: "77", limit: 2, windowSeconds: 2),
        ])
        let fixture = try Fixture(faults: faults)
        defer { fixture.stop() }
        let flaky = try (0..<3).map { _ in try push(fixture, token: "f1f1") }
        #expect(flaky.map(\.status) == [500, 500, 200])
        #expect(flaky.first?.reason == "InternalServerError")
        // Another token of the same rule has its own count.
        #expect(try push(fixture, token: "f1f2").status == 500)
        // One curl process for the three, so they surely fall in one window even on a loaded machine.
        let busy = try curl(fixture, Array(repeating: (fixture.deviceURL("7777"), "POST", try fixture.headers(), #"{"aps":{}}"#), count: 3))
        #expect(busy.map(\.status) == [200, 200, 429])
        #expect(busy.last?.reason == "TooManyRequests")
        usleep(2_100_000)
        #expect(try push(fixture, token: "7777").status == 200)
        #expect(fixture.server.acceptedNotifications().filter { $0.token == "f1f1" }.count == 1)
    }

    @Test func latencyDelaysTheAnswer() throws {
        let fixture = try Fixture(faults: MockFaultScript(rules: [MockFaultRule(fate: .delay, tokenPrefix: "d1", latencyMs: MockLatency(milliseconds: 300))]))
        defer { fixture.stop() }
        let start = Date()
        #expect(try push(fixture, token: "d1d1").status == 200)
        #expect(Date().timeIntervalSince(start) >= 0.3)
    }

    @Test func seededRatesRepeat() throws {
        let script = MockFaultScript(seed: 42, rules: [MockFaultRule(fate: .error, rate: 0.5, status: 500, reason: "InternalServerError")])
        func run() -> [Bool] {
            let engine = APNsFaultEngine(script: script, defaultSeed: 1)
            return (0..<64).map { _ in if case .accept = engine.decide(token: "00", topic: "t").0 { return true } else { return false } }
        }
        let first = run()
        #expect(first == run())
        #expect(first.contains(true) && first.contains(false))
    }

    @Test func configParsingAndErrors() throws {
        let text = #"""
        {"seed": 7, "latencyMs": [1, 5], "goawayAfterRequests": 100, "rules": [
          {"tokenPrefix": "dead", "fate": "unregistered"},
          {"fate": "error", "status": 503, "reason": "ServiceUnavailable", "rate": 0.01}
        ]}
        """#
        let script = try MockFaultScript.parse(Data(text.utf8))
        #expect(script.seed == 7)
        #expect(script.latencyMs == MockLatency(min: 1, max: 5))
        #expect(script.rules.count == 2)
        #expect(script.rules[1].rate == 0.01)
        #expect(throws: SimulatorError.self) { try MockFaultScript.parse(Data(#"{"rules":[{"fate":"explode"}]}"#.utf8)) }
        #expect(throws: SimulatorError.self) { try MockFaultScript.parse(Data(#"{"rules":[{"fate":"error"}]}"#.utf8)) }
        #expect(throws: SimulatorError.self) { try MockFaultScript.parse(Data("not json".utf8)) }
    }
}

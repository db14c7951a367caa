import Foundation
import HeraldTestSupport
import Testing
@testable import Simulators

/// The Push Kit simulator's flow control and scripted faults, driven by curl.
@Suite struct HMSFaultTests {
    @Test func theAppQuotaAnswers503FlowControlPastItsLimit() throws {
        let fixture = try HMSFixture(faults: MockHMSFaultScript(appQuota: MockHMSQuota(limit: 2, windowSeconds: 60)))
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        let codes = try (0..<3).map { _ in try fixture.send(HMSFixture.message(), bearer: bearer) }
        #expect(codes.map(\.status) == [200, 200, 503])
        #expect(codes[2].hmsCode == "81000001")
        #expect(codes[2].headers["retry-after"] == nil)
        // Another app has its own quota.
        #expect(try fixture.send(HMSFixture.message(), bearer: try fixture.accessToken(app: "20000002", secret: "other"), app: "20000002").status == 200)
        let stats = fixture.server.stats()
        #expect(stats.flowControlled == 1)
        #expect(stats.accepted == 3)
    }

    @Test func aPerTokenQuotaCountsEveryTokenOfASend() throws {
        let fixture = try HMSFixture(faults: MockHMSFaultScript(appQuota: MockHMSQuota(limit: 5, windowSeconds: 60, perToken: true)))
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        #expect(try fixture.send(HMSFixture.message(["a", "b", "c", "d"]), bearer: bearer).status == 200)
        // Two more would make six: refused whole, and not counted, so one more still passes.
        #expect(try fixture.send(HMSFixture.message(["e", "f"]), bearer: bearer).status == 503)
        #expect(try fixture.send(HMSFixture.message(["g"]), bearer: bearer).status == 200)
    }

    @Test func scriptedErrorsFailFirstAndDropAct() throws {
        let fixture = try HMSFixture(faults: MockHMSFaultScript(rules: [
            MockHMSRule(fate: .error, tokenPrefix: "boom-"),
            MockHMSRule(fate: .failFirst, tokenPrefix: "flaky-", count: 2),
            MockHMSRule(fate: .tokenExpired, token: "stale-1"),
            MockHMSRule(fate: .drop, tokenPrefix: "drop-"),
        ]))
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        let boom = try fixture.send(HMSFixture.message(["ok-1", "boom-1"]), bearer: bearer)
        #expect(boom.status == 500)
        #expect(boom.hmsCode == "81000001")
        #expect(boom.hmsMsg == "System internal error")
        let flaky = try (0..<3).map { _ in try fixture.send(HMSFixture.message(["flaky-1"]), bearer: bearer).status }
        #expect(flaky == [503, 503, 200])
        #expect(try fixture.send(HMSFixture.message(["stale-1"]), bearer: bearer).hmsCode == "80200003")
        let headers = ["authorization: Bearer \(bearer)", "content-type: application/json"]
        let pair = try curl(caFile: fixture.caFile, [(fixture.server.sendURL(), "POST", headers, HMSFixture.message(["drop-1"])),
                                                    (fixture.server.sendURL(), "POST", headers, HMSFixture.message(["ok-2"]))])
        #expect(pair[0].status == 0)
        #expect(pair[1].hmsCode == "80000000", "the next send goes through on a new connection")
        let stats = fixture.server.stats()
        #expect(stats.connectionsDropped == 1)
        #expect(stats.requests == 7)
        #expect(stats.accepted == 2)
    }

    @Test func aScriptLoadsThroughTheControlPathAndDelayAddsLatency() throws {
        let fixture = try HMSFixture()
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        let script = #"{"invalidTokens":["gone-1"],"rules":[{"fate":"delay","latencyMs":300},{"fate":"flowControl","app":"20000002"}]}"#
        let load = try curl(caFile: fixture.caFile, [(fixture.server.baseURL + "/_mock/config", "POST", [], script)])[0]
        #expect(load.status == 200)
        let start = Date()
        let answer = try fixture.send(HMSFixture.message(["gone-1"]), bearer: bearer)
        #expect(Date().timeIntervalSince(start) >= 0.3)
        #expect(answer.hmsCode == "80300007")
        let bad = try curl(caFile: fixture.caFile, [(fixture.server.baseURL + "/_mock/config", "POST", [], #"{"rules":[{"fate":"throttle"}]}"#)])[0]
        #expect(bad.status == 400)
        #expect(fixture.server.faults().invalidTokens == ["gone-1"])
    }

    @Test func aBadConfigIsRefusedAndTheCommandReportsUsageErrors() throws {
        #expect(throws: SimulatorError.self) { try MockHMSFaultScript.parse(Data(#"{"rules":[{"fate":"error","code":"81"}]}"#.utf8)) }
        #expect(throws: SimulatorError.self) { try MockHMSFaultScript.parse(Data(#"{"appQuota":{"limit":1,"windowSeconds":0}}"#.utf8)) }
        #expect(MockHMSCommand.main(arguments: ["--app", "abc:secret"]) == 64)
        #expect(MockHMSCommand.main(arguments: ["--app", "123"]) == 64)
        #expect(MockHMSCommand.main(arguments: ["--cert", "a.pem"]) == 64)
        let directory = makeTemporaryDirectory("herald-sim-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try #"{"rules":[{"fate":"nope"}]}"#.write(toFile: directory + "/bad.json", atomically: true, encoding: .utf8)
        let options = try MockHMSOptions.parse(["--config", directory + "/bad.json", "--generate-tls", directory])
        #expect(SendAPICommand<MockHMSServer>.run(options) { _, _ in Issue.record("must not start") } == 78)
    }
}

import Foundation
import Testing
@testable import Simulators

/// SETTINGS, GOAWAY, RST_STREAM, silence and drops, seen by an independent python3-h2 peer.
@Suite("connection behaviour")
struct ConnectionBehaviourTests {
    @Test func streamsStayAtOneUntilAValidTokenThenRise() throws {
        let fixture = try Fixture { $0.maxConcurrentStreams = 7 }
        defer { fixture.stop() }
        let impostor = try MockProviderKey.generate(keyID: "KEY1234567", teamID: "TEAM123456")
        let report = try H2Peer.run(fixture, [
            try H2Peer.push(fixture, authorization: try fixture.bearer(impostor)),
            try H2Peer.push(fixture),
            try H2Peer.push(fixture),
        ])
        #expect(report.settings == [1, 7])
        #expect(report.stream(1)?.status == 403)
        #expect(report.stream(3)?.status == 200)
        #expect(report.stream(5)?.status == 200)
        // Two different token strings on one connection, but the rejected one was never adopted: one switch only.
        #expect(fixture.server.stats().tokenVerifications == 2)
    }

    @Test func streamsDropToOneAfterARejectionWhenAsked() throws {
        let faults = MockFaultScript(dropStreamsAfterRejection: true, rules: [MockFaultRule(fate: .unregistered, tokenPrefix: "dead")])
        let fixture = try Fixture(faults: faults) { $0.maxConcurrentStreams = 9 }
        defer { fixture.stop() }
        let report = try H2Peer.run(fixture, [
            try H2Peer.push(fixture),
            try H2Peer.push(fixture, token: "deadbeef"),
            try H2Peer.push(fixture),
        ])
        #expect(report.settings == [1, 9, 1, 9])
        #expect(report.stream(3)?.status == 410)
    }

    @Test func goawayAfterNRequestsCarriesReasonAndLastStream() throws {
        let fixture = try Fixture(faults: MockFaultScript(goawayAfterRequests: 2, goawayReason: "Shutdown"))
        defer { fixture.stop() }
        let report = try H2Peer.run(fixture, [
            try H2Peer.push(fixture),
            try H2Peer.push(fixture, wait: false),
            try H2Peer.push(fixture, wait: false),
        ])
        let goaway = try #require(report.goaway)
        #expect(goaway.last_stream_id == 3)
        #expect(goaway.error_code == 0)
        #expect(goaway.data == #"{"reason":"Shutdown"}"#)
        #expect(report.stream(1)?.status == 200)
        #expect(report.stream(3)?.status == 200)
        #expect(report.stream(5)?.status == nil)
        #expect(fixture.server.stats().goawaysSent == 1)
    }

    @Test func goawayRuleForAToken() throws {
        let fixture = try Fixture(faults: MockFaultScript(rules: [MockFaultRule(fate: .goaway, tokenPrefix: "0bad", reason: "Shutdown")]))
        defer { fixture.stop() }
        let report = try H2Peer.run(fixture, [try H2Peer.push(fixture), try H2Peer.push(fixture, token: "0bad00")])
        #expect(report.stream(1)?.status == 200)
        #expect(report.goaway?.last_stream_id == 1)
        #expect(report.goaway?.data == #"{"reason":"Shutdown"}"#)
        #expect(report.stream(3)?.status == nil)
    }

    @Test func refusedStreamAndSilenceAndDrop() throws {
        let fixture = try Fixture(faults: MockFaultScript(rules: [
            MockFaultRule(fate: .refuseStream, tokenPrefix: "aa"),
            MockFaultRule(fate: .silence, tokenPrefix: "bb"),
            MockFaultRule(fate: .drop, tokenPrefix: "cc"),
        ]))
        defer { fixture.stop() }
        let refused = try H2Peer.run(fixture, [try H2Peer.push(fixture), try H2Peer.push(fixture, token: "aa11")])
        #expect(refused.stream(3)?.reset == 7)  // REFUSED_STREAM
        #expect(refused.stream(3)?.status == nil)
        let silent = try H2Peer.run(fixture, [try H2Peer.push(fixture, token: "bb11", timeout: 0.5)])
        #expect(silent.timeouts == [1])
        #expect(!silent.closed)
        let dropped = try H2Peer.run(fixture, [try H2Peer.push(fixture), try H2Peer.push(fixture, token: "cc11")])
        #expect(dropped.stream(1)?.status == 200)
        #expect(dropped.closed)
        #expect(dropped.goaway == nil)
        let stats = fixture.server.stats()
        #expect(stats.refusedStreams == 1)
        #expect(stats.silencedRequests == 1)
        #expect(stats.connectionsDropped == 1)
    }

    @Test func dropAfterRequestsAnswersNThenCloses() throws {
        let fixture = try Fixture(faults: MockFaultScript(dropAfterRequests: 2))
        defer { fixture.stop() }
        let report = try H2Peer.run(fixture, [try H2Peer.push(fixture), try H2Peer.push(fixture), try H2Peer.push(fixture)])
        #expect(report.stream(1)?.status == 200)
        #expect(report.stream(3)?.status == 200)
        #expect(report.stream(5)?.status == nil)
        #expect(report.closed)
        // Pipelined: the answer to request 2 still goes out before the drop triggered by request 3.
        let pipelined = try H2Peer.run(fixture, [try H2Peer.push(fixture), try H2Peer.push(fixture, wait: false), try H2Peer.push(fixture, wait: false)])
        #expect(pipelined.stream(3)?.status == 200)
        #expect(pipelined.stream(5)?.status == nil)
        #expect(pipelined.closed)
        #expect(fixture.server.stats().connectionsDropped == 2)
    }

    @Test func idleConnectionsGetGoawayIdleTimeout() throws {
        let fixture = try Fixture(faults: MockFaultScript(idleTimeoutSeconds: 0.3))
        defer { fixture.stop() }
        let report = try H2Peer.run(fixture, [try H2Peer.push(fixture), try H2Peer.push(fixture, pause: 1.0)])
        #expect(report.stream(1)?.status == 200)
        #expect(report.goaway?.last_stream_id == 1)
        #expect(report.goaway?.data == #"{"reason":"IdleTimeout"}"#)
        #expect(report.stream(3) == nil)
    }

    @Test func unrelatedKeyAndTokenUpdatesOnOneConnection() throws {
        let second = try MockProviderKey.generate(keyID: "KEY7654321", teamID: "TEAM123456")
        let fixture = try Fixture(extraKeys: [second]) { $0.tokenUpdateWindowSeconds = 1.5 }
        defer { fixture.stop() }
        let now = wallClockSeconds()
        let refreshed = try fixture.bearer(issuedAt: now - 1)
        let report = try H2Peer.run(fixture, [
            try H2Peer.push(fixture, authorization: try fixture.bearer(issuedAt: now)),
            try H2Peer.push(fixture, authorization: try fixture.bearer(second)),
            try H2Peer.push(fixture, authorization: try fixture.bearer(issuedAt: now - 1)),
            try H2Peer.push(fixture, authorization: refreshed, pause: 1.7),
            try H2Peer.push(fixture, authorization: refreshed),
        ])
        #expect(report.stream(1)?.status == 200)
        #expect(report.stream(3)?.status == 403)
        #expect(report.stream(3)?.body == #"{"reason":"UnrelatedKeyIdInToken"}"#)
        #expect(report.stream(5)?.status == 429)
        #expect(report.stream(5)?.body == #"{"reason":"TooManyProviderTokenUpdates"}"#)
        #expect(report.stream(7)?.status == 200)
        #expect(report.stream(9)?.status == 200)
        #expect(fixture.server.stats().tokenVerifications == 4)
    }
}

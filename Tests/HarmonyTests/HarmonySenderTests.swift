import Foundation
import Harmony
import HeraldTestSupport
import PushCore
import Simulators
import Testing

/// `HarmonySender` against the Push Kit v3 simulator over HTTP/2: the request as Push Kit wants it (path, JWT,
/// `push-type`, the producer's bytes), the answers in their classes, the JWT reused and signed anew when refused.
@Suite(.serialized) struct HarmonySenderTests {
    @Test func aSendCarriesTheJobsBytesAndItsScenario() throws {
        let fixture = try HarmonyFixture()
        let payload = #"{"notification":{"category":"MARKETING","title":"Shipped","body":"Order 17","clickAction":{"actionType":0}}}"#
        let result = try fixture.send(tokens: ["MAMz-1"], payload: payload, pushType: .liveView, pushOptions: #"{"ttl":60,"biTag":"orders"}"#)
        let answer = try #require(result.harmony, "\(result)")
        #expect(answer.code == "80000000" && answer.answerClass == .delivered)
        #expect(answer.resultFields.messageName?.isEmpty == false)
        let sent = try #require(fixture.server.acceptedMessages().first)
        #expect(sent.payload == payload && sent.pushOptions == #"{"ttl":60,"biTag":"orders"}"#)
        #expect(sent.pushType == 7 && sent.tokens == ["MAMz-1"] && sent.transport == "h2" && sent.project == fixture.server.account.projectID)
    }

    @Test func aManyTokenSendNamesItsBadTokens() throws {
        let fixture = try HarmonyFixture(faults: MockHMSFaultScript(invalidTokenPrefixes: ["gone-"]))
        let partial = try #require(try fixture.send(tokens: ["ok-1", "gone-1", "ok-2"]).harmony)
        #expect(partial.code == "80100000" && partial.answerClass == .delivered)
        #expect(partial.resultFields.goneTokens == ["gone-1"])
        let all = try #require(try fixture.send(tokens: ["gone-2", "gone-3"]).harmony)
        #expect(all.code == "80300007" && all.resultFields.goneTokens == ["gone-2", "gone-3"])
        guard case .dropToken = all.answerClass else { Issue.record("80300007: \(all.answerClass)"); return }
    }

    @Test func theJWTIsReusedThenSignedAnewWhenRefused() throws {
        let fixture = try HarmonyFixture()
        for index in 0..<3 { #expect(try fixture.send(tokens: ["t\(index)"]).harmony?.code == "80000000") }
        #expect(try fixture.signed() == 1, "one JWT for three sends")
        fixture.server.expireAccessTokens()
        let expired = try #require(try fixture.send(tokens: ["t3"]).harmony)
        #expect(expired.code == "80200003" && expired.answerClass == .resendNow(freshConnection: false, refreshToken: true))
        #expect(try fixture.send(tokens: ["t3"]).harmony?.code == "80000000")
        #expect(try fixture.signed() == 2, "a new JWT after the refusal")
    }

    /// A key Push Kit does not know: refused, signed anew once, refused again: the app is parked.
    @Test func aKeyPushKitDoesNotKnowParksTheApp() throws {
        let fixture = try HarmonyFixture(foreignKey: true)
        let first = try #require(try fixture.send(tokens: ["t"]).harmony)
        #expect(first.code == "80200001" && first.answerClass == .resendNow(freshConnection: false, refreshToken: true))
        let parked = try #require(try fixture.send(tokens: ["t"]).harmony)
        guard case .deferForConfiguration = parked.answerClass else { Issue.record("refused twice: \(parked.answerClass)"); return }
        #expect(fixture.server.acceptedMessages().isEmpty)
    }

    /// Two projects in one sender, each with its own key and JWT: a refused key parks its app only.
    @Test func severalProjectsInOneSenderAndARefusedKeyParksOnlyItsApp() throws {
        let fixture = try HarmonyFixture(foreignKey: true, projects: 2)
        #expect(try fixture.send(tokens: ["b1"], app: 1).harmony?.code == "80000000")
        _ = try fixture.send(tokens: ["a1"], app: 0)
        let parked = try #require(try fixture.send(tokens: ["a1"], app: 0).harmony)
        guard case .deferForConfiguration = parked.answerClass else { Issue.record("app 0: \(parked.answerClass)"); return }
        #expect(try fixture.send(tokens: ["b2"], app: 1).harmony?.code == "80000000")
        #expect(fixture.server.acceptedMessages().map(\.project) == Array(repeating: fixture.server.accounts[1].projectID, count: 2))
    }

    @Test func flowControlSlowsTheApp() throws {
        let fixture = try HarmonyFixture(faults: MockHMSFaultScript(appQuota: MockHMSQuota(limit: 1, windowSeconds: 60)))
        #expect(try fixture.send(tokens: ["a"]).harmony?.code == "80000000")
        let throttled = try #require(try fixture.send(tokens: ["b"]).harmony)
        #expect(throttled.status == 503)
        guard case .throttled(_, _, true) = throttled.answerClass else { Issue.record("503: \(throttled.answerClass)"); return }
    }
}

import Foundation
import Testing
@testable import Simulators

/// Debian's curl (built with nghttp2) is an HTTP/2 client nobody here wrote: it must get the answers the reference gives.
@Suite("curl against the simulator")
struct CurlAgreementTests {
    @Test func validPushIsAcceptedAndApnsIdEchoed() throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let id = "8e7b1a6c-3d2f-4a5b-9c8d-7e6f5a4b3c2d"
        let answer = try push(fixture, extraHeaders: ["apns-id: \(id)", "apns-priority: 10", "apns-expiration: 0"])
        #expect(answer.status == 200)
        #expect(answer.headers["apns-id"] == id)
        #expect(answer.body.isEmpty)
        #expect(answer.headers["apns-unique-id"] == nil)
        let accepted = fixture.server.acceptedNotifications()
        #expect(accepted.count == 1)
        #expect(accepted.first?.token == Fixture.token)
        #expect(accepted.first?.apnsID == id)
        #expect(accepted.first?.payloadBytes == #"{"aps":{"alert":"hi"}}"#.utf8.count)
        let stats = fixture.server.stats()
        #expect(stats.accepted == 1)
        #expect(stats.byStatus["200"] == 1)
        #expect(stats.tokenVerifications == 1)
    }

    @Test func generatedApnsIdIsLowercaseUUIDAndSandboxAddsUniqueId() throws {
        let fixture = try Fixture { $0.environment = .sandbox }
        defer { fixture.stop() }
        let answer = try push(fixture)
        #expect(answer.status == 200)
        let id = try #require(answer.headers["apns-id"])
        #expect(RequestRules.isUUID(id))
        #expect(id == id.lowercased())
        #expect(answer.headers["apns-unique-id"].map(RequestRules.isUUID) == true)
    }

    @Test func wrongKeyGetsInvalidProviderToken() throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let impostor = try MockProviderKey.generate(keyID: fixture.key.keyID, teamID: fixture.key.teamID)
        let answer = try push(fixture, headers: try fixture.headers(authorization: try fixture.bearer(impostor)))
        #expect(answer.status == 403)
        #expect(answer.reason == "InvalidProviderToken")
        #expect(answer.headers["apns-id"] != nil)
        #expect(fixture.server.stats().byReason["InvalidProviderToken"] == 1)
        #expect(fixture.server.acceptedNotifications().isEmpty)
    }

    /// Each header and payload rule of the reference, with Apple's status and reason.
    @Test(arguments: [
        (["apns-push-type: alert", "apns-topic: com.example.app", "apns-priority: 7"], #"{"aps":{}}"#, 400, "BadPriority"),
        (["apns-push-type: background", "apns-topic: com.example.app", "apns-priority: 10"], #"{"aps":{"content-available":1}}"#, 400, "BadPriority"),
        (["apns-push-type: background", "apns-topic: com.example.app", "apns-priority: 5"], #"{"aps":{"content-available":1}}"#, 200, ""),
        (["apns-push-type: alert", "apns-topic: com.example.app", "apns-expiration: soon"], #"{"aps":{}}"#, 400, "BadExpirationDate"),
        (["apns-push-type: alert", "apns-topic: com.example.app", "apns-collapse-id: \(String(repeating: "c", count: 65))"], #"{"aps":{}}"#, 400, "BadCollapseId"),
        (["apns-push-type: alert", "apns-topic: com.example.app", "apns-collapse-id: \(String(repeating: "c", count: 64))"], #"{"aps":{}}"#, 200, ""),
        (["apns-push-type: alert", "apns-topic: com.example.app", "apns-id: not-a-uuid"], #"{"aps":{}}"#, 400, "BadMessageId"),
        (["apns-push-type: shout", "apns-topic: com.example.app"], #"{"aps":{}}"#, 400, "InvalidPushType"),
        (["apns-topic: com.example.app"], #"{"aps":{}}"#, 400, "MissingPushType"),
        (["apns-push-type: alert"], #"{"aps":{}}"#, 400, "MissingTopic"),
        (["apns-push-type: voip", "apns-topic: com.example.app"], #"{"aps":{}}"#, 400, "BadTopic"),
        (["apns-push-type: voip", "apns-topic: com.example.app.voip"], #"{"aps":{}}"#, 200, ""),
        (["apns-push-type: alert", "apns-topic: com.example.app.voip"], #"{"aps":{}}"#, 400, "BadTopic"),
        (["apns-push-type: liveactivity", "apns-topic: com.example.app.push-type.liveactivity"], #"{"aps":{}}"#, 200, ""),
        (["apns-push-type: complication", "apns-topic: com.example.app.complication"], #"{"aps":{}}"#, 200, ""),
        (["apns-push-type: location", "apns-topic: com.example.app"], #"{"aps":{}}"#, 400, "BadTopic"),
        (["apns-push-type: alert", "apns-topic: com.example.app"], "", 400, "PayloadEmpty"),
        (["apns-push-type: alert", "apns-topic: com.example.app"], "[1,2]", 400, "BadRequestPayload"),
        (["apns-push-type: alert", "apns-topic: com.example.app"], #"{"aps":"#, 400, "BadRequestPayload"),
        (["apns-push-type: alert", "apns-topic: com.example.app"], #"{"aps":{"alert":"\#(String(repeating: "x", count: 4100))"}}"#, 413, "PayloadTooLarge"),
        (["apns-push-type: voip", "apns-topic: com.example.app.voip"], #"{"aps":{},"x":"\#(String(repeating: "x", count: 4100))"}"#, 200, ""),
        (["apns-push-type: alert", "apns-topic: com.example.app", "apns-topic: com.example.app"], #"{"aps":{}}"#, 400, "DuplicateHeaders"),
    ] as [([String], String, Int, String)])
    func headerRules(headers: [String], body: String, status: Int, reason: String) throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let answer = try push(fixture, headers: ["authorization: \(try fixture.bearer())"] + headers, body: body)
        #expect(answer.status == status, "\(headers)")
        if status != 200 { #expect(answer.reason == reason, "\(headers)") }
    }

    @Test func pathAndMethodRules() throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let headers = try fixture.headers()
        let answers = try curl(fixture, [
            (fixture.url + "/3/devices/abcd", "POST", headers, "{}"),
            (fixture.deviceURL(), "GET", headers, nil),
            (fixture.url + "/3/device/", "POST", headers, "{}"),
            (fixture.deviceURL("abc"), "POST", headers, "{}"),
            (fixture.deviceURL("zz00"), "POST", headers, "{}"),
            (fixture.deviceURL(), "POST", headers, "{}"),
        ])
        #expect(answers.map(\.status) == [404, 405, 400, 400, 400, 200])
        #expect(answers.map(\.reason) == ["BadPath", "MethodNotAllowed", "MissingDeviceToken", "BadDeviceToken", "BadDeviceToken", nil])
    }
}

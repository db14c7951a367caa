import APNs
import FCM
import HMS
import PushCore
import RedisQueue
import Testing
import WebPush
@testable import Worker

/// The provider's id of a message is in the neutral `message_id` whichever provider answered, while `apns_id` and
/// the deprecated `fcm_name` are written as before for the consumers that read them (docs/results.md).
@Suite struct MessageIDTests {
    @Test func everyProvidersMessageIDIsInMessageIDBesideTheFieldsItWroteBefore() throws {
        var huawei = Configuration.AppSettings(name: "huawei", bundleID: "")
        huawei.hms = HMSAuth(appID: "10", clientSecretFile: "/unused")
        let rig = CoreRig(apps: [Configuration.AppSettings(name: "shop", bundleID: "com.example.shop"),
                                 Configuration.AppSettings(name: "android", bundleID: "", fcm: .init(serviceAccountFile: "/unused.json")),
                                 WebPushOriginPauseTests.app, huawei])
        rig.start()
        rig.answerClaim([rig.job(1), rig.job(2), rig.lease(#"{"id":"f1","platform":"fcm","message":{"token":"tok-1:APA91b"}}"#),
                         WebPushOriginPauseTests.job(rig, 1, origin: 0),
                         rig.lease(#"{"id":"h1","platform":"hms","app":"huawei","message":{"data":"x","token":["a"]}}"#),
                         rig.lease(#"{"id":"h2","platform":"hms","app":"huawei","message":{"data":"x","token":["b"]}}"#)])
        func answer(_ id: String, _ result: DeliveryResult) throws {
            let job = try #require(rig.sends.first { $0.id == id }, "\(id) was not sent: \(rig.sends.map(\.id))")
            rig.sends.removeAll { $0 === job }
            rig.core.answered(job, PushOutcome(result: result, connectionID: 1))
            rig.drain()
        }
        // Each destination's probe first; the second job of APNs and of Push Kit after it.
        try answer("j1", .response(APNsResponse(status: 200, apnsID: "a-1")))
        try answer("f1", .fcm(FCMResponse(status: 200, name: "projects/p/messages/1")))
        try answer("w1", .answer(WebPushResponse(status: 201, location: "https://a.push.example/m/w-1")))
        try answer("h1", .hms(HMSResponse.decode(status: 200, body: Array(#"{"code":"80000000","msg":"Success","requestId":"r-1"}"#.utf8))))
        try answer("j2", .response(APNsResponse(status: 400, apnsID: "a-2", reason: .deviceTokenNotForTopic)))
        try answer("h2", .hms(HMSResponse.decode(status: 400, body: Array(#"{"code":"80100003","msg":"Illegal message structure","requestId":"r-2"}"#.utf8))))
        rig.recordAllKeepingResults()
        let byID = Dictionary(rig.results.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byID.count == 6 && byID.values.allSatisfy { $0.outcome.isTerminal }, "\(byID)")

        #expect(byID.mapValues(\.messageID) == ["j1": "a-1", "j2": "a-2", "f1": "projects/p/messages/1", "w1": "w-1", "h1": "r-1", "h2": "r-2"])
        // As before: apns_id on every APNs answer's entry, fcm_name on the other providers' delivered entries.
        #expect(byID.compactMapValues(\.apnsID) == ["j1": "a-1", "j2": "a-2"])
        #expect(byID.compactMapValues(\.fcmName) == ["f1": "projects/p/messages/1", "w1": "w-1", "h1": "r-1"])
        #expect(byID["j2"]?.outcome == .failed && byID["h2"]?.outcome == .failed)
        // Written to the stream after every field that was there before.
        let fields = try #require(byID["j1"]).fields
        #expect(fields.last! == ("message_id", "a-1") && fields.contains { $0 == ("apns_id", "a-1") }, "\(fields)")
    }
}

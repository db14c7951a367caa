import Harmony
import HeraldTestSupport
import PushCore
import Testing

/// A neutral notification rendered as a HarmonyOS Push Kit v3 alert (docs/notifications.md).
@Suite struct HarmonyRenderTests {
    private func render(_ n: NeutralNotification, locale: String? = nil) throws -> JSONValue? {
        JSONValue(parsing: try HarmonyProvider.render(n, for: RenderDevice(app: "harmony", token: "MAMzLgIBADAK", locale: locale)))
    }

    @Test func aFullNotificationLandsInThePayloadsNotification() throws {
        let expected: JSONValue = [
            "platform": "harmony", "app": "harmony", "token": "MAMzLgIBADAK", "push_type": "alert",
            "payload": ["notification": [
                "category": "MARKETING", "title": "Versandt", "body": "Kommt Dienstag", "image": "https://cdn.example.com/17.png",
                "badge": ["setNum": 3],
                "clickAction": ["actionType": 1, "uri": "https://shop.example.com/orders/17", "data": ["order": "17"]],
            ]],
        ]
        #expect(try render(NotificationFixtures.full, locale: "DE") == expected)
    }

    @Test func aTitleAloneOpensTheAppsHome() throws {
        let expected: JSONValue = [
            "platform": "harmony", "app": "harmony", "token": "MAMzLgIBADAK", "push_type": "alert",
            "payload": ["notification": ["category": "MARKETING", "title": "Hi", "clickAction": ["actionType": 0]]],
        ]
        #expect(try render(NotificationFixtures.minimal) == expected)
    }

    @Test func theCategoryIsTheClickActionsActionAndAnOverrideSetsPushKitsCategory() throws {
        var n = NotificationFixtures.minimal
        n.category = "ORDER"
        n.sound = "chime.mp3"
        n.overrides = [.harmony: ["payload": ["notification": ["category": "EXPRESS"]], "pushOptions": ["ttl": 3600]]]
        let job = try #require(try render(n))
        #expect(job["payload"]?["notification"] == ["category": "EXPRESS", "title": "Hi", "sound": "chime.mp3", "clickAction": ["actionType": 1, "action": "ORDER"]])
        #expect(job["pushOptions"] == ["ttl": 3600])
    }
}

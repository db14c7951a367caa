import Expo
import HeraldTestSupport
import PushCore
import Testing

/// A neutral notification rendered as an Expo message (docs/notifications.md).
@Suite struct ExpoRenderTests {
    static let token = "ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]"

    private func render(_ n: NeutralNotification, locale: String? = nil) throws -> JSONValue? {
        JSONValue(parsing: try ExpoProvider.render(n, for: RenderDevice(app: "rn-app", token: Self.token, locale: locale)))
    }

    @Test func aFullNotificationLandsInExposMessage() throws {
        let expected: JSONValue = [
            "platform": "expo", "app": "rn-app", "to": .string(Self.token),
            "payload": [
                "title": "Shipped", "subtitle": "Order 17", "body": "Arrives Tuesday", "sound": "default", "badge": 3, "categoryId": "ORDER",
                "data": ["order": "17", "url": "https://shop.example.com/orders/17"], "priority": "high", "interruptionLevel": "time-sensitive",
                "richContent": ["image": "https://cdn.example.com/17.png"], "mutableContent": true,
            ],
        ]
        #expect(try render(NotificationFixtures.full) == expected)
    }

    @Test func aTitleAloneIsAMessageWithItsTitle() throws {
        #expect(try render(NotificationFixtures.minimal) == ["platform": "expo", "app": "rn-app", "to": .string(Self.token), "payload": ["title": "Hi"]])
    }

    @Test func everyRenderedMessagePassesExposRules() throws {
        for n in [NotificationFixtures.full, NotificationFixtures.minimal] {
            let payload = try #require(try render(n)?["payload"])
            #expect(ExpoMessageRules.validate(payload.bytes) == nil)
        }
    }
}

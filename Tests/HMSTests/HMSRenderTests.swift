import HMS
import HeraldTestSupport
import PushCore
import Testing

/// A neutral notification rendered as a Push Kit v1 message (docs/notifications.md).
@Suite struct HMSRenderTests {
    private func render(_ n: NeutralNotification, locale: String? = nil) throws -> JSONValue? {
        JSONValue(parsing: try HMSProvider.render(n, for: RenderDevice(app: "huawei", token: "IQAAAACy0kYk", locale: locale)))
    }

    @Test func aFullNotificationLandsInNotificationAndroidAndTheDataString() throws {
        let expected: JSONValue = [
            "platform": "hms", "app": "huawei",
            "message": [
                "token": ["IQAAAACy0kYk"],
                "notification": ["title": "Shipped", "body": "Arrives Tuesday", "image": "https://cdn.example.com/17.png"],
                "data": #"{"order":"17"}"#,
                "android": ["urgency": "HIGH",
                            "notification": ["click_action": ["type": 2, "url": "https://shop.example.com/orders/17"], "default_sound": true, "tag": "orders"]],
            ],
        ]
        #expect(try render(NotificationFixtures.full, locale: "fr") == expected)
    }

    @Test func aTitleAloneOpensTheApp() throws {
        let expected: JSONValue = [
            "platform": "hms", "app": "huawei",
            "message": ["token": ["IQAAAACy0kYk"], "notification": ["title": "Hi"], "android": ["notification": ["click_action": ["type": 3]]]],
        ]
        #expect(try render(NotificationFixtures.minimal) == expected)
    }

    @Test func theClickActionIsTheLinkThenTheCategoryAndASoundIsNamedOrTheDefault() throws {
        func android(_ change: (inout NeutralNotification) -> Void) throws -> JSONValue? {
            var n = NotificationFixtures.minimal
            change(&n)
            return try render(n)?["message"]?["android"]?["notification"]
        }
        #expect(try android { $0.url = "myshop://orders/17"; $0.category = "ORDER" } == ["click_action": ["type": 1, "intent": "myshop://orders/17"]])
        #expect(try android { $0.category = "ORDER" } == ["click_action": ["type": 1, "action": "ORDER"]])
        #expect(try android { $0.sound = "chime" } == ["click_action": ["type": 3], "sound": "chime", "default_sound": false])
    }
}

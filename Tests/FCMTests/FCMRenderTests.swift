import FCM
import HeraldTestSupport
import PushCore
import Testing

/// A neutral notification rendered as an FCM v1 message (docs/notifications.md).
@Suite struct FCMRenderTests {
    private func render(_ n: NeutralNotification, locale: String? = nil) throws -> JSONValue? {
        JSONValue(parsing: try FCMProvider.render(n, for: RenderDevice(app: "android", token: "dGVzdA:APA91b", locale: locale, id: "n-1")))
    }

    @Test func aFullNotificationLandsInNotificationAndroidApnsWebpushAndData() throws {
        let expected: JSONValue = [
            "platform": "fcm", "app": "android", "id": "n-1",
            "message": [
                "token": "dGVzdA:APA91b",
                "notification": ["title": "Enviado", "body": "Arrives Tuesday", "image": "https://cdn.example.com/17.png"],
                "data": ["order": "17", "url": "https://shop.example.com/orders/17"],
                "android": ["collapse_key": "order-17", "priority": "HIGH",
                            "notification": ["sound": "default", "tag": "orders", "click_action": "ORDER", "notification_count": 3]],
                "apns": [
                    "headers": ["apns-collapse-id": "order-17"],
                    "payload": ["aps": ["alert": ["title": "Enviado", "subtitle": "Order 17", "body": "Arrives Tuesday"], "sound": "default", "badge": 3, "category": "ORDER",
                                        "thread-id": "orders", "interruption-level": "time-sensitive", "mutable-content": 1]],
                    "fcm_options": ["image": "https://cdn.example.com/17.png"],
                ],
                "webpush": ["fcm_options": ["link": "https://shop.example.com/orders/17"]],
            ],
        ]
        #expect(try render(NotificationFixtures.full, locale: "pt_br") == expected)
    }

    @Test func aTitleAloneIsANotificationWithItsTitleAndNothingElse() throws {
        let expected: JSONValue = ["platform": "fcm", "app": "android", "id": "n-1", "message": ["token": "dGVzdA:APA91b", "notification": ["title": "Hi"]]]
        #expect(try render(NotificationFixtures.minimal) == expected)
    }

    @Test func anAppsOwnLinkGoesInTheDataOnlyForWebpushTakesHttpsLinks() throws {
        var n = NotificationFixtures.minimal
        n.url = "myshop://orders/17"
        let message = try #require(try render(n)?["message"])
        #expect(message["data"] == ["url": "myshop://orders/17"] && message["webpush"] == nil)
    }
}

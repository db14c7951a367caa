import HeraldTestSupport
import PushCore
import Testing
import WebPush

/// A neutral notification rendered as a Web Push job (docs/notifications.md): Declarative Web Push's payload when it
/// has a link, the same `notification` for a service worker without.
@Suite struct WebPushRenderTests {
    static let subscription = NotificationFixtures.webPushSubscription

    private func render(_ n: NeutralNotification, locale: String? = nil) throws -> JSONValue? {
        JSONValue(parsing: try WebPushProvider.render(n, for: RenderDevice(app: "web", subscription: Self.subscription, locale: locale)))
    }

    @Test func aFullNotificationIsADeclarativePushMessage() throws {
        let expected: JSONValue = [
            "platform": "webpush", "app": "web", "subscription": Self.subscription, "urgency": "high", "topic": "order-17",
            "payload": [
                "web_push": 8030, "app_badge": 3,
                "notification": ["title": "Versandt", "body": "Kommt Dienstag", "navigate": "https://shop.example.com/orders/17",
                                 "image": "https://cdn.example.com/17.png", "tag": "orders", "lang": "de", "data": ["order": "17"]],
            ],
        ]
        #expect(try render(NotificationFixtures.full, locale: "de-DE") == expected)
    }

    @Test func withoutALinkItIsNoDeclarativeMessageButTheSameNotification() throws {
        let expected: JSONValue = ["platform": "webpush", "app": "web", "subscription": Self.subscription, "payload": ["notification": ["title": "Hi"]]]
        #expect(try render(NotificationFixtures.minimal) == expected)
    }

    @Test func aCollapseKeyOutsideTopicsAlphabetBecomesADigestOfIt() throws {
        var n = NotificationFixtures.minimal
        n.collapseKey = "order 17: shipped"
        let topic = try #require(try render(n)?["topic"])
        guard case .string(let text) = topic else { Issue.record("\(topic)"); return }
        #expect(text.count == 32 && text.utf8.allSatisfy { $0.isBase64URL })
        #expect(try render(n)?["topic"] == topic, "the same key, the same topic")
        n.collapseKey = "order 18: shipped"
        #expect(try render(n)?["topic"] != topic)
    }

    @Test func aDeviceWithoutASubscriptionIsRefused() {
        #expect(throws: NotificationError(code: "missing_address", "Web Push: the device needs its subscription")) {
            try WebPushProvider.render(NotificationFixtures.minimal, for: RenderDevice(token: "ab"))
        }
    }
}

private extension UInt8 {
    var isBase64URL: Bool { (0x30...0x39).contains(self) || (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self) || self == 0x2D || self == 0x5F }
}

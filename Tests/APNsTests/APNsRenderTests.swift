import APNs
import HeraldTestSupport
import PushCore
import Testing

/// A neutral notification rendered as an APNs job (docs/notifications.md), member by member, with the device's
/// members and the overrides' merge.
@Suite struct APNsRenderTests {
    static let device = RenderDevice(app: "ios", token: "a1b2c3d4", environment: .sandbox, locale: "de-AT", id: "n-1",
                                     envelope: ["user_id": 42, "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"])

    private func render(_ n: NeutralNotification, _ device: RenderDevice = device) throws -> JSONValue? {
        JSONValue(parsing: try APNsProvider.render(n, for: device))
    }

    @Test func aFullNotificationLandsInApsBesideItsDataLinkAndImage() throws {
        let expected: JSONValue = [
            "platform": "apns", "app": "ios", "id": "n-1", "token": "a1b2c3d4", "environment": "sandbox", "push_type": "alert",
            "priority": 10, "collapse_id": "order-17", "user_id": 42, "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "payload": [
                "aps": ["alert": ["title": "Versandt", "subtitle": "Order 17", "body": "Kommt Dienstag"], "sound": "default", "badge": 3,
                        "category": "ORDER", "thread-id": "orders", "interruption-level": "time-sensitive", "mutable-content": 1],
                "image": "https://cdn.example.com/17.png", "url": "https://shop.example.com/orders/17", "order": "17",
            ],
        ]
        #expect(try render(NotificationFixtures.full) == expected)
    }

    @Test func aTitleAloneIsAnAlertWithItsTitleAndNothingElse() throws {
        let expected: JSONValue = ["platform": "apns", "token": "ab", "push_type": "alert", "priority": 10, "payload": ["aps": ["alert": ["title": "Hi"]]]]
        #expect(try render(NotificationFixtures.minimal, RenderDevice(token: "ab")) == expected)
    }

    @Test func anOverrideReplacesAddsAndRemovesButNeverMovesTheDevice() throws {
        var n = NotificationFixtures.minimal
        n.overrides = [
            .apns: ["payload": ["aps": ["sound": ["critical": 1, "name": "alarm.caf", "volume": 1]], "extra": "x"], "priority": .null,
                    "expiration": 0, "token": "ffff", "app": "other", "platform": "fcm"],
            .fcm: ["message": ["android": ["ttl": "60s"]]],
        ]
        n.sound = "default"
        let expected: JSONValue = [
            "platform": "apns", "app": "ios", "token": "ab", "push_type": "alert", "expiration": 0,
            "payload": ["aps": ["alert": ["title": "Hi"], "sound": ["critical": 1, "name": "alarm.caf", "volume": 1]], "extra": "x"],
        ]
        #expect(try render(n, RenderDevice(app: "ios", token: "ab")) == expected)
    }

    @Test func theEnvelopePassesThroughButNothingOfItEntersTheRenderedMembers() throws {
        let device = RenderDevice(token: "ab", envelope: ["deliver_at": "2026-12-24T18:00:00Z", "payload": ["stale": 1], "push_type": "voip"])
        let expected: JSONValue = ["platform": "apns", "token": "ab", "push_type": "alert", "priority": 10, "deliver_at": "2026-12-24T18:00:00Z",
                                   "payload": ["aps": ["alert": ["title": "Hi"]]]]
        #expect(try render(NotificationFixtures.minimal, device) == expected)
    }

    @Test func theSameNotificationAndDeviceAlwaysGiveTheSameBytes() throws {
        let once = try APNsProvider.render(NotificationFixtures.full, for: Self.device)
        #expect(try APNsProvider.render(NotificationFixtures.full, for: Self.device) == once)
        #expect(String(decoding: try APNsProvider.render(NotificationFixtures.minimal, for: RenderDevice(token: "ab")), as: UTF8.self)
                == #"{"payload":{"aps":{"alert":{"title":"Hi"}}},"platform":"apns","priority":10,"push_type":"alert","token":"ab"}"#)
    }

    @Test func aDeviceWithoutATokenIsRefused() {
        #expect(throws: NotificationError(code: "missing_address", "APNs: the device needs its token")) {
            try APNsProvider.render(NotificationFixtures.minimal, for: RenderDevice(app: "ios"))
        }
    }
}

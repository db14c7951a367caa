import PushCore
import ProviderKit

/// A neutral notification as an FCM v1 message for one registration token (docs/notifications.md): `notification`
/// (title, body, image) for every platform FCM reaches; `android` with the collapse key, HIGH priority for a
/// time-sensitive one, and its notification's sound, tag (the thread), click action (the category) and count (the
/// badge); `apns` for an iOS token with what the neutral `notification` cannot say there (subtitle, sound, badge,
/// category, thread, interruption level, the image); `webpush`'s link for an https URL; the data, and the link as
/// `url`, in `data`.
extension FCMProvider {
    public static func render(_ notification: NeutralNotification, for device: RenderDevice) throws(NotificationError) -> [UInt8] {
        let token = try device.requiredToken(for: platform)
        return try renderedJob(notification, for: device, address: [(["message", "token"], .string(token))]) { n in
            ["message": .object(message(n))]
        }
    }

    static func message(_ n: NeutralNotification) -> [String: JSONValue] {
        var data = n.data.mapValues(JSONValue.string)
        data["url"] = .text(n.url)
        let androidNotification: [String: JSONValue] = .present([
            "sound": .text(n.sound), "tag": .text(n.thread), "click_action": .text(n.category),
            "notification_count": n.badge.map(JSONValue.int),
        ])
        let android: [String: JSONValue] = .present([
            "collapse_key": .text(n.collapseKey), "priority": n.timeSensitive ? "HIGH" : nil,
            "notification": androidNotification.isEmpty ? nil : .object(androidNotification),
        ])
        return .present([
            "notification": .object(.present(["title": .string(n.title), "body": .text(n.body), "image": .text(n.image)])),
            "data": data.isEmpty ? nil : .object(data),
            "android": android.isEmpty ? nil : .object(android),
            "apns": apns(n),
            "webpush": n.url.flatMap { $0.lowercased().hasPrefix("https://") ? ["fcm_options": ["link": .string($0)]] : nil },
        ])
    }

    /// The `apns` block: FCM writes the title and body into `aps.alert` itself, but an `aps.alert` given here replaces
    /// them (FCM's ApnsConfig), so one with a subtitle names all three; the rest of APNs' members are here.
    static func apns(_ n: NeutralNotification) -> JSONValue? {
        let alert = n.subtitle.map { subtitle -> JSONValue in
            .object(.present(["title": .string(n.title), "subtitle": .string(subtitle), "body": .text(n.body)]))
        }
        let aps: [String: JSONValue] = .present([
            "alert": alert, "sound": .text(n.sound),
            "badge": n.badge.map(JSONValue.int), "category": .text(n.category),
            "thread-id": .text(n.thread), "interruption-level": n.timeSensitive ? "time-sensitive" : nil,
            "mutable-content": n.image == nil ? nil : 1,
        ])
        let apns: [String: JSONValue] = .present([
            "headers": n.collapseKey.map { ["apns-collapse-id": .string($0)] },
            "payload": aps.isEmpty ? nil : ["aps": .object(aps)],
            "fcm_options": n.image.map { ["image": .string($0)] },
        ])
        return apns.isEmpty ? nil : .object(apns)
    }
}

import PushCore
import ProviderKit

/// A neutral notification as an APNs alert job (docs/notifications.md): `aps` with the alert's title, subtitle and
/// body, `sound`, `badge`, `category`, `thread-id`, `interruption-level`; `mutable-content` with an image, so the
/// app's notification service extension can fetch it from the payload's `image`; the link as `url` and the data's
/// members beside `aps`, where the app reads them; the collapse key as `collapse_id`; priority 10.
extension APNsProvider {
    public static func render(_ notification: NeutralNotification, for device: RenderDevice) throws(NotificationError) -> [UInt8] {
        var address: [([String], JSONValue)] = [(["token"], .string(try device.requiredToken(for: platform)))]
        if let environment = device.environment { address.append((["environment"], .string(environment.rawValue))) }
        return try renderedJob(notification, for: device, address: address) { n in
            .present(["push_type": "alert", "priority": 10, "collapse_id": .text(n.collapseKey), "payload": payload(n)])
        }
    }

    /// The payload: `aps`, then `image`, `url` and the data beside it.
    static func payload(_ n: NeutralNotification) -> JSONValue {
        let alert: [String: JSONValue] = .present(["title": .string(n.title), "subtitle": .text(n.subtitle),
                                                   "body": .text(n.body)])
        let aps: [String: JSONValue] = .present([
            "alert": .object(alert), "sound": .text(n.sound), "badge": n.badge.map(JSONValue.int),
            "category": .text(n.category), "thread-id": .text(n.thread),
            "interruption-level": n.timeSensitive ? "time-sensitive" : nil, "mutable-content": n.image == nil ? nil : 1,
        ])
        var payload = n.data.mapValues(JSONValue.string)
        payload["aps"] = .object(aps)
        payload["image"] = .text(n.image)
        payload["url"] = .text(n.url)
        return .object(payload)
    }
}

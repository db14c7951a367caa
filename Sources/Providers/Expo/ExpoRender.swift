import PushCore
import ProviderKit

/// A neutral notification as an Expo message for one push token (docs/notifications.md): title, subtitle, body,
/// sound, badge, `categoryId`; the data, and the link as `url` (which Expo's router opens), in `data`; `priority`
/// high and `interruptionLevel` time-sensitive for a time-sensitive one; the image as `richContent.image`, with
/// `mutableContent` so iOS fetches it. Not carried: the thread and the collapse key (Expo's message has neither).
extension ExpoProvider {
    public static func render(_ notification: NeutralNotification, for device: RenderDevice) throws(NotificationError) -> [UInt8] {
        let token = try device.requiredToken(for: platform)
        return try renderedJob(notification, for: device, address: [(["to"], .string(token))]) { n in
            ["payload": .object(message(n))]
        }
    }

    static func message(_ n: NeutralNotification) -> [String: JSONValue] {
        var data = n.data.mapValues(JSONValue.string)
        data["url"] = .text(n.url)
        return .present([
            "title": .string(n.title), "subtitle": .text(n.subtitle), "body": .text(n.body), "sound": .text(n.sound),
            "badge": n.badge.map(JSONValue.int), "categoryId": .text(n.category), "data": data.isEmpty ? nil : .object(data),
            "priority": n.timeSensitive ? "high" : nil, "interruptionLevel": n.timeSensitive ? "time-sensitive" : nil,
            "richContent": n.image.map { ["image": .string($0)] }, "mutableContent": n.image == nil ? nil : true,
        ])
    }
}

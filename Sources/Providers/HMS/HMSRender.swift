import PushCore
import ProviderKit

/// A neutral notification as a Push Kit v1 message for one token (docs/notifications.md): `notification` (title,
/// body, image); `android` with HIGH urgency for a time-sensitive one and its notification's click action (an https
/// link opened as a URL, another link as the intent, else the category as the intent's action, else the app), sound
/// and tag (the thread); the data as Push Kit's `data` string (the object's JSON text). Not carried: the subtitle,
/// the badge (Push Kit's needs the app's entry activity class: give it in `overrides.hms`) and the collapse key
/// (Push Kit's `collapse_key` is a number from -1 to 100, not a key).
extension HMSProvider {
    public static func render(_ notification: NeutralNotification, for device: RenderDevice) throws(NotificationError) -> [UInt8] {
        let token = try device.requiredToken(for: platform)
        return try renderedJob(notification, for: device, address: [(["message", "token"], [.string(token)])]) { n in
            ["message": .object(message(n))]
        }
    }

    static func message(_ n: NeutralNotification) -> [String: JSONValue] {
        let sound: [String: JSONValue] = switch n.sound {
        case nil: [:]
        case "default": ["default_sound": true]
        case let name?: ["sound": .string(name), "default_sound": false]
        }
        let androidNotification = sound.merging(.present(["click_action": clickAction(n), "tag": .text(n.thread)])) { $1 }
        return .present([
            "notification": .object(.present(["title": .string(n.title), "body": .text(n.body), "image": .text(n.image)])),
            "data": n.data.isEmpty ? nil : .string(String(decoding: JSONValue.object(n.data.mapValues(JSONValue.string)).bytes, as: UTF8.self)),
            "android": .object(.present(["urgency": n.timeSensitive ? "HIGH" : nil, "notification": .object(androidNotification)])),
        ])
    }

    /// Push Kit's click action: type 2 opens a URL (https only), type 1 the app's intent or action, type 3 the app.
    static func clickAction(_ n: NeutralNotification) -> JSONValue {
        if let url = n.url {
            return url.lowercased().hasPrefix("https://") ? ["type": 2, "url": .string(url)] : ["type": 1, "intent": .string(url)]
        }
        if let category = n.category { return ["type": 1, "action": .string(category)] }
        return ["type": 3]
    }
}

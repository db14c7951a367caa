import PushCore
import ProviderKit

/// A neutral notification as a HarmonyOS Push Kit v3 alert for one token (docs/notifications.md): the payload's
/// `notification` with Push Kit's `category` (`MARKETING`, the one that needs no self-classification right; another
/// in `overrides.harmony`), title, body, image, badge (`setNum`), a sound other than the default, and its
/// `clickAction`: the link as its `uri`, else the category as its `action` (type 1, a page of the app), else the app's
/// home (type 0), the data in its `data`. Not carried: the subtitle, the thread, the collapse key (Push Kit's
/// `collapseKey` is a number) and time sensitivity (Push Kit's category decides how a notification alerts).
extension HarmonyProvider {
    public static let renderedCategory = "MARKETING"

    public static func render(_ notification: NeutralNotification, for device: RenderDevice) throws(NotificationError) -> [UInt8] {
        let token = try device.requiredToken(for: platform)
        return try renderedJob(notification, for: device, address: [(["token"], .string(token))]) { n in
            ["push_type": "alert", "payload": ["notification": .object(alert(n))]]
        }
    }

    static func alert(_ n: NeutralNotification) -> [String: JSONValue] {
        var click: [String: JSONValue] = ["actionType": n.url == nil && n.category == nil ? 0 : 1]
        if let url = n.url { click["uri"] = .string(url) } else if let category = n.category { click["action"] = .string(category) }
        if !n.data.isEmpty { click["data"] = .object(n.data.mapValues(JSONValue.string)) }
        return .present([
            "category": .string(renderedCategory), "title": .string(n.title), "body": .text(n.body),
            "image": .text(n.image), "badge": n.badge.map { ["setNum": .int($0)] },
            "sound": n.sound.flatMap { $0 == "default" ? nil : .string($0) }, "clickAction": .object(click),
        ])
    }
}

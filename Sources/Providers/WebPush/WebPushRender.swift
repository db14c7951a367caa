import COpenSSL
import PushCore
import ProviderKit

/// A neutral notification as a Web Push job for one subscription (docs/notifications.md). The payload is one shape
/// for both kinds of browser: Declarative Web Push's (`{"web_push":8030,"notification":{...},"app_badge":n}`, which
/// Safari shows without a service worker), whose `notification` member a classic service worker reads from
/// `event.data.json()` as well. Declarative Web Push needs a `navigate` URL: without a link the payload leaves out
/// `web_push`, so no browser takes it as declarative and the service worker shows it. In `notification`: title,
/// body, `navigate` (the link), image, `tag` (the thread), `lang` (the locale whose variant was chosen) and the data
/// as `data`. A time-sensitive one goes with urgency high; the collapse key is the `Topic` (as it is when it is
/// 1 to 32 base64url characters, else the first 32 of its SHA-256's). Not carried: the subtitle, sound and category.
extension WebPushProvider {
    public static func render(_ notification: NeutralNotification, for device: RenderDevice) throws(NotificationError) -> [UInt8] {
        guard let subscription = device.subscription else {
            throw NotificationError(code: "missing_address", "\(platform.displayName): the device needs its subscription")
        }
        return try renderedJob(notification, for: device, address: [(["subscription"], subscription)]) { n in
            .present(["payload": .object(payload(n)), "urgency": n.timeSensitive ? "high" : nil, "topic": n.collapseKey.map { .string(topic($0)) }])
        }
    }

    static func payload(_ n: NeutralNotification) -> [String: JSONValue] {
        let shown: [String: JSONValue] = .present([
            "title": .string(n.title), "body": .text(n.body), "navigate": .text(n.url), "image": .text(n.image),
            "tag": .text(n.thread), "lang": .text(n.language), "data": n.data.isEmpty ? nil : .object(n.data.mapValues(JSONValue.string)),
        ])
        return .present(["web_push": n.url == nil ? nil : 8030, "notification": .object(shown), "app_badge": n.badge.map(JSONValue.int)])
    }

    /// RFC 8030's `Topic` for a collapse key: the key when it is 1 to 32 base64url characters, else a digest of it
    /// of that form, so the same key is always the same topic.
    static func topic(_ key: String) -> String {
        let bytes = Array(key.utf8)
        if !bytes.isEmpty, bytes.count <= WebPushMessage.maxTopicLength, bytes.allSatisfy({ isBase64URLCharacter($0) && $0 != UInt8(ascii: "=") }) { return key }
        var digest = [UInt8](repeating: 0, count: 32)
        _ = bytes.withUnsafeBufferPointer { EVP_Digest($0.baseAddress, $0.count, &digest, nil, EVP_sha256(), nil) }
        return String(base64URLEncoded(digest).prefix(WebPushMessage.maxTopicLength))
    }
}

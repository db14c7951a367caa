/// Reading a neutral notification from its JSON (docs/notifications.md): every member typed and bounded, unknown
/// members refused (a misspelt `titel` would otherwise send a notification without its title), `null` as absent.
/// The bounds keep one notification's rendering within every provider's 4 KB: what they cannot foresee (the sum of
/// the members) is each provider's admission's, as for any job.
extension NeutralNotification {
    /// The whole document, its variants and overrides included.
    public static let maxBytes = 65_536
    public static let maxTitleBytes = 512
    public static let maxBodyBytes = 2048
    /// `sound`, `category`, `thread`.
    public static let maxNameBytes = 128
    /// APNs' `apns-collapse-id` limit, the strictest.
    public static let maxCollapseKeyBytes = 64
    public static let maxURLBytes = 2048
    public static let maxDataMembers = 64
    /// Keys and values of `data` together.
    public static let maxDataBytes = 3072
    public static let maxLocales = 100
    /// Keys of `data` a platform keeps for itself or that a rendering writes beside the data (APNs' payload holds
    /// `aps`, `url` and `image` beside them; FCM reserves `from`, `message_type` and `google`/`gcm` prefixes).
    public static let reservedDataKeys: Set<String> = ["aps", "url", "image", "from", "message_type"]
    public static let reservedDataPrefixes = ["google", "gcm"]

    /// The notification in `bytes`, or why not.
    public static func read(_ bytes: [UInt8]) throws(NotificationError) -> NeutralNotification {
        guard bytes.count <= maxBytes else { throw NotificationError(code: "too_large", "the notification is \(bytes.count) bytes; at most \(maxBytes)") }
        guard let tree = JSONValue(parsing: bytes) else {
            throw NotificationError(code: "not_json", "the notification is not valid JSON, or an object in it names a member twice")
        }
        guard case .object(let members) = tree else { throw NotificationError(code: "not_object", "the notification must be a JSON object") }
        var reader = Reader(members: members, at: "")
        guard let title = try reader.text("title", max: maxTitleBytes) else {
            throw NotificationError(code: "missing_title", "the notification needs a title")
        }
        var notification = NeutralNotification(title: title)
        notification.body = try reader.text("body", max: maxBodyBytes)
        notification.subtitle = try reader.text("subtitle", max: maxTitleBytes)
        notification.image = try reader.link("image", httpsOnly: true)
        notification.sound = try reader.text("sound", max: maxNameBytes)
        notification.badge = try reader.badge()
        notification.data = try reader.data()
        notification.url = try reader.link("url", httpsOnly: false)
        notification.category = try reader.text("category", max: maxNameBytes)
        notification.thread = try reader.text("thread", max: maxNameBytes)
        notification.collapseKey = try reader.text("collapse_key", max: maxCollapseKeyBytes)
        notification.timeSensitive = try reader.flag("time_sensitive")
        notification.overrides = try reader.overrides()
        notification.localized = try reader.localized()
        try reader.refuseTheRest()
        return notification
    }

    /// A notification's members, taken one by one; what is left at the end was not one of its members.
    struct Reader {
        var members: [String: JSONValue]
        /// Where these members are (`localized.de.`), for the words of a refusal.
        let at: String

        /// The member, removed; nil when absent or `null`.
        mutating func take(_ name: String) -> JSONValue? {
            let value = members.removeValue(forKey: name)
            return value == .null ? nil : value
        }

        func wrongType(_ name: String, _ expected: String) -> NotificationError {
            NotificationError(code: "wrong_type", "\(at)\(name) must be \(expected)")
        }

        mutating func text(_ name: String, max: Int) throws(NotificationError) -> String? {
            guard let value = take(name) else { return nil }
            guard case .string(let text) = value, !text.isEmpty else { throw wrongType(name, "a non-empty string") }
            guard text.utf8.count <= max else {
                throw NotificationError(code: "too_long", "\(at)\(name) is \(text.utf8.count) bytes; at most \(max)")
            }
            return text
        }

        /// An absolute URL (`https://...`, or an app's own `myapp://...`), no spaces or control characters.
        mutating func link(_ name: String, httpsOnly: Bool) throws(NotificationError) -> String? {
            guard let text = try text(name, max: maxURLBytes) else { return nil }
            let scheme = text.prefix { $0 != ":" }
            let wellFormed = scheme.count < text.count && scheme.first?.isLetter == true
                && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
                && text.count > scheme.count + 1 && !text.unicodeScalars.contains { $0.value <= 0x20 || $0.value == 0x7F }
            guard wellFormed, !httpsOnly || (scheme.lowercased() == "https" && text.dropFirst(scheme.count).hasPrefix("://")) else {
                throw NotificationError(code: "bad_url", "\(at)\(name) must be \(httpsOnly ? "an https URL" : "an absolute URL (https://... or the app's scheme://...)")")
            }
            return text
        }

        mutating func badge() throws(NotificationError) -> Int? {
            guard let value = take("badge") else { return nil }
            guard case .number(let text) = value, let badge = Int(text) else { throw wrongType("badge", "an integer") }
            guard (0...Int(Int32.max)).contains(badge) else {
                throw NotificationError(code: "out_of_range", "badge must be from 0 to \(Int32.max)")
            }
            return badge
        }

        mutating func flag(_ name: String) throws(NotificationError) -> Bool {
            guard let value = take(name) else { return false }
            guard case .bool(let flag) = value else { throw wrongType(name, "true or false") }
            return flag
        }

        /// Strings only: FCM's and Push Kit's data are maps of strings, and a number written `3` on one platform and
        /// `"3"` on another would be two apps' bugs. A producer writes `"3"`.
        mutating func data() throws(NotificationError) -> [String: String] {
            guard let value = take("data") else { return [:] }
            guard case .object(let members) = value else { throw wrongType("data", "an object of strings") }
            guard members.count <= maxDataMembers else {
                throw NotificationError(code: "too_large", "data has \(members.count) members; at most \(maxDataMembers)")
            }
            var data: [String: String] = [:], size = 0
            for (key, member) in members.sorted(by: { $0.key < $1.key }) {
                guard case .string(let text) = member else {
                    throw wrongType("data.\(key.prefix(64))", "a string (write numbers and flags as strings: \"3\", \"true\")")
                }
                guard !key.isEmpty, !reservedDataKeys.contains(key), !reservedDataPrefixes.contains(where: key.hasPrefix) else {
                    throw NotificationError(code: "reserved_data_key",
                                            "data.\(key.prefix(64)) is a name a platform keeps for itself (an empty key, aps, url, image, from, message_type, google..., gcm...): give the link as url and the image as image")
                }
                size += key.utf8.count + text.utf8.count
                data[key] = text
            }
            guard size <= maxDataBytes else {
                throw NotificationError(code: "too_large", "data's keys and values are \(size) bytes; at most \(maxDataBytes)")
            }
            return data
        }

        /// Keyed by platform (`apns`, `fcm`, ...), each an object: a merge patch on that platform's job.
        mutating func overrides() throws(NotificationError) -> [Platform: JSONValue] {
            guard let value = take("overrides") else { return [:] }
            guard case .object(let members) = value else { throw wrongType("overrides", "an object keyed by platform") }
            var overrides: [Platform: JSONValue] = [:]
            for (key, patch) in members where patch != .null {
                guard let platform = Platform(rawValue: key) else {
                    throw NotificationError(code: "bad_override", "overrides.\(key.prefix(64)) is not a platform; one of \(Platform.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                guard case .object = patch else { throw wrongType("overrides.\(key)", "an object (a merge patch on the platform's job)") }
                overrides[platform] = patch
            }
            return overrides
        }

        /// Keyed by locale tag (`de`, `pt-BR`, `zh_Hant_TW`), each some of `title`, `body`, `subtitle`, `image`, `url`.
        mutating func localized() throws(NotificationError) -> [String: Localized] {
            guard let value = take("localized") else { return [:] }
            guard case .object(let members) = value else { throw wrongType("localized", "an object keyed by locale tag") }
            guard members.count <= maxLocales else {
                throw NotificationError(code: "too_large", "localized has \(members.count) locales; at most \(maxLocales)")
            }
            var variants: [String: Localized] = [:]
            var seen: [String: String] = [:]
            for (tag, member) in members.sorted(by: { $0.key < $1.key }) {
                guard isLocaleTag(tag) else {
                    throw NotificationError(code: "bad_locale", "localized.\(tag.prefix(64)) is not a locale tag (letters and digits in parts of 1 to 8, joined by - or _: de, pt-BR)")
                }
                let normalized = NeutralNotification.normalizedTag(tag)
                if let other = seen[normalized] {
                    throw NotificationError(code: "bad_locale", "localized.\(other) and localized.\(tag) are the same locale")
                }
                seen[normalized] = tag
                guard case .object(let texts) = member else { throw wrongType("localized.\(tag)", "an object") }
                var reader = Reader(members: texts, at: "localized.\(tag).")
                let variant = Localized(title: try reader.text("title", max: maxTitleBytes), body: try reader.text("body", max: maxBodyBytes),
                                        subtitle: try reader.text("subtitle", max: maxTitleBytes),
                                        image: try reader.link("image", httpsOnly: true), url: try reader.link("url", httpsOnly: false))
                try reader.refuseTheRest()
                variants[tag] = variant
            }
            return variants
        }

        func isLocaleTag(_ tag: String) -> Bool {
            let parts = tag.split(separator: "-", omittingEmptySubsequences: false).flatMap { $0.split(separator: "_", omittingEmptySubsequences: false) }
            return tag.utf8.count <= 35 && parts.first?.allSatisfy(\.isLetter) == true
                && parts.allSatisfy { (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
        }

        /// Whatever is left is no member of a notification (or of a locale's variant).
        func refuseTheRest() throws(NotificationError) {
            guard let unknown = members.keys.sorted().first else { return }
            throw NotificationError(code: "unknown_member", "\(at)\(unknown.prefix(64)) is not a member of \(at.isEmpty ? "a notification" : "a locale's variant") (docs/notifications.md lists them)")
        }
    }
}

/// One notification for every platform (issue 50): what a producer says once for an audience, which each provider
/// renders into its own job for one device (`PushProvider.render`, docs/notifications.md). Read by
/// `NeutralNotification.read`, which holds it to its limits; a value made in code is taken as it is.
public struct NeutralNotification: Sendable, Equatable {
    public var title: String
    public var body: String?
    public var subtitle: String?
    /// An https URL of an image shown with the notification.
    public var image: String?
    /// A sound's name; `"default"` is the platform's own.
    public var sound: String?
    public var badge: Int?
    /// The app's own values, strings only (FCM's and Push Kit's data are maps of strings).
    public var data: [String: String]
    /// The link opened by a tap: an https page or an app's own scheme.
    public var url: String?
    /// APNs' category, Android's click action, Expo's `categoryId`.
    public var category: String?
    /// Notifications that belong together (APNs' `thread-id`, an Android notification's tag).
    public var thread: String?
    /// A newer notification with the same key replaces a waiting or shown one.
    public var collapseKey: String?
    /// Worth interrupting for: APNs' time-sensitive level, high priority elsewhere.
    public var timeSensitive: Bool
    /// Per platform, a JSON Merge Patch (RFC 7396) on its rendered job, for what the neutral form does not carry.
    public var overrides: [Platform: JSONValue]
    /// Per locale tag as the producer wrote it, the members that replace the base ones for devices of that locale.
    public var localized: [String: Localized]
    /// The locale tag whose variant this is (`localized(for:)`), nil for the base: Web Push tells the browser its
    /// language.
    public var language: String?

    /// What a locale's variant may replace: the words, and the image and link that go with them.
    public struct Localized: Sendable, Equatable {
        public var title, body, subtitle, image, url: String?

        public init(title: String? = nil, body: String? = nil, subtitle: String? = nil, image: String? = nil, url: String? = nil) {
            self.title = title
            self.body = body
            self.subtitle = subtitle
            self.image = image
            self.url = url
        }
    }

    public init(title: String, body: String? = nil, subtitle: String? = nil, image: String? = nil, sound: String? = nil,
                badge: Int? = nil, data: [String: String] = [:], url: String? = nil, category: String? = nil,
                thread: String? = nil, collapseKey: String? = nil, timeSensitive: Bool = false,
                overrides: [Platform: JSONValue] = [:], localized: [String: Localized] = [:]) {
        self.title = title
        self.body = body
        self.subtitle = subtitle
        self.image = image
        self.sound = sound
        self.badge = badge
        self.data = data
        self.url = url
        self.category = category
        self.thread = thread
        self.collapseKey = collapseKey
        self.timeSensitive = timeSensitive
        self.overrides = overrides
        self.localized = localized
    }

    /// The notification a device of locale `tag` (`de-AT`, `pt_BR`; nil when unknown) is shown: the variant of the same
    /// tag (case and `_`/`-` aside), else of its language alone (`de-AT` takes `de`), else the base. The variant's
    /// members replace the base's; those it leaves out stay. No variants remain on the result.
    public func localized(for tag: String?) -> NeutralNotification {
        var chosen = self
        chosen.localized = [:]
        guard let tag, let key = Self.variantKey(for: tag, among: localized.keys) else { return chosen }
        let variant = localized[key]!
        chosen.title = variant.title ?? title
        chosen.body = variant.body ?? body
        chosen.subtitle = variant.subtitle ?? subtitle
        chosen.image = variant.image ?? image
        chosen.url = variant.url ?? url
        chosen.language = key
        return chosen
    }

    /// The key among `keys` for a device's `tag`: the same tag, then the tag's language subtag alone.
    static func variantKey(for tag: String, among keys: some Collection<String>) -> String? {
        let wanted = normalizedTag(tag)
        let language = wanted.split(separator: "-").first.map(String.init) ?? wanted
        return keys.first { normalizedTag($0) == wanted } ?? keys.first { normalizedTag($0) == language }
    }

    /// A locale tag compared: lower case, `_` read as `-` (`pt_BR` is `pt-br`).
    static func normalizedTag(_ tag: String) -> String {
        String(tag.lowercased().map { $0 == "_" ? "-" : $0 })
    }
}

/// Why a neutral notification cannot be read, or rendered for a device: a stable code for machines and words that
/// name the member.
public struct NotificationError: Error, Equatable, Sendable, CustomStringConvertible {
    public let code: String
    public let description: String

    public init(code: String, _ description: String) {
        self.code = code
        self.description = description
    }
}

/// The device a notification is rendered for, as the fan-out knows it, and the envelope members it passes through.
public struct RenderDevice: Sendable, Equatable {
    /// The configured app whose credential sends it.
    public var app: String?
    /// Its push token: APNs' hexadecimal token, FCM's registration token, Push Kit's token, Expo's `ExponentPushToken[...]`.
    public var token: String?
    /// A browser's push subscription, as `PushSubscription.toJSON()` gives it (Web Push).
    public var subscription: JSONValue?
    /// APNs' environment, when known (else the app's).
    public var environment: ServiceEnvironment?
    /// Its locale tag (`de-AT`), which picks the notification's variant.
    public var locale: String?
    /// The rendered job's `id`.
    public var id: String?
    /// Envelope members passed through as they are (`deliver_at`, `expiration`, `traceparent`, the producer's own).
    public var envelope: [String: JSONValue]

    public init(app: String? = nil, token: String? = nil, subscription: JSONValue? = nil, environment: ServiceEnvironment? = nil,
                locale: String? = nil, id: String? = nil, envelope: [String: JSONValue] = [:]) {
        self.app = app
        self.token = token
        self.subscription = subscription
        self.environment = environment
        self.locale = locale
        self.id = id
        self.envelope = envelope
    }
}

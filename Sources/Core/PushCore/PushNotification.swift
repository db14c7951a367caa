/// Where a notification goes: one device, or every subscriber of a broadcast channel (iOS 18 Live Activities).
public enum PushTarget: Sendable, Equatable {
    case device(token: String)
    /// `id` is Apple's channel ID as `apns-channel-id` carried it (base64); `bundleID` is the app's bare bundle ID,
    /// which goes into the broadcast path.
    case channel(id: String, bundleID: String)
}

/// One notification as it will be sent; the payload is the producer's bytes, never re-encoded,
/// so what the app receives is exactly what the producer wrote.
public struct PushNotification: Sendable, Equatable {
    public var target: PushTarget
    public var topic: String
    public var environment: APNsEnvironment
    public var pushType: PushType
    /// `apns-priority`; nil sends `pushType.defaultPriority`.
    public var priority: Int?
    /// `apns-expiration` in UNIX seconds; 0 = try once, do not store.
    public var expiration: Int64?
    public var collapseID: String?
    /// `apns-id` (`apns-request-id` for a broadcast); either case is accepted locally, `headerAPNsID` is what goes on
    /// the wire.
    public var apnsID: String?
    public var payload: [UInt8]
    /// `.fcm`: `payload` is the job's FCM `message` object (sent as `{"message":<payload>}`), `deviceToken` its
    /// token target and `topic` its topic or condition; the APNs-only fields are unused.
    public var platform: Platform = .apns
    /// A Web Push job's subscription and headers (nil for other platforms).
    public var webPush: WebPushFields? = nil
    /// The job's `validate_only`: FCM gets `"validate_only": true` (its dry run); APNs and Web Push get nothing.
    public var validateOnly = false

    public init(
        deviceToken: String, topic: String, environment: APNsEnvironment, pushType: PushType = .alert,
        priority: Int? = nil, expiration: Int64? = nil, collapseID: String? = nil, apnsID: String? = nil,
        payload: [UInt8], platform: Platform = .apns
    ) {
        self.init(target: .device(token: deviceToken), topic: topic, environment: environment, pushType: pushType,
                  priority: priority, expiration: expiration, collapseID: collapseID, apnsID: apnsID, payload: payload)
        self.platform = platform
    }

    public init(
        target: PushTarget, topic: String, environment: APNsEnvironment, pushType: PushType = .alert,
        priority: Int? = nil, expiration: Int64? = nil, collapseID: String? = nil, apnsID: String? = nil,
        payload: [UInt8]
    ) {
        self.target = target
        self.topic = topic
        self.environment = environment
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.payload = payload
    }

    /// The device token; empty for a broadcast. Setting it makes the notification a device push.
    public var deviceToken: String {
        get { if case .device(let token) = target { token } else { "" } }
        set { target = .device(token: newValue) }
    }

    /// The broadcast channel ID; nil for a device push.
    public var channelID: String? {
        if case .channel(let id, _) = target { id } else { nil }
    }

    public var isBroadcast: Bool { channelID != nil }

    /// The priority header value to send: the job's, or the push type's safe default.
    public var effectivePriority: Int { priority ?? pushType.defaultPriority }

    /// `apns-id` in the canonical lowercase form Apple documents (producers often send
    /// Foundation's uppercase `uuidString`).
    public var headerAPNsID: String? { apnsID?.lowercased() }

    /// `:path` of the request.
    public var path: String {
        switch target {
        case .device(let token): "/3/device/" + token
        case .channel(_, let bundleID): "/4/broadcasts/apps/" + bundleID
        }
    }

    /// APNs refuses larger bodies with 413 PayloadTooLarge (broadcasts allow 5120 bytes).
    public var maxPayloadBytes: Int { isBroadcast ? Broadcast.maxPayloadBytes : pushType.maxPayloadBytes }
}

/// What a Web Push job carries besides its payload: the subscription object's bytes as the producer wrote them
/// (the provider parses and checks it), and RFC 8030's `TTL` and `Urgency` (its `Topic` is the job's `topic`).
public struct WebPushFields: Sendable, Equatable {
    public var subscription: [UInt8]
    public var ttl: Int64?
    public var urgency: String?

    public init(subscription: [UInt8], ttl: Int64? = nil, urgency: String? = nil) {
        self.subscription = subscription
        self.ttl = ttl
        self.urgency = urgency
    }
}

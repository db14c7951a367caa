/// Where a notification goes: one device, or every subscriber of a broadcast channel (iOS 18 Live Activities).
public enum PushTarget: Sendable, Equatable {
    case device(token: String)
    /// `id` is Apple's channel ID as `apns-channel-id` carried it (base64); `bundleID` is the app's bare bundle ID,
    /// which goes into the broadcast path.
    case channel(id: String, bundleID: String)
}

/// One notification as it will be sent: the envelope the core and every sender read (its target, topic, payload,
/// give-up time, platform, dry run), and what its provider keeps of the job beyond that (`provider`: a type of the
/// provider's own module, APNs' headers or Web Push's subscription, which no other module reads). The payload is
/// the producer's bytes, never re-encoded, so what the app receives is exactly what the producer wrote.
public struct PushNotification: Sendable, Equatable {
    public var target: PushTarget
    public var topic: String
    public var environment: ServiceEnvironment
    /// Not worth delivering after this (UNIX seconds; 0 = try once, do not store): APNs' `apns-expiration`, and the
    /// give-up time of every provider's retries.
    public var expiration: Int64?
    public var payload: [UInt8]
    public var platform: Platform
    /// The job's `validate_only`: a provider with a dry run gets it (FCM's `"validate_only": true`); the others are
    /// never sent.
    public var validateOnly = false
    /// Its provider's own fields; nil when it keeps none, or only their defaults (then they cost no allocation).
    public var provider: (any ProviderFields)?

    public init(target: PushTarget, topic: String, environment: ServiceEnvironment, expiration: Int64? = nil, payload: [UInt8],
                platform: Platform, provider: (any ProviderFields)? = nil) {
        self.target = target
        self.topic = topic
        self.environment = environment
        self.expiration = expiration
        self.payload = payload
        self.platform = platform
        self.provider = provider
    }

    public init(deviceToken: String, topic: String, environment: ServiceEnvironment, expiration: Int64? = nil, payload: [UInt8],
                platform: Platform, provider: (any ProviderFields)? = nil) {
        self.init(target: .device(token: deviceToken), topic: topic, environment: environment, expiration: expiration, payload: payload,
                  platform: platform, provider: provider)
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

    public static func == (a: PushNotification, b: PushNotification) -> Bool {
        a.target == b.target && a.topic == b.topic && a.environment == b.environment && a.expiration == b.expiration && a.payload == b.payload
            && a.platform == b.platform && a.validateOnly == b.validateOnly && ProviderFieldsBox.equal(a.provider, b.provider)
    }
}

/// What a provider keeps of a job beyond the envelope, for its own sender: a type of its module.
public protocol ProviderFields: Sendable {
    /// Whether `other` holds the same fields (for `PushNotification`'s equality).
    func isEqual(to other: any ProviderFields) -> Bool
}

extension ProviderFields where Self: Equatable {
    public func isEqual(to other: any ProviderFields) -> Bool { (other as? Self) == self }
}

enum ProviderFieldsBox {
    static func equal(_ a: (any ProviderFields)?, _ b: (any ProviderFields)?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): a.isEqual(to: b)
        default: false
        }
    }
}

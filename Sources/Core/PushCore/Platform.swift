/// The push service a job goes to. APNs is the default so every producer written before FCM keeps working.
/// A new provider is a new case here, its sender in `ProviderRegistry` (Worker) and its module (docs/adding-a-provider.md).
public enum Platform: String, Sendable, Hashable, CaseIterable {
    case apns, fcm, webpush, hms

    /// Its index among `allCases`: the slot of its counters (the `platform` label of every per-job metric), its
    /// sender in the registry.
    @inline(__always)
    public var slot: Int {
        switch self {
        case .apns: 0
        case .fcm: 1
        case .webpush: 2
        case .hms: 3
        }
    }
}

/// What the code outside the providers needs to know of a platform, as data: the one table it reads instead of
/// branching on the platform (`ProviderSeamTests`). Each is a switch the compiler keeps complete, so a new
/// platform answers every question here.
extension Platform {
    /// Its name in messages ("no FCM app is configured for this job").
    public var displayName: String {
        switch self {
        case .apns: "APNs"
        case .fcm: "FCM"
        case .webpush: "Web Push"
        case .hms: "Huawei Push Kit"
        }
    }

    /// Its jobs go to one of several environments (APNs' sandbox and production); without, a job's results and
    /// dropped tokens name no environment, its token and topic are optional, and its destination is its platform.
    @inline(__always)
    public var hasEnvironments: Bool {
        switch self {
        case .apns: true
        case .fcm, .webpush, .hms: false
        }
    }

    /// A job's token names one device, which a device budget (`budgets.device_*`) paces; a Web Push
    /// subscription is not budgeted per device.
    public var hasDeviceBudget: Bool {
        switch self {
        case .apns, .fcm, .hms: true
        case .webpush: false
        }
    }

    /// The per-device limits the provider publishes (FCM: 240 a minute, 5,000 an hour), the defaults
    /// `budgets.fcm_device_defaults` opts into; nil when it publishes none.
    public var publishedDeviceLimits: (perMinute: Int, perHour: Int)? {
        switch self {
        case .fcm: (240, 5_000)
        case .apns, .webpush, .hms: nil
        }
    }

    /// A job without an app name finds its app by its topic (APNs' bundle ID), not only as its platform's one app.
    public var findsAppByTopic: Bool {
        switch self {
        case .apns: true
        case .fcm, .webpush, .hms: false
        }
    }

    /// Its jobs carry the provider's own message object (`message`: FCM v1's, Push Kit's) instead of a payload and a
    /// token: their targets are in it, so no `tokens` multicast.
    public var carriesMessage: Bool {
        switch self {
        case .apns, .webpush: false
        case .fcm, .hms: true
        }
    }

    /// The service checks a message without delivering it (FCM's and Push Kit's `validate_only`): a `validate_only` job is sent as
    /// that dry run; without, it gets the local checks only and is never sent.
    public var hasDryRun: Bool {
        switch self {
        case .fcm, .hms: true
        case .apns, .webpush: false
        }
    }

    /// Its jobs carry a browser's push subscription (`subscription`, Web Push) instead of a device token, and a
    /// payload of any JSON value (a string's text, or the value's bytes).
    public var carriesSubscription: Bool {
        switch self {
        case .apns, .fcm, .hms: false
        case .webpush: true
        }
    }
}

/// The push service a job goes to. APNs is the default so every producer written before FCM keeps working.
/// A closed enum on purpose: a new provider is one case here and its traits (below), and the compiler then
/// finds every place that must answer for it; an open type would trade that check for nothing a provider
/// needs (its own code lives in its module, docs/adding-a-provider.md).
public enum Platform: String, Sendable, Hashable, CaseIterable {
    case apns, fcm, webpush, hms, harmony, expo

    /// Its index among `allCases`: the slot of its counters (the `platform` label of every per-job metric), its
    /// sender in the registry.
    @inline(__always)
    public var slot: Int {
        switch self {
        case .apns: 0
        case .fcm: 1
        case .webpush: 2
        case .hms: 3
        case .harmony: 4
        case .expo: 5
        }
    }

    /// What the code outside the providers needs to know of a platform, as data: the one table it reads instead
    /// of branching on the platform (`ProviderSeamTests`). One arm per platform, so a new platform answers every
    /// question at once.
    @inline(__always)
    public var traits: PlatformTraits {
        switch self {
        case .apns: .init(displayName: "APNs", hasEnvironments: true, hasDeviceBudget: true, publishedDeviceLimits: nil,
                          findsAppByTopic: true, carriesMessage: false, hasDryRun: false, carriesSubscription: false)
        case .fcm: .init(displayName: "FCM", hasEnvironments: false, hasDeviceBudget: true, publishedDeviceLimits: (240, 5_000),
                         findsAppByTopic: false, carriesMessage: true, hasDryRun: true, carriesSubscription: false)
        case .webpush: .init(displayName: "Web Push", hasEnvironments: false, hasDeviceBudget: false, publishedDeviceLimits: nil,
                             findsAppByTopic: false, carriesMessage: false, hasDryRun: false, carriesSubscription: true)
        case .hms: .init(displayName: "Huawei Push Kit", hasEnvironments: false, hasDeviceBudget: true, publishedDeviceLimits: nil,
                         findsAppByTopic: false, carriesMessage: true, hasDryRun: true, carriesSubscription: false)
        case .harmony: .init(displayName: "HarmonyOS Push Kit", hasEnvironments: false, hasDeviceBudget: true, publishedDeviceLimits: nil,
                             findsAppByTopic: false, carriesMessage: false, hasDryRun: false, carriesSubscription: false)
        case .expo: .init(displayName: "Expo", hasEnvironments: false, hasDeviceBudget: true, publishedDeviceLimits: nil,
                          findsAppByTopic: false, carriesMessage: false, hasDryRun: false, carriesSubscription: false)
        }
    }
}

/// A platform's answers to what the core, the parser, the budgets and the tools ask of it.
public struct PlatformTraits: Sendable {
    /// Its name in messages ("no FCM app is configured for this job").
    public let displayName: String
    /// Its jobs go to one of several environments (APNs' sandbox and production); without, a job's results and
    /// dropped tokens name no environment, its token and topic are optional, and its destination is its platform.
    public let hasEnvironments: Bool
    /// A job's token names one device, which a device budget (`budgets.device_*`) paces; a Web Push
    /// subscription is not budgeted per device.
    public let hasDeviceBudget: Bool
    /// The per-device limits the provider publishes (FCM: 240 a minute, 5,000 an hour), the defaults
    /// `budgets.fcm_device_defaults` opts into; nil when it publishes none.
    public let publishedDeviceLimits: (perMinute: Int, perHour: Int)?
    /// A job without an app name finds its app by its topic (APNs' bundle ID), not only as its platform's one app.
    public let findsAppByTopic: Bool
    /// Its jobs carry the provider's own message object (`message`: FCM v1's, Push Kit's) instead of a payload and a
    /// token: their targets are in it, so no `tokens` multicast.
    public let carriesMessage: Bool
    /// The service checks a message without delivering it (FCM's and Push Kit's `validate_only`): a `validate_only`
    /// job is sent as that dry run; without, it gets the local checks only and is never sent.
    public let hasDryRun: Bool
    /// Its jobs carry a browser's push subscription (`subscription`, Web Push) instead of a device token, and a
    /// payload of any JSON value (a string's text, or the value's bytes).
    public let carriesSubscription: Bool
}

/// The traits as members of the platform, as every caller reads them.
extension Platform {
    public var displayName: String { traits.displayName }
    @inline(__always) public var hasEnvironments: Bool { traits.hasEnvironments }
    public var hasDeviceBudget: Bool { traits.hasDeviceBudget }
    public var publishedDeviceLimits: (perMinute: Int, perHour: Int)? { traits.publishedDeviceLimits }
    public var findsAppByTopic: Bool { traits.findsAppByTopic }
    public var carriesMessage: Bool { traits.carriesMessage }
    public var hasDryRun: Bool { traits.hasDryRun }
    public var carriesSubscription: Bool { traits.carriesSubscription }
}

/// What the providers' senders add to a scrape's copy of the metrics (`PushSender.addMetrics`).
public struct ProviderMetrics: Sendable {
    /// Every pool that exists or was closed by a reload, one line each.
    public var pools: [PoolSnapshot] = []
    /// Provider tokens signed, per app by its index (the first and every refresh).
    public var tokensSigned: [Int]
    /// Per app by its index, for providers whose token comes from an exchange (FCM's OAuth grant).
    public var tokenExchanges: [TokenExchangeStats]

    public init(apps: Int) {
        tokensSigned = [Int](repeating: 0, count: apps)
        tokenExchanges = [TokenExchangeStats](repeating: TokenExchangeStats(), count: apps)
    }
}

/// One credential's token exchanges so far: answered (with a token or not), refused (the credential is bad),
/// unavailable (the endpoint could not answer), and the time the answered ones took.
public struct TokenExchangeStats: Sendable, Equatable {
    public var answered = 0
    public var refused = 0
    public var unavailable = 0
    public var nanoseconds: UInt64 = 0
    public init() {}
}

/// One HTTP/2 pool (an app's credential in one environment) as a scrape sees it.
public struct PoolSnapshot: Sendable, Equatable {
    public var app: String
    public var environment: String
    public var connections = 0
    public var openStreams = 0
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS on the best usable connection (0 without one).
    public var streamLimit = 0
    public var queued = 0
    /// Connections opened after the pool's first set (replacements for ones that closed or failed).
    public var reconnects = 0
    public var goaways = 0
    /// Ready connections per remote `ip:port`: at most the pool's connection count of entries.
    public var remotes: [String: Int] = [:]

    public init(app: String, environment: String) {
        self.app = app
        self.environment = environment
    }

    public static func + (a: PoolSnapshot, b: PoolSnapshot) -> PoolSnapshot {
        var c = a
        c.connections += b.connections
        c.openStreams += b.openStreams
        c.streamLimit = max(c.streamLimit, b.streamLimit)
        c.queued += b.queued
        c.reconnects += b.reconnects
        c.goaways += b.goaways
        c.remotes.merge(b.remotes, uniquingKeysWith: +)
        return c
    }
}

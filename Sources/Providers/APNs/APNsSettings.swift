import PushCore

/// APNs' hosts and how the connections to them behave (`apns.*` in the configuration).
public struct APNsSettings: Sendable, Equatable {
    public init() {}
    public var productionURL = "https://api.push.apple.com:443"
    public var sandboxURL = "https://api.sandbox.push.apple.com:443"
    /// Channel management (broadcast channels) has its own hosts and ports.
    public var channelsProductionURL = ChannelManagement.defaultURL(.production)
    public var channelsSandboxURL = ChannelManagement.defaultURL(.sandbox)

    /// The push host of an environment.
    public func url(_ environment: APNsEnvironment) -> String { environment == .production ? productionURL : sandboxURL }
    /// The channel-management host of an environment.
    public func channelsURL(_ environment: APNsEnvironment) -> String {
        environment == .production ? channelsProductionURL : channelsSandboxURL
    }
    public var connectionsPerPool = 4
    public var requestTimeoutMs = 15000
    public var connectTimeoutMs = 10000
    /// A pool's connections open this far apart (Apple: stagger opening them).
    public var connectionStaggerMs = 100
    public var pingIdleSeconds = 3600
    public var pingTimeoutSeconds = 10
    public var caFile: String? = nil
    public var proxy: String? = nil
    /// Requests waiting for a stream, per pool, before the worker is pushed back.
    public var maxQueuedPerPool = 20000
}

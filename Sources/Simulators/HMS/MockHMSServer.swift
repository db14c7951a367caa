import Foundation

/// An HTTPS server that answers like Huawei Push Kit's v1 `messages:send` and Huawei's OAuth 2.0 token
/// endpoint (client credentials), with scripted device state, faults and flow control, on its own loop thread.
/// HTTP/2 and HTTP/1.1 (ALPN) on one port, token and send endpoints alike.
///
/// Thread-safe: every method hops onto the loop (`submit`); the request path never leaves it.
public final class MockHMSServer: Sendable {
    /// The port actually bound (useful with port 0).
    public let port: Int
    public let configuration: MockHMSConfiguration
    /// The apps the token endpoint knows (the configured ones, or the one generated).
    public let apps: [MockHMSApp]
    /// `https://<host>:<port>`: the root to put in place of `https://push-api.cloud.huawei.com`.
    public let baseURL: String
    /// `<baseURL>/oauth2/v3/token`: in place of `https://oauth-login.cloud.huawei.com/oauth2/v3/token`.
    public let tokenURL: String
    private let simulator: SimulatorHandle<SendAPICore<HMSHandler>>

    /// The first app: what a single-app test needs.
    public var app: MockHMSApp { apps[0] }
    /// The CA clients should trust (when the TLS files were generated).
    public var caFile: String? { configuration.tls?.caFile }

    /// `<baseURL>/v1/<app id>/messages:send`.
    public func sendURL(app: String? = nil) -> String { "\(baseURL)/v1/\(app ?? self.app.appId)/messages:send" }

    /// Binds, starts the loop thread and begins accepting connections.
    public init(configuration: MockHMSConfiguration) throws {
        self.configuration = configuration
        var apps = configuration.apps
        if apps.isEmpty {
            var bytes = [UInt8](repeating: 0, count: 32)
            var generator = SystemRandomNumberGenerator()
            for index in bytes.indices { bytes[index] = generator.next() }
            apps = [MockHMSApp(appId: configuration.defaultAppID, clientSecret: bytes.map { String(format: "%02x", $0) }.joined())]
        }
        self.apps = apps
        let simulator = try SimulatorHandle(name: "mock-hms", host: configuration.host, ports: [configuration.port]) { [apps] counters in
            try SendAPICore(configuration: configuration, handler: HMSHandler(apps: apps), counters: counters)
        }
        self.simulator = simulator
        port = simulator.ports[0]
        baseURL = "https://\(ServerLoop.urlHost(configuration.host)):\(port)"
        tokenURL = baseURL + "/oauth2/v3/token"
    }

    deinit { stop() }

    public func stats() -> MockHMSStats { simulator.stats() }

    /// Checked sends so far (only when `recordAccepted` is on).
    public func acceptedMessages() -> [MockHMSAcceptedMessage] { simulator.acceptedMessages() }

    public func faults() -> MockHMSFaultScript { simulator.faults() }

    /// Replaces device state, faults and quotas (their counters and windows start afresh).
    public func replaceFaults(_ script: MockHMSFaultScript) throws { try simulator.replaceFaults(script) }

    /// Every access token issued so far is unknown from now on (80200001).
    public func revokeAccessTokens() { simulator.revokeAccessTokens() }

    /// Every access token issued so far has expired from now on (80200003).
    public func expireAccessTokens() { try? simulator.run { $0.handler.expireAccessTokens() } }

    /// Zeroes the counters, the accepted log, the fault counters and the quota windows (connections and tokens stay).
    public func resetStats() { simulator.resetStats() }

    /// Closes every connection and the listener, and ends the loop thread. Idempotent.
    public func stop() { simulator.stop() }
}

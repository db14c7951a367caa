import Foundation

/// An HTTPS server that answers like HarmonyOS Push Kit's v3 `messages:send` (scenario-specific messages, JWT
/// authentication), with scripted device state, faults and flow control, on its own loop thread. HTTP/2 and
/// HTTP/1.1 (ALPN) on one port.
///
/// Thread-safe: every method hops onto the loop (`submit`); the request path never leaves it.
public final class MockHarmonyServer: Sendable {
    /// The port actually bound (useful with port 0).
    public let port: Int
    public let configuration: MockHarmonyConfiguration
    /// The accounts whose JWTs are accepted (the configured ones, or the one generated).
    public let accounts: [MockHarmonyAccount]
    /// `https://<host>:<port>`: the root to put in place of `https://push-api.cloud.huawei.com`.
    public let baseURL: String
    private let simulator: SimulatorHandle<SendAPICore<HarmonyHandler>>

    /// The first account: what a single-project test needs.
    public var account: MockHarmonyAccount { accounts[0] }
    /// The CA clients should trust (when the TLS files were generated).
    public var caFile: String? { configuration.tls?.caFile }

    /// `<baseURL>/v3/<project id>/messages:send`.
    public func sendURL(project: String? = nil) -> String { "\(baseURL)/v3/\(project ?? account.projectID)/messages:send" }

    /// Binds, starts the loop thread and begins accepting connections.
    public init(configuration: MockHarmonyConfiguration) throws {
        self.configuration = configuration
        let accounts = configuration.accounts.isEmpty ? [try MockHarmonyAccount.generate(projectID: configuration.defaultProjectID)] : configuration.accounts
        self.accounts = accounts
        let simulator = try SimulatorHandle(name: "mock-harmony", host: configuration.host, ports: [configuration.port]) { counters in
            try SendAPICore(configuration: configuration, handler: HarmonyHandler(accounts: accounts), counters: counters)
        }
        self.simulator = simulator
        port = simulator.ports[0]
        baseURL = "https://\(ServerLoop.urlHost(configuration.host)):\(port)"
    }

    deinit { stop() }

    public func stats() -> MockHarmonyStats { simulator.stats() }

    /// Checked sends so far (only when `recordAccepted` is on).
    public func acceptedMessages() -> [MockHarmonyAcceptedMessage] { simulator.acceptedMessages() }

    public func faults() -> MockHMSFaultScript { simulator.faults() }

    /// Replaces device state, faults and quotas (their counters and windows start afresh).
    public func replaceFaults(_ script: MockHMSFaultScript) throws { try simulator.replaceFaults(script) }

    /// Every JWT seen so far is refused from now on (80200001).
    public func revokeAccessTokens() { simulator.revokeAccessTokens() }

    /// Every JWT seen so far has expired from now on (80200003).
    public func expireAccessTokens() { try? simulator.run { $0.handler.expireAccessTokens() } }

    /// Zeroes the counters, the accepted log, the fault counters and the quota windows (connections stay).
    public func resetStats() { simulator.resetStats() }

    /// Closes every connection and the listener, and ends the loop thread. Idempotent.
    public func stop() { simulator.stop() }
}

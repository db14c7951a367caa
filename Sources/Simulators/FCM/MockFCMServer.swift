import Foundation

/// An HTTPS server that answers like FCM HTTP v1 and Google's OAuth token endpoint, with scripted device state,
/// faults and quotas, on its own loop thread. HTTP/2 and HTTP/1.1 (ALPN) on the same port.
///
/// Thread-safe: every method hops onto the loop (`submit`); the request path never leaves it. The core and the
/// listener live on the loop and are reached only through a `LoopBound`, so that is checked.
public final class MockFCMServer: Sendable {
    /// The port actually bound (useful with port 0).
    public let port: Int
    public let configuration: MockFCMConfiguration
    /// The accounts the token endpoint knows (the configured ones, or the one generated).
    public let serviceAccounts: [MockServiceAccount]
    /// Their JSON files, in the same order, with `token_uri` pointing here.
    public let serviceAccountFiles: [String]
    /// `https://<host>:<port>/token`, the `token_uri` in the files.
    public let tokenURI: String
    /// `https://<host>:<port>`: the root to put in place of `https://fcm.googleapis.com`.
    public let baseURL: String
    private let simulator: SimulatorHandle<SendAPICore<FCMHandler>>

    /// The first account, its project and its file: what a single-project test needs.
    public var serviceAccount: MockServiceAccount { serviceAccounts[0] }
    public var projectID: String { serviceAccounts[0].projectID }
    public var serviceAccountFile: String { serviceAccountFiles[0] }
    /// The CA clients should trust (when the TLS files were generated).
    public var caFile: String? { configuration.tls?.caFile }

    /// `<baseURL>/v1/projects/<project>/messages:send`.
    public func sendURL(project: String? = nil) -> String { "\(baseURL)/v1/projects/\(project ?? projectID)/messages:send" }

    /// Binds, writes the service-account files, starts the loop thread and begins accepting connections.
    public init(configuration: MockFCMConfiguration) throws {
        self.configuration = configuration
        let accounts = configuration.serviceAccounts.isEmpty ? [try MockServiceAccount.generate(projectID: configuration.projectID)] : configuration.serviceAccounts
        serviceAccounts = accounts
        let simulator = try SimulatorHandle(name: "mock-fcm", host: configuration.host, ports: [configuration.port]) { counters in
            try SendAPICore(configuration: configuration, handler: FCMHandler(accounts: accounts), counters: counters)
        }
        let port = simulator.ports[0]
        (self.simulator, self.port) = (simulator, port)
        do {
            baseURL = "https://\(ServerLoop.urlHost(configuration.host)):\(port)"
            tokenURI = baseURL + "/token"
            let directory = try configuration.serviceAccountDirectory ?? configuration.tls?.caFile.map { ($0 as NSString).deletingLastPathComponent }
                ?? CommandSupport.temporaryDirectory(prefix: "herald-mock-fcm")
            var files: [String] = []
            for (index, account) in accounts.enumerated() {
                let name = index == 0 ? "service-account.json" : "service-account-\(index + 1).json"
                let path = (directory as NSString).appendingPathComponent(name)
                try account.write(to: path, tokenURI: tokenURI)
                files.append(path)
            }
            serviceAccountFiles = files
            try simulator.run { [tokenURI] in $0.handler.tokenURI = tokenURI }
        } catch {
            simulator.stop()
            throw error
        }
    }

    deinit { stop() }

    public func stats() -> MockFCMStats { simulator.stats() }

    /// Accepted messages so far (only when `recordAccepted` is on).
    public func acceptedMessages() -> [MockFCMAcceptedMessage] { simulator.acceptedMessages() }

    public func faults() -> MockFCMFaultScript { simulator.faults() }

    /// Replaces device state, faults and quotas (per-token counters and quota windows start afresh).
    public func replaceFaults(_ script: MockFCMFaultScript) throws { try simulator.replaceFaults(script) }

    /// Refuses every access token issued so far with 401 (a revoked token); new ones are issued as before.
    public func revokeAccessTokens() { simulator.revokeAccessTokens() }

    /// Zeroes the counters, the accepted log, the fault counters and the quota windows (connections and tokens stay).
    public func resetStats() { simulator.resetStats() }

    /// Closes every connection and the listener, and ends the loop thread. Idempotent.
    public func stop() { simulator.stop() }
}

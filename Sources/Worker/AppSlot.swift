import APNs
import APNsHTTP2
import Foundation
import HTTP2
import Reactor

/// One app inside a pipeline: its credential, one APNs client per environment (made on first use), and
/// whether it is paused after a credential error. Loop-confined.
final class AppSlot {
    let settings: Configuration.AppSettings
    private(set) var credentials: AppCredentials
    private var clients: [APNsEnvironment: APNsClient] = [:]
    /// Monotonic deadline of a pause after a credential error; 0 when running.
    var pausedUntil: UInt64 = 0
    var pauseReason = ""
    /// Increases with every pause, so a resume timer only ends the pause that scheduled it.
    var pauseGeneration = 0
    /// False until APNs answers a request on this credential with anything but a credential error. Until
    /// then one request (the probe) goes out at a time and the rest wait here, so a broken key costs one
    /// rejected request per pause instead of one per claimed job.
    var credentialProven = false
    var probe: JobAttempt?
    var waitingForProbe: [JobAttempt] = []

    init(credentials: AppCredentials) {
        self.settings = credentials.app
        self.credentials = credentials
    }

    func client(for environment: APNsEnvironment, loop: EventLoop, apns: Configuration.APNsSettings, onEvent: @escaping (HTTP2PoolEvent) -> Void) throws -> APNsClient {
        if let client = clients[environment] { return client }
        let urlText = environment == .production ? apns.productionURL : apns.sandboxURL
        guard let url = APNsURL(urlText) else { throw ConfigurationError(["bad APNs URL \(urlText)"]) }
        let options = HTTP2ConnectionOptions(
            connectTimeoutMilliseconds: apns.connectTimeoutMs, pingIdleMilliseconds: apns.pingIdleSeconds * 1000,
            pingTimeoutMilliseconds: apns.pingTimeoutSeconds * 1000)
        let client = try APNsClient(
            loop: loop, host: url.host, port: url.port, tls: credentials.tls, tokenCache: credentials.tokenCache,
            connections: apns.connectionsPerPool, requestTimeoutMilliseconds: apns.requestTimeoutMs, proxy: apns.proxy,
            connectionOptions: options, maxQueued: apns.maxQueuedPerPool)
        client.pool.onEvent = onEvent
        client.pool.start()
        clients[environment] = client
        return client
    }

    var isPaused: Bool { pausedUntil != 0 && monotonicNanos() < pausedUntil }

    /// Re-reads the key or certificate after a pause, so a fixed file takes effect without a restart, and
    /// drops the old connections (APNs binds a connection to the first key it saw).
    func reloadCredentials(apns: Configuration.APNsSettings) throws {
        let fresh = try AppCredentials.load(settings, apns: apns)
        credentials = fresh
        credentialProven = false
        // Out of the dictionary first: requests failing as the old pools close must not be resent on them.
        let old = clients
        clients.removeAll()
        for client in old.values { client.close(graceful: true) }
    }

    func closeAll(graceful: Bool) {
        for client in clients.values { client.close(graceful: graceful) }
    }

    var pending: Int { clients.values.reduce(0) { $0 + $1.pool.inFlight + $1.pool.queued } }
}

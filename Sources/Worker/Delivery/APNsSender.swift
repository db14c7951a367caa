import APNs
import HTTP2
import PushCore
import Reactor

/// `PushSender` over APNs: per app its loaded credential and one `APNsClient` (an HTTP/2 pool) per
/// environment, made on first use. Acts on what APNs says about connections and tokens (retire a connection
/// after ExpiredProviderToken and the like) before the core hears the answer. Loop-confined.
public final class APNsSender: PushSender {
    private let loop: EventLoop
    private let apns: Configuration.APNsSettings
    private let logger: Logger
    private let policy = OutcomePolicy()
    private var apps: [App]

    private final class App {
        let settings: Configuration.AppSettings
        var credentials: AppCredentials
        var clients: [APNsEnvironment: APNsClient] = [:]
        /// Kept across credential reloads, which replace the pools.
        var poolEvents: [APNsEnvironment: PoolEventCounts] = [:]
        init(_ credentials: AppCredentials) {
            settings = credentials.app
            self.credentials = credentials
        }
    }

    public init(credentials: [AppCredentials], loop: EventLoop, apns: Configuration.APNsSettings, logger: Logger) {
        self.loop = loop
        self.apns = apns
        self.logger = logger
        apps = credentials.map(App.init)
    }

    public func send(_ notification: PushNotification, to destination: Destination, afterConnection: Int,
                     completion: @escaping (PushOutcome) -> Void) -> SendAdmission {
        let client: APNsClient
        do {
            client = try self.client(apps[destination.app], destination.environment)
        } catch {
            return .unavailable("\(error)")
        }
        let policy = self.policy
        let accepted = client.send(notification, afterConnection: afterConnection) { outcome in
            client.handleConnectionAdvice(outcome, advice: policy.connectionAdvice(outcome.result))
            completion(PushOutcome(result: outcome.result, connectionID: outcome.connectionID))
        }
        return accepted ? .accepted : .refused
    }

    public func addMetrics(to snapshot: inout MetricsSnapshot) {
        for (index, app) in apps.enumerated() {
            if index < snapshot.tokensSigned.count { snapshot.tokensSigned[index] = app.credentials.tokenCache?.tokensMade ?? 0 }
            for environment in [APNsEnvironment.production, .sandbox] {
                guard let events = app.poolEvents[environment] else { continue }
                snapshot.pools.append(events.snapshot(app.clients[environment]?.pool, app: app.settings.name,
                                                      environment: environment.rawValue, connectionsPerPool: apns.connectionsPerPool))
            }
        }
    }

    private func client(_ app: App, _ environment: APNsEnvironment) throws -> APNsClient {
        if let client = app.clients[environment] { return client }
        let urlText = environment == .production ? apns.productionURL : apns.sandboxURL
        guard let url = APNsURL(urlText) else { throw ConfigurationError(["bad APNs URL \(urlText)"]) }
        let options = HTTP2ConnectionOptions(
            connectTimeoutMilliseconds: apns.connectTimeoutMs, pingIdleMilliseconds: apns.pingIdleSeconds * 1000,
            pingTimeoutMilliseconds: apns.pingTimeoutSeconds * 1000)
        let client = try APNsClient(
            loop: loop, host: url.host, port: url.port, tls: app.credentials.tls, tokenCache: app.credentials.tokenCache,
            connections: apns.connectionsPerPool, requestTimeoutMilliseconds: apns.requestTimeoutMs, proxy: apns.proxy,
            connectionOptions: options, maxQueued: apns.maxQueuedPerPool)
        let name = app.settings.name
        let logger = self.logger
        let counts = app.poolEvents[environment] ?? PoolEventCounts()
        app.poolEvents[environment] = counts
        client.pool.onEvent = { event in
            counts.count(event)
            Self.log(event, app: name, environment: environment, logger: logger)
        }
        client.pool.start()
        app.clients[environment] = client
        return client
    }

    /// Re-reads the key or certificate, so a fixed file takes effect without a restart, and drops the old
    /// connections (APNs binds a connection to the first key it saw).
    public func reloadCredentials(app index: Int) -> String? {
        let app = apps[index]
        do {
            app.credentials = try AppCredentials.load(app.settings, apns: apns)
        } catch {
            return "\(error)"
        }
        // Out of the dictionary first: requests failing as the old pools close must not be resent on them.
        let old = app.clients
        app.clients.removeAll()
        for client in old.values { client.close(graceful: true) }
        return nil
    }

    public func connectNow(to destination: Destination) {
        apps[destination.app].clients[destination.environment]?.pool.connectNow()
    }

    public func closeAll() {
        for app in apps {
            for client in app.clients.values { client.close(graceful: false) }
        }
    }

    private static func log(_ event: HTTP2PoolEvent, app: String, environment: APNsEnvironment, logger: Logger) {
        let where_: [String: LogValue] = ["app": .string(app), "environment": .string(environment.rawValue)]
        switch event {
        case .connection(.connected(let id, let streams)):
            logger.info("apns connected", where_.merging(["connection": .int(id), "max_streams": .int(streams)]) { a, _ in a })
        case .connection(.goaway(let id, let last, let code, let reason)):
            logger.warning("apns goaway", where_.merging([
                "connection": .int(id), "last_stream": .int(Int(last)), "error_code": .int(Int(code)), "reason": .string(reason ?? ""),
            ]) { a, _ in a })
        case .connection(.closed(let id, let error?)):
            let level: LogLevel = if case .tlsFailed = error { .error } else { .warning }
            logger.log(level, level == .error ? "tls failed" : "apns connection lost",
                       where_.merging(["connection": .int(id), "error": .string(error.description)]) { a, _ in a })
        case .reconnectScheduled(let delay, let failures):
            logger.warning("apns reconnect scheduled", where_.merging(["delay_ms": .int(delay), "failures": .int(failures)]) { a, _ in a })
        default:
            break
        }
    }
}

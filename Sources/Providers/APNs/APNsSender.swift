import HTTP2
import ProviderKit
import PushCore
import Reactor

/// `PushSender` over APNs: per app its loaded credential and one `APNsClient` (an HTTP/2 pool) per
/// environment, made on first use. Acts on what APNs says about connections and tokens (retire a connection
/// after ExpiredProviderToken and the like) before the core hears the answer. Loop-confined.
public final class APNsSender: PushSender {
    private let loop: EventLoop
    private let apns: APNsSettings
    private let logger: Logger
    private let policy = OutcomePolicy()
    /// By app index (the destinations' `app`); nil for another provider's app.
    private var apps: [App?]

    private final class App {
        let name: String
        let auth: APNsAuth
        var credential: APNsCredential
        var clients: [APNsEnvironment: APNsClient] = [:]
        /// Kept across credential reloads, which replace the pools.
        var poolEvents: [APNsEnvironment: PoolEventCounts] = [:]
        init(_ app: ProviderApp<APNsAuth, APNsCredential>) {
            name = app.name
            auth = app.auth
            credential = app.credential
        }
    }

    /// `apps`: the configuration's APNs apps.
    public init(apps: [ProviderApp<APNsAuth, APNsCredential>], loop: EventLoop, apns: APNsSettings, logger: Logger) {
        self.loop = loop
        self.apns = apns
        self.logger = logger
        var byIndex = [App?](repeating: nil, count: (apps.map(\.index).max() ?? -1) + 1)
        for app in apps { byIndex[app.index] = App(app) }
        self.apps = byIndex
    }

    public func send(_ notification: PushNotification, to destination: Destination, afterConnection: Int,
                     completion: @escaping (PushOutcome) -> Void) -> SendAdmission {
        let client: APNsClient
        do {
            guard destination.app < apps.count, let app = apps[destination.app] else { return .unavailable("app \(destination.app) is not an APNs app") }
            client = try self.client(app, destination.environment)
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

    public func addMetrics(to metrics: inout ProviderMetrics) {
        for (index, app) in apps.enumerated() {
            guard let app else { continue }
            if index < metrics.tokensSigned.count { metrics.tokensSigned[index] = app.credential.tokenCache?.tokensMade ?? 0 }
            for environment in [APNsEnvironment.production, .sandbox] {
                guard let events = app.poolEvents[environment] else { continue }
                metrics.pools.append(events.snapshot(app.clients[environment]?.pool, app: app.name,
                                                      environment: environment.rawValue, connectionsPerPool: apns.connectionsPerPool))
            }
        }
    }

    private func client(_ app: App, _ environment: APNsEnvironment) throws -> APNsClient {
        if let client = app.clients[environment] { return client }
        let urlText = environment == .production ? apns.productionURL : apns.sandboxURL
        guard let url = HTTPSURL(urlText) else { throw ConfigurationError(["bad APNs URL \(urlText)"]) }
        let options = HTTP2ConnectionOptions(
            connectTimeoutMilliseconds: apns.connectTimeoutMs, pingIdleMilliseconds: apns.pingIdleSeconds * 1000,
            pingTimeoutMilliseconds: apns.pingTimeoutSeconds * 1000)
        let client = try APNsClient(
            loop: loop, host: url.host, port: url.port, tls: app.credential.tls, tokenCache: app.credential.tokenCache,
            connections: apns.connectionsPerPool, requestTimeoutMilliseconds: apns.requestTimeoutMs, proxy: apns.proxy,
            connectionOptions: options, maxQueued: apns.maxQueuedPerPool, staggerMilliseconds: apns.connectionStaggerMs)
        let name = app.name
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
        guard index < apps.count, let app = apps[index] else { return "app \(index) is not an APNs app" }
        do {
            app.credential = try APNsCredential.load(app.auth, caFile: apns.caFile)
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
        guard destination.app < apps.count else { return }
        apps[destination.app]?.clients[destination.environment]?.pool.connectNow()
    }

    public func closeAll() {
        for case let app? in apps {
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

import HTTP2
import PushCore
import Reactor

/// The part of a sender that every provider with an OAuth access token over one HTTP/2 host shares (FCM HTTP v1,
/// Huawei Push Kit): per app its `AccessTokenCache` and one pool made on first use, a JSON POST with the bearer
/// token, the token dropped when the provider says it went stale, the pools' logs and metrics. What differs (the
/// path, the body, how an answer is read) the provider's sender passes in. Loop-confined.
public final class BearerPoolSender {
    /// What the provider read from one HTTP answer: the result for the core, and what it says of the token.
    public enum TokenVerdict: Sendable { case accepted, refused, unknown }

    /// Reads an app's credential files again: the next tokens' exchange and the send path.
    public typealias Reload = () throws -> (exchange: AccessTokenCache.Exchange, path: String)

    public final class App {
        public let name: String
        public let tokens: AccessTokenCache
        let reload: Reload
        /// `POST` goes here (`/v1/projects/<project>/messages:send`...); replaced with the credential.
        public var path: String
        var pool: HTTP2ConnectionPool?
        /// Made with the pool, so a scrape lists only pools that exist.
        var poolEvents: PoolEventCounts?
        init(name: String, path: String, tokens: AccessTokenCache, reload: @escaping Reload) {
            self.name = name
            self.reload = reload
            self.path = path
            self.tokens = tokens
        }
    }

    private let loop: EventLoop
    private let settings: BearerPoolSettings
    private let logger: Logger
    /// The provider's word in logs and errors (`fcm`, `hms`).
    private let platform: Platform
    public private(set) var apps: [Int: App] = [:]

    public init(loop: EventLoop, settings: BearerPoolSettings, platform: Platform, logger: Logger) {
        self.loop = loop
        self.settings = settings
        self.platform = platform
        self.logger = logger
    }

    /// Adds one app (index among the configuration's apps) whose tokens come from `exchange`; `reload` reads its
    /// credential again after a pause.
    public func add(index: Int, name: String, path: String, exchange: @escaping AccessTokenCache.Exchange, reload: @escaping Reload) {
        apps[index] = App(name: name, path: path, tokens: AccessTokenCache(loop: loop, exchange: exchange), reload: reload)
    }

    /// POSTs `body` for app `index` with its bearer token (and `headers`, a provider's own: Push Kit v3's
    /// `push-type`). `grantRefused` is the answer when the token endpoint refused the credential (nothing is sent);
    /// `read` turns an HTTP answer into the result and the token's fate.
    public func send(app index: Int, body: [UInt8], headers extra: [HTTP2Header] = [], afterConnection: Int,
                     grantRefused: @escaping (String) -> DeliveryResult,
                     read: @escaping (HTTP2Response, AccessTokenCache.Token) -> (DeliveryResult, TokenVerdict),
                     completion: @escaping (PushOutcome) -> Void) -> SendAdmission {
        guard let app = apps[index] else { return .unavailable("app \(index) has no \(platform.displayName) credential") }
        let pool: HTTP2ConnectionPool
        do { pool = try self.pool(app) } catch { return .unavailable("\(error)") }
        var admission = SendAdmission.accepted
        var synchronous = true
        let timeout = settings.requestTimeoutMs
        app.tokens.withToken { result in
            let token: AccessTokenCache.Token
            switch result {
            case .failure(.refused(let detail)):
                return completion(PushOutcome(result: grantRefused(detail), connectionID: 0))
            case .failure(.unavailable(let detail)):
                return completion(PushOutcome(result: .transport(.connectionFailed(detail)), connectionID: 0))
            case .success(let t):
                token = t
            }
            let request = HTTP2Request(
                method: "POST", path: app.path,
                headers: [HTTP2Header(name: "content-type", value: "application/json"),
                          HTTP2Header(name: "authorization", value: token.header, neverIndex: true)] + extra,
                body: body, timeoutMilliseconds: timeout)
            let taken = pool.send(request, onConnectionNewerThan: afterConnection) { result in
                switch result {
                case .success(let response):
                    let (answer, verdict) = read(response, token)
                    switch verdict {
                    case .refused: app.tokens.refused(token)
                    case .accepted: app.tokens.accepted(token)
                    case .unknown: break
                    }
                    completion(PushOutcome(result: answer, connectionID: response.connectionID))
                case .failure(let error):
                    completion(PushOutcome(result: .transport(TransportFailure(error)), connectionID: 0))
                }
            }
            if !taken {
                // Pushed back after waiting for a token: the core has been told `accepted`, so it hears "not sent".
                if synchronous { admission = .refused } else { completion(PushOutcome(result: .transport(.notProcessed), connectionID: 0)) }
            }
        }
        synchronous = false
        return admission
    }

    private func pool(_ app: App) throws -> HTTP2ConnectionPool {
        if let pool = app.pool { return pool }
        guard let url = HTTPSURL(settings.url) else { throw ConfigurationError(["bad \(platform.displayName) URL \(settings.url)"]) }
        let endpoint = HTTP2Endpoint(host: url.host, port: url.port, proxy: settings.proxy)
        try endpoint.validate()
        let options = HTTP2PoolOptions(
            connectionCount: settings.connectionsPerPool, maxQueuedRequests: settings.maxQueuedPerPool,
            connection: HTTP2ConnectionOptions(connectTimeoutMilliseconds: settings.connectTimeoutMs))
        let pool = try HTTP2ConnectionPool(loop: loop, endpoint: endpoint, tlsConfiguration: TLSConfiguration(caFile: settings.caFile),
                                           options: options)
        let name = app.name
        let logger = self.logger
        let word = platform.rawValue
        let counts = PoolEventCounts()
        app.poolEvents = counts
        pool.onEvent = { event in
            counts.count(event)
            Self.log(event, app: name, platform: word, logger: logger)
        }
        pool.start()
        app.pool = pool
        return pool
    }

    /// Reads the app's credential again, so a fixed file takes effect without a restart, and forgets the old
    /// access token; nil on success, else why not. The pool stays: neither provider binds anything to a connection.
    public func reloadCredentials(app index: Int) -> String? {
        guard let app = apps[index] else { return "app \(index) has no \(platform.displayName) credential" }
        do {
            let (exchange, path) = try app.reload()
            app.tokens.replace(exchange: exchange)
            app.path = path
        } catch {
            return "\(error)"
        }
        return nil
    }

    public func connectNow(app index: Int) { apps[index]?.pool?.connectNow() }

    public func closeAll() {
        for app in apps.values { app.pool?.close(graceful: false) }
    }

    /// Each app's pool (environment `production`, the only one) and its token exchanges.
    public func addMetrics(to metrics: inout ProviderMetrics) {
        for (index, app) in apps.sorted(by: { $0.key < $1.key }) {
            if index < metrics.tokensSigned.count {
                metrics.tokensSigned[index] = app.tokens.exchanges
                metrics.tokenExchanges[index] = app.tokens.stats
            }
            guard let events = app.poolEvents else { continue }
            metrics.pools.append(events.snapshot(app.pool, app: app.name, environment: ServiceEnvironment.production.rawValue,
                                                  connectionsPerPool: settings.connectionsPerPool))
        }
    }

    private static func log(_ event: HTTP2PoolEvent, app: String, platform: String, logger: Logger) {
        let where_: [String: LogValue] = ["app": .string(app), "platform": .string(platform)]
        switch event {
        case .connection(.connected(let id, let streams)):
            logger.info("\(platform) connected", where_.merging(["connection": .int(id), "max_streams": .int(streams)]) { a, _ in a })
        case .connection(.goaway(let id, let last, let code, _)):
            logger.warning("\(platform) goaway", where_.merging(["connection": .int(id), "last_stream": .int(Int(last)), "error_code": .int(Int(code))]) { a, _ in a })
        case .connection(.closed(let id, let error?)):
            logger.warning("\(platform) connection lost", where_.merging(["connection": .int(id), "error": .string(error.description)]) { a, _ in a })
        case .reconnectScheduled(let delay, let failures):
            logger.warning("\(platform) reconnect scheduled", where_.merging(["delay_ms": .int(delay), "failures": .int(failures)]) { a, _ in a })
        default:
            break
        }
    }
}

/// A sender made of a `BearerPoolSender` (FCM's, Huawei's): its reloads, connections and metrics are the shared part's.
public protocol BearerPoolBacked: PushSender {
    var shared: BearerPoolSender { get }
}

extension BearerPoolBacked {
    public func reloadCredentials(app index: Int) -> String? { shared.reloadCredentials(app: index) }
    public func connectNow(to destination: Destination) { shared.connectNow(app: destination.app) }
    public func closeAll() { shared.closeAll() }
    public func addMetrics(to metrics: inout ProviderMetrics) { shared.addMetrics(to: &metrics) }
}

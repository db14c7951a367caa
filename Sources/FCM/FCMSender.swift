import CurlHTTP
import HTTP2
import ProviderKit
import PushCore
import Reactor

/// `PushSender` over FCM HTTP v1: per FCM app its service account's access tokens and one HTTP/2 pool to the
/// FCM host (a pool per project), made on first use. A message goes out as
/// `POST /v1/projects/<project>/messages:send` with `{"message":<the job's bytes>}`. Acts on 401s before the
/// core hears them: the refused access token is dropped, so the core's resend carries a new one. Loop-confined.
public final class FCMSender: PushSender {
    private let loop: EventLoop
    private let settings: FCMSettings
    private let logger: Logger
    private var apps: [Int: App] = [:]
    private let post: OAuthTokenEndpoint.Post

    private final class App {
        let name: String
        let auth: FCMAuth
        let tokens: AccessTokenCache
        var pool: HTTP2ConnectionPool?
        /// Made with the pool, so a scrape lists only pools that exist.
        var poolEvents: PoolEventCounts?
        var path: String
        init(_ app: ProviderApp<FCMAuth, ServiceAccount>, tokens: AccessTokenCache) {
            name = app.name
            auth = app.auth
            self.tokens = tokens
            path = Self.path(app.credential)
        }
        static func path(_ account: ServiceAccount) -> String { "/v1/projects/\(account.projectID)/messages:send" }
    }

    /// `apps`: the configuration's FCM apps; `post` makes the token exchanges' POSTs (tests hold or count them).
    public init(apps: [ProviderApp<FCMAuth, ServiceAccount>], loop: EventLoop, fcm: FCMSettings, logger: Logger,
                post: @escaping OAuthTokenEndpoint.Post = OAuthTokenEndpoint.curlPost) {
        self.loop = loop
        settings = fcm
        self.logger = logger
        self.post = post
        let options = Self.tokenOptions(fcm)
        for app in apps {
            let tokens = AccessTokenCache(loop: loop, exchange: FCMTokenGrant.exchange(app.credential, options: options, post: post))
            self.apps[app.index] = App(app, tokens: tokens)
        }
    }

    static func tokenOptions(_ fcm: FCMSettings) -> CurlPost.Options {
        CurlPost.Options(timeoutMilliseconds: fcm.tokenTimeoutMs, connectTimeoutMilliseconds: min(fcm.connectTimeoutMs, fcm.tokenTimeoutMs),
                         caFile: fcm.caFile, proxy: fcm.proxy)
    }

    /// The body FCM expects around the producer's message bytes, which are not re-encoded; `validateOnly` asks
    /// FCM for its dry run (every check of a real send, nothing delivered).
    public static func body(message: [UInt8], validateOnly: Bool = false) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(message.count + 34)
        body.append(contentsOf: Array("{\"message\":".utf8))
        body.append(contentsOf: message)
        if validateOnly { body.append(contentsOf: Array(",\"validate_only\":true".utf8)) }
        body.append(UInt8(ascii: "}"))
        return body
    }

    public func send(_ notification: PushNotification, to destination: Destination, afterConnection: Int,
                     completion: @escaping (PushOutcome) -> Void) -> SendAdmission {
        guard let app = apps[destination.app] else { return .unavailable("app \(destination.app) is not an FCM app") }
        let pool: HTTP2ConnectionPool
        do { pool = try self.pool(app) } catch { return .unavailable("\(error)") }
        var admission = SendAdmission.accepted
        var synchronous = true
        app.tokens.withToken { [weak self] result in
            let token: AccessTokenCache.Token
            switch result {
            case .failure(.refused(let detail)):
                return completion(PushOutcome(result: .fcm(FCMResponse(status: 0, grantRefused: detail)), connectionID: 0))
            case .failure(.unavailable(let detail)):
                return completion(PushOutcome(result: .transport(.connectionFailed(detail)), connectionID: 0))
            case .success(let t):
                token = t
            }
            guard let self else { return }
            let request = HTTP2Request(
                method: "POST", path: app.path,
                headers: [HTTP2Header(name: "content-type", value: "application/json"),
                          HTTP2Header(name: "authorization", value: token.header, neverIndex: true)],
                body: Self.body(message: notification.payload, validateOnly: notification.validateOnly), timeoutMilliseconds: self.settings.requestTimeoutMs)
            let taken = pool.send(request, onConnectionNewerThan: afterConnection) { result in
                switch result {
                case .success(let response):
                    var answer = FCMResponse.decode(status: response.status, body: response.body, retryAfter: response.header("retry-after"))
                    if response.status == 401 && answer.errorCode == nil {
                        answer.afterTokenRefresh = token.afterRefusal
                        app.tokens.refused(token)
                    } else if response.status == 200 {
                        app.tokens.accepted(token)
                    }
                    completion(PushOutcome(result: .fcm(answer), connectionID: response.connectionID))
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
        guard let url = HTTPSURL(settings.url) else { throw ConfigurationError(["bad FCM URL \(settings.url)"]) }
        let endpoint = HTTP2Endpoint(host: url.host, port: url.port, proxy: settings.proxy)
        try endpoint.validate()
        let options = HTTP2PoolOptions(
            connectionCount: settings.connectionsPerPool, maxQueuedRequests: settings.maxQueuedPerPool,
            connection: HTTP2ConnectionOptions(connectTimeoutMilliseconds: settings.connectTimeoutMs))
        let pool = try HTTP2ConnectionPool(loop: loop, endpoint: endpoint, tlsConfiguration: TLSConfiguration(caFile: settings.caFile),
                                           options: options)
        let name = app.name
        let logger = self.logger
        let counts = PoolEventCounts()
        app.poolEvents = counts
        pool.onEvent = { event in
            counts.count(event)
            Self.log(event, app: name, logger: logger)
        }
        pool.start()
        app.pool = pool
        return pool
    }

    /// What to check when FCM refused an app's credential: the Firebase console's APNs key when FCM says the
    /// third party (Apple) refused, else the service account.
    public static func credentialHint(_ reason: String) -> String {
        if reason.hasPrefix("THIRD_PARTY_AUTH_ERROR") {
            return "the APNs key (or web push key) in the Firebase console is missing or invalid: Project settings, Cloud Messaging"
        }
        return "check the service account file (herald check-config); it needs the Firebase Cloud Messaging API Admin role"
    }

    /// Reads the service account file again, so a fixed file takes effect without a restart, and forgets the
    /// old access token. The pool stays: FCM binds nothing to a connection.
    public func reloadCredentials(app index: Int) -> String? {
        guard let app = apps[index] else { return "app \(index) is not an FCM app" }
        do {
            let account = try app.auth.load()
            app.tokens.replace(exchange: FCMTokenGrant.exchange(account, options: Self.tokenOptions(settings), post: post))
            app.path = App.path(account)
        } catch {
            return "\(error)"
        }
        return nil
    }

    public func connectNow(to destination: Destination) {
        apps[destination.app]?.pool?.connectNow()
    }

    public func closeAll() {
        for app in apps.values { app.pool?.close(graceful: false) }
    }

    /// Each FCM app's pool (environment `production`, FCM's only one) and its OAuth assertions signed (one per
    /// access token fetched).
    public func addMetrics(to metrics: inout ProviderMetrics) {
        for (index, app) in apps.sorted(by: { $0.key < $1.key }) {
            if index < metrics.tokensSigned.count {
                metrics.tokensSigned[index] = app.tokens.exchanges
                metrics.tokenExchanges[index] = app.tokens.stats
            }
            guard let events = app.poolEvents else { continue }
            metrics.pools.append(events.snapshot(app.pool, app: app.name, environment: APNsEnvironment.production.rawValue,
                                                  connectionsPerPool: settings.connectionsPerPool))
        }
    }

    private static func log(_ event: HTTP2PoolEvent, app: String, logger: Logger) {
        let where_: [String: LogValue] = ["app": .string(app), "platform": .string("fcm")]
        switch event {
        case .connection(.connected(let id, let streams)):
            logger.info("fcm connected", where_.merging(["connection": .int(id), "max_streams": .int(streams)]) { a, _ in a })
        case .connection(.goaway(let id, let last, let code, _)):
            logger.warning("fcm goaway", where_.merging(["connection": .int(id), "last_stream": .int(Int(last)), "error_code": .int(Int(code))]) { a, _ in a })
        case .connection(.closed(let id, let error?)):
            logger.warning("fcm connection lost", where_.merging(["connection": .int(id), "error": .string(error.description)]) { a, _ in a })
        case .reconnectScheduled(let delay, let failures):
            logger.warning("fcm reconnect scheduled", where_.merging(["delay_ms": .int(delay), "failures": .int(failures)]) { a, _ in a })
        default:
            break
        }
    }
}

import APNs
import CurlHTTP
import FCM
import HTTP2
import PushCore
import Reactor

/// `PushSender` over FCM HTTP v1: per FCM app its service account's access tokens and one HTTP/2 pool to the
/// FCM host (a pool per project), made on first use. A message goes out as
/// `POST /v1/projects/<project>/messages:send` with `{"message":<the job's bytes>}`. Acts on 401s before the
/// core hears them: the refused access token is dropped, so the core's resend carries a new one. Loop-confined.
public final class FCMSender: PushSender {
    private let loop: EventLoop
    private let settings: Configuration.FCMSettings
    private let logger: Logger
    private var apps: [Int: App] = [:]

    private final class App {
        let settings: Configuration.AppSettings
        let tokens: FCMAccessTokens
        var pool: HTTP2ConnectionPool?
        /// Made with the pool, so a scrape lists only pools that exist.
        var poolEvents: PoolEventCounts?
        var path: String
        init(_ settings: Configuration.AppSettings, tokens: FCMAccessTokens) {
            self.settings = settings
            self.tokens = tokens
            path = Self.path(tokens.account)
        }
        static func path(_ account: ServiceAccount) -> String { "/v1/projects/\(account.projectID)/messages:send" }
    }

    /// `credentials` is every app of the configuration, in order (its indexes are the destinations'); only the
    /// FCM ones are used.
    public init(credentials: [AppCredentials], loop: EventLoop, fcm: Configuration.FCMSettings, logger: Logger) {
        self.loop = loop
        settings = fcm
        self.logger = logger
        let options = Self.tokenOptions(fcm)
        for (index, credential) in credentials.enumerated() {
            guard let account = credential.serviceAccount else { continue }
            apps[index] = App(credential.app, tokens: FCMAccessTokens(account: account, loop: loop, options: options))
        }
    }

    static func tokenOptions(_ fcm: Configuration.FCMSettings) -> CurlPost.Options {
        CurlPost.Options(timeoutMilliseconds: fcm.tokenTimeoutMs, connectTimeoutMilliseconds: min(fcm.connectTimeoutMs, fcm.tokenTimeoutMs),
                         caFile: fcm.caFile, proxy: fcm.proxy)
    }

    /// The body FCM expects around the producer's message bytes, which are not re-encoded.
    public static func body(message: [UInt8]) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(message.count + 12)
        body.append(contentsOf: Array("{\"message\":".utf8))
        body.append(contentsOf: message)
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
            let token: FCMAccessTokens.Token
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
                body: Self.body(message: notification.payload), timeoutMilliseconds: self.settings.requestTimeoutMs)
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
                    completion(PushOutcome(result: .transport(APNsClient.transportFailure(error)), connectionID: 0))
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
        guard let url = APNsURL(settings.url) else { throw ConfigurationError(["bad FCM URL \(settings.url)"]) }
        let endpoint = HTTP2Endpoint(host: url.host, port: url.port, proxy: settings.proxy)
        try endpoint.validate()
        let options = HTTP2PoolOptions(
            connectionCount: settings.connectionsPerPool, maxQueuedRequests: settings.maxQueuedPerPool,
            connection: HTTP2ConnectionOptions(connectTimeoutMilliseconds: settings.connectTimeoutMs))
        let pool = try HTTP2ConnectionPool(loop: loop, endpoint: endpoint, tlsConfiguration: TLSConfiguration(caFile: settings.caFile),
                                           options: options)
        let name = app.settings.name
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

    /// Reads the service account file again, so a fixed file takes effect without a restart, and forgets the
    /// old access token. The pool stays: FCM binds nothing to a connection.
    /// What to check when FCM refused an app's credential: the Firebase console's APNs key when FCM says the
    /// third party (Apple) refused, else the service account.
    static func credentialHint(_ reason: String) -> String {
        if reason.hasPrefix("THIRD_PARTY_AUTH_ERROR") {
            return "the APNs key (or web push key) in the Firebase console is missing or invalid: Project settings, Cloud Messaging"
        }
        return "check the service account file (herald check-config); it needs the Firebase Cloud Messaging API Admin role"
    }

    public func reloadCredentials(app index: Int) -> String? {
        guard let app = apps[index], let fcm = app.settings.fcm else { return "app \(index) is not an FCM app" }
        do {
            let account = try ServiceAccount.load(file: fcm.serviceAccountFile)
            _ = try OAuthAssertion.sign(account, issuedAt: wallClockMillis() / 1000)
            app.tokens.replace(account)
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
    public func addMetrics(to snapshot: inout MetricsSnapshot) {
        for (index, app) in apps.sorted(by: { $0.key < $1.key }) {
            if index < snapshot.tokensSigned.count { snapshot.tokensSigned[index] = app.tokens.exchanges }
            guard let events = app.poolEvents else { continue }
            snapshot.pools.append(events.snapshot(app.pool, app: app.settings.name, environment: APNsEnvironment.production.rawValue,
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

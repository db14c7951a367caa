import Foundation
import HTTP2
import ProviderKit
import PushCore
import Reactor

/// The worker's side of Web Push: each message encrypted for its subscription and signed with its app's VAPID
/// key, sent as `POST <endpoint path>` on a pool to the endpoint's origin. Subscriptions name many push services,
/// so pools are made per origin on first use, at most `maxPools` of them, and closed once idle. Each pool has its
/// `PoolEventCounts`, one pool line per origin in the metrics. Loop-confined.
public final class WebPushSender: PushSender {
    private let loop: EventLoop
    private let settings: WebPushSettings
    private let logger: Logger
    private var apps: [Int: App] = [:]
    private var pools: [String: OriginPool] = [:]
    private var sweep: LoopTimer?
    private let now: () -> Int64

    /// One app's VAPID cache and allow-list.
    final class App {
        let name: String
        let auth: WebPushAuth
        var credential: WebPushCredential
        init(name: String, auth: WebPushAuth, credential: WebPushCredential) {
            self.name = name
            self.auth = auth
            self.credential = credential
        }
    }

    /// One push service's pool, with its events and when it last carried a message.
    final class OriginPool {
        let origin: String
        let pool: HTTP2ConnectionPool
        let events = PoolEventCounts()
        var lastUsed: UInt64
        init(origin: String, pool: HTTP2ConnectionPool, lastUsed: UInt64) {
            self.origin = origin
            self.pool = pool
            self.lastUsed = lastUsed
        }
    }

    public init(apps: [ProviderApp<WebPushAuth, WebPushCredential>], loop: EventLoop, settings: WebPushSettings, logger: Logger,
                now: @escaping () -> Int64 = { wallClockMillis() / 1000 }) {
        self.loop = loop
        self.settings = settings
        self.logger = logger
        self.now = now
        for app in apps { self.apps[app.index] = App(name: app.name, auth: app.auth, credential: app.credential) }
    }

    /// How many pools are open now (tests, metrics).
    public var poolCount: Int { pools.count }

    /// A job's notification (made by `JobSpec.webPushNotification` after intake checked it).
    public func send(_ notification: PushNotification, to destination: Destination, afterConnection: Int,
                     completion: @escaping (PushOutcome) -> Void) -> SendAdmission {
        let message: WebPushMessage
        do { message = try notification.webPushMessage() } catch {
            completion(PushOutcome(result: .answer(WebPushResponse(status: 0, serviceReason: "\(error)")), connectionID: 0))
            return .accepted
        }
        return send(message, app: destination.app, afterConnection: afterConnection, completion: completion)
    }

    /// What to check when a push service refused an app's VAPID credential.
    public static func credentialHint(_ reason: String) -> String {
        "check the app's webpush.vapid_key and subject (herald check-config); subscriptions made with another key are refused by their push service (docs/webpush.md)"
    }

    /// Encrypts, signs and sends one message; the answer (or transport failure) comes back on the loop.
    /// A subscription outside the app's allow-list is refused unsent, as the producer's error.
    public func send(_ message: WebPushMessage, app index: Int, afterConnection: Int = 0,
                     completion: @escaping (PushOutcome) -> Void) -> SendAdmission {
        guard let app = apps[index] else { return .unavailable("app \(index) is not a Web Push app") }
        do { try app.credential.policy.check(message.subscription.endpoint) } catch {
            completion(PushOutcome(result: .answer(WebPushResponse(status: 0, serviceReason: "EndpointRefused: \(error)")), connectionID: 0))
            return .accepted
        }
        let request: WebPushRequest
        do { request = try message.request(vapid: app.credential.tokens, now: now()) } catch {
            completion(PushOutcome(result: .answer(WebPushResponse(status: 0, serviceReason: "\(error)")), connectionID: 0))
            return .accepted
        }
        let pool: OriginPool
        do { pool = try self.pool(for: request.endpoint) } catch { return .unavailable("\(error)") }
        pool.lastUsed = monotonicNanos()
        let http = HTTP2Request(
            method: "POST", path: request.endpoint.path,
            headers: request.headers.map { HTTP2Header(name: $0.0, value: $0.1, neverIndex: $0.0 == "authorization") },
            body: request.body, timeoutMilliseconds: settings.requestTimeoutMs)
        let taken = pool.pool.send(http, onConnectionNewerThan: afterConnection) { result in
            switch result {
            case .success(let response):
                let answer = WebPushResponse.decode(status: response.status, body: response.body, location: response.header("location"),
                                                    retryAfter: response.header("retry-after"))
                completion(PushOutcome(result: .answer(answer), connectionID: response.connectionID))
            case .failure(let error):
                completion(PushOutcome(result: .transport(TransportFailure(error)), connectionID: 0))
            }
        }
        return taken ? .accepted : .refused
    }

    private func pool(for endpoint: PushEndpoint) throws -> OriginPool {
        if let existing = pools[endpoint.origin] { return existing }
        if pools.count >= settings.maxPools { closeIdle(olderThan: 0) }
        guard pools.count < settings.maxPools else {
            throw ConfigurationError(["\(settings.maxPools) push-service pools are open and busy (web_push.max_pools)"])
        }
        let options = HTTP2PoolOptions(
            connectionCount: settings.connectionsPerPool, maxQueuedRequests: settings.maxQueuedPerPool,
            connection: HTTP2ConnectionOptions(connectTimeoutMilliseconds: settings.connectTimeoutMs))
        let pool = try HTTP2ConnectionPool(loop: loop, endpoint: HTTP2Endpoint(host: endpoint.host, port: endpoint.port),
                                           tlsConfiguration: TLSConfiguration(caFile: settings.caFile), options: options)
        let entry = OriginPool(origin: endpoint.origin, pool: pool, lastUsed: monotonicNanos())
        let logger = self.logger, origin = endpoint.origin
        pool.onEvent = { event in
            entry.events.count(event)
            if case .connection(.closed(let id, let error?)) = event {
                logger.warning("webpush connection lost", ["origin": .string(origin), "connection": .int(id), "error": .string(error.description)])
            }
        }
        pool.start()
        pools[endpoint.origin] = entry
        scheduleSweep()
        return entry
    }

    /// Closes the pools that carried nothing for `idleMs` and have nothing in flight.
    func closeIdle(olderThan idleMs: Int) {
        let cutoff = monotonicNanos() &- UInt64(idleMs) * 1_000_000
        for (origin, entry) in pools where entry.lastUsed <= cutoff && entry.pool.inFlight == 0 && entry.pool.queued == 0 {
            entry.pool.close(graceful: true)
            pools[origin] = nil
        }
    }

    private func scheduleSweep() {
        guard sweep == nil else { return }
        let interval = max(1000, settings.idlePoolMs / 2)
        sweep = loop.schedule(afterMilliseconds: interval) { [weak self] in
            guard let self else { return }
            self.sweep = nil
            self.closeIdle(olderThan: self.settings.idlePoolMs)
            if !self.pools.isEmpty { self.scheduleSweep() }
        }
    }

    public func closeAll() {
        sweep?.cancel()
        sweep = nil
        for entry in pools.values { entry.pool.close(graceful: false) }
        pools.removeAll()
    }

    /// Reads the app's VAPID key again (a rotated key takes effect without a restart, its tokens signed afresh).
    public func reloadCredentials(app index: Int) -> String? {
        guard let app = apps[index] else { return "app \(index) is not a Web Push app" }
        do { app.credential = try app.auth.load() } catch { return "\(error)" }
        return nil
    }

    /// One pool line per origin (its `environment` label holds the origin) and each app's VAPID tokens signed.
    public func addMetrics(to metrics: inout ProviderMetrics) {
        for (index, app) in apps where index < metrics.tokensSigned.count {
            metrics.tokensSigned[index] = app.credential.tokens.tokensSigned
        }
        let app = apps.values.first?.name ?? "webpush"
        for entry in pools.values.sorted(by: { $0.origin < $1.origin }) {
            metrics.pools.append(entry.events.snapshot(entry.pool, app: app, environment: entry.origin,
                                                        connectionsPerPool: settings.connectionsPerPool))
        }
    }
}

/// What every Web Push app shares in the worker: pool sizes and limits, timeouts, and the test CA.
public struct WebPushSettings: Sendable, Equatable {
    public var connectionsPerPool = 1
    public var maxQueuedPerPool = 10_000
    public var maxPools = 64
    /// A pool that carried nothing this long is closed.
    public var idlePoolMs = 300_000
    public var requestTimeoutMs = 30_000
    public var connectTimeoutMs = 10_000
    /// Trust this CA (the simulator's) instead of the system's roots only.
    public var caFile: String?

    public init() {}
}

/// An app's Web Push settings: its VAPID key (PEM or base64url text, or a file), its contact and its allow-list.
public struct WebPushAuth: Sendable, Equatable {
    /// The key's text (PEM or base64url), or empty when `vapidKeyFile` holds it.
    public var vapidKey: String
    public var vapidKeyFile: String?
    public var subject: String
    public var policy: PushServicePolicy

    public init(vapidKey: String = "", vapidKeyFile: String? = nil, subject: String, policy: PushServicePolicy = PushServicePolicy()) {
        self.vapidKey = vapidKey
        self.vapidKeyFile = vapidKeyFile
        self.subject = subject
        self.policy = policy
    }

    /// The key proven (parsed, its public point read) and the subject checked.
    public func load() throws -> WebPushCredential {
        var text = vapidKey
        if let file = vapidKeyFile {
            guard let data = FileManager.default.contents(atPath: file) else { throw CredentialError.fileNotFound(path: file) }
            text = String(decoding: data, as: UTF8.self)
        }
        let key = try VAPIDKey(text: text)
        return WebPushCredential(tokens: VAPIDTokenCache(signer: try VAPIDSigner(key: key, subject: subject)), policy: policy)
    }
}

/// What a loaded Web Push app signs and checks with.
public struct WebPushCredential: Sendable {
    public let tokens: VAPIDTokenCache
    public let policy: PushServicePolicy
}

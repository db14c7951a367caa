import CurlHTTP
import Foundation
import HTTP2
import ProviderKit
import PushCore
import Reactor

/// The worker's side of Web Push: each message encrypted for its subscription and signed with its app's VAPID
/// key, sent as `POST <endpoint path>` on a pool to the endpoint's origin. Subscriptions name many push services,
/// so pools are made per origin on first use, at most `maxPools` of them, and closed once idle. Each pool has its
/// `PoolEventCounts`, one pool line per origin in the metrics. A service whose TLS handshake picks HTTP/1.1 by
/// ALPN (or no protocol) gets an `HTTP1OriginPool` instead, and every message to it after that goes there; the
/// answers are classified alike. Every address a push service's name resolves to is checked against the app's
/// policy before the connect (a name resolving to a private address is refused, the job failed unsent).
/// Loop-confined.
public final class WebPushSender: PushSender {
    private let loop: EventLoop
    private let settings: WebPushSettings
    private let logger: Logger
    private var apps: [Int: App] = [:]
    private var pools: [String: OriginPool] = [:]
    private var sweep: LoopTimer?
    private let now: () -> Int64
    /// One TLS context for every push service: it offers h2 and http/1.1, so a service without HTTP/2 says so.
    private var tls: TLSContext?
    /// One encryptor for every message, made on first use: its OpenSSL contexts may be used by one thread at a
    /// time, and this sender uses it on its loop only. While OpenSSL cannot make one, each request tries and says why.
    private var encryptor: MessageEncryptor?

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

    /// One push service's pool (HTTP/2, or HTTP/1.1 once the service chose it), with its events and when it
    /// last carried a message.
    final class OriginPool {
        let origin: String
        let endpoint: PushEndpoint
        let policy: PushServicePolicy
        var pool: HTTP2ConnectionPool?
        var http1: HTTP1OriginPool?
        let events = PoolEventCounts()
        var lastUsed: UInt64
        init(origin: String, endpoint: PushEndpoint, policy: PushServicePolicy, pool: HTTP2ConnectionPool, lastUsed: UInt64) {
            self.origin = origin
            self.endpoint = endpoint
            self.policy = policy
            self.pool = pool
            self.lastUsed = lastUsed
        }

        var inFlight: Int { (pool?.inFlight ?? 0) + (http1?.inFlight ?? 0) }

        /// Pools are per origin and per address rule: an app that may reach private addresses (a test setting)
        /// never lends its connections to one that may not.
        static func key(_ origin: String, _ policy: PushServicePolicy) -> String { policy.allowsPrivateAddresses ? origin + " private" : origin }
        var key: String { Self.key(origin, policy) }
        var queued: Int { (pool?.queued ?? 0) + (http1?.queued ?? 0) }

        func close(graceful: Bool) {
            pool?.close(graceful: graceful)
            http1?.close()
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
        if encryptor == nil { encryptor = try? MessageEncryptor() }
        do { request = try message.request(vapid: app.credential.tokens, now: now(), encryptor: encryptor) } catch {
            completion(PushOutcome(result: .answer(WebPushResponse(status: 0, serviceReason: "\(error)")), connectionID: 0))
            return .accepted
        }
        let pool: OriginPool
        do { pool = try self.pool(for: request.endpoint, policy: app.credential.policy) } catch { return .unavailable("\(error)") }
        pool.lastUsed = monotonicNanos()
        return send(request, on: pool, afterConnection: afterConnection, completion: completion) ? .accepted : .refused
    }

    /// On the origin's HTTP/1.1 pool once it has one, else on its HTTP/2 pool; a request the HTTP/2 pool could
    /// not send because the service chose HTTP/1.1 goes again on the HTTP/1.1 pool (it was never sent).
    private func send(_ request: WebPushRequest, on pool: OriginPool, afterConnection: Int, completion: @escaping (PushOutcome) -> Void) -> Bool {
        if let http1 = pool.http1 {
            return http1.send(url: pool.endpoint.origin + request.endpoint.path, headers: request.headers, body: request.body) { result in
                Self.complete(result, completion)
            }
        }
        guard let h2 = pool.pool else { return false }
        let http = HTTP2Request(
            method: "POST", path: request.endpoint.path,
            headers: request.headers.map { HTTP2Header(name: $0.0, value: $0.1, neverIndex: $0.0 == "authorization") },
            body: request.body, timeoutMilliseconds: settings.requestTimeoutMs)
        return h2.send(http, onConnectionNewerThan: afterConnection) { [weak self] result in
            if case .failure(.http1Only) = result, let self, self.pools[pool.key] === pool {
                self.speakHTTP1(pool)
                if self.send(request, on: pool, afterConnection: 0, completion: completion) { return }
                return Self.complete(.failure(.queueFull), completion)
            }
            Self.complete(result, completion)
        }
    }

    /// One answer, whichever protocol carried it, in the same terms: an address the policy refused fails the
    /// message unsent with the policy's reason (as an endpoint off the allow-list does), never as an outage.
    private static func complete(_ result: Result<HTTP2Response, HTTP2ClientError>, _ completion: (PushOutcome) -> Void) {
        switch result {
        case .success(let response):
            let answer = WebPushResponse.decode(status: response.status, body: response.body, location: response.header("location"),
                                                retryAfter: response.header("retry-after"))
            completion(PushOutcome(result: .answer(answer), connectionID: response.connectionID))
        case .failure(.addressRefused(let why)):
            completion(PushOutcome(result: .answer(WebPushResponse(status: 0, serviceReason: "EndpointRefused: \(why)")), connectionID: 0))
        case .failure(let error):
            completion(PushOutcome(result: .transport(TransportFailure(error)), connectionID: 0))
        }
    }

    /// The service chose HTTP/1.1: its HTTP/2 pool closes and an HTTP/1.1 pool with the same address check takes over.
    private func speakHTTP1(_ pool: OriginPool) {
        guard pool.http1 == nil else { return }
        pool.pool?.close(graceful: false)
        pool.pool = nil
        let policy = pool.policy, host = pool.endpoint.host
        let options = CurlPost.Options(timeoutMilliseconds: settings.requestTimeoutMs, connectTimeoutMilliseconds: settings.connectTimeoutMs,
                                       caFile: settings.caFile, http1Only: true) { address in Self.refusal(address, policy: policy, host: host) }
        pool.http1 = HTTP1OriginPool(loop: loop, connections: settings.http1ConnectionsPerOrigin, maxQueued: settings.maxQueuedPerPool, options: options)
        logger.info("webpush push service speaks HTTP/1.1", ["origin": .string(pool.origin)])
    }

    /// Why the policy refuses this resolved address, or nil.
    static func refusal(_ address: [UInt8], policy: PushServicePolicy, host: String) -> String? {
        do { try policy.check(resolved: address, host: host) } catch { return error.description }
        return nil
    }

    /// Which protocol an origin's pool speaks now ("h2", "http/1.1"), nil without a pool (tests).
    public func transport(of origin: String) -> String? {
        guard let pool = pools.values.first(where: { $0.origin == origin }) else { return nil }
        return pool.http1 == nil ? "h2" : "http/1.1"
    }

    /// The probe after a pause goes to one push service: its pool reconnects now.
    public func connectNow(to destination: Destination) {
        for entry in pools.values where entry.origin == destination.route { entry.pool?.connectNow() }
    }

    private func pool(for endpoint: PushEndpoint, policy: PushServicePolicy) throws -> OriginPool {
        if let existing = pools[OriginPool.key(endpoint.origin, policy)] { return existing }
        if pools.count >= settings.maxPools { closeIdle(olderThan: 0) }
        guard pools.count < settings.maxPools else {
            throw ConfigurationError(["\(settings.maxPools) push-service pools are open and busy (web_push.max_pools)"])
        }
        let options = HTTP2PoolOptions(
            connectionCount: settings.connectionsPerPool, maxQueuedRequests: settings.maxQueuedPerPool,
            connection: HTTP2ConnectionOptions(connectTimeoutMilliseconds: settings.connectTimeoutMs))
        if tls == nil {
            do { tls = try TLSContext(TLSConfiguration(caFile: settings.caFile), alpn: ["h2", "http/1.1"]) } catch {
                throw HTTP2ClientError.tlsFailed(error.message)
            }
        }
        let pool = HTTP2ConnectionPool(loop: loop, endpoint: HTTP2Endpoint(host: endpoint.host, port: endpoint.port), tls: tls!, options: options)
        let host = endpoint.host
        pool.addressCheck = { address in address.ipBytes.flatMap { Self.refusal($0, policy: policy, host: host) } }
        let entry = OriginPool(origin: endpoint.origin, endpoint: endpoint, policy: policy, pool: pool, lastUsed: monotonicNanos())
        let logger = self.logger, origin = endpoint.origin
        pool.onEvent = { event in
            entry.events.count(event)
            if case .connection(.closed(let id, let error?)) = event, !error.isHTTP1Only {
                logger.warning("webpush connection lost", ["origin": .string(origin), "connection": .int(id), "error": .string(error.description)])
            }
        }
        pool.start()
        pools[entry.key] = entry
        scheduleSweep()
        return entry
    }

    /// Closes the pools that carried nothing for `idleMs` and have nothing in flight.
    func closeIdle(olderThan idleMs: Int) {
        let cutoff = monotonicNanos() &- UInt64(idleMs) * 1_000_000
        for (key, entry) in pools where entry.lastUsed <= cutoff && entry.inFlight == 0 && entry.queued == 0 {
            entry.close(graceful: true)
            pools[key] = nil
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
        for entry in pools.values { entry.close(graceful: false) }
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
            var snapshot = entry.events.snapshot(entry.pool, app: app, environment: entry.origin, connectionsPerPool: settings.connectionsPerPool)
            if let http1 = entry.http1 {
                snapshot.connections = http1.connections
                snapshot.openStreams = http1.inFlight
                snapshot.queued = http1.queued
            }
            // Two pools of one origin (apps with and without allow_private_addresses) are one metrics line.
            if let i = metrics.pools.firstIndex(where: { $0.app == app && $0.environment == entry.origin }) {
                metrics.pools[i] = metrics.pools[i] + snapshot
            } else {
                metrics.pools.append(snapshot)
            }
        }
    }
}

/// What every Web Push app shares in the worker: pool sizes and limits, timeouts, and the test CA.
public struct WebPushSettings: Sendable, Equatable {
    public var connectionsPerPool = 1
    /// Keep-alive connections (one request at a time each) to a push service that speaks only HTTP/1.1.
    public var http1ConnectionsPerOrigin = 4
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

extension HTTP2ClientError {
    /// The service chose HTTP/1.1: not a lost connection worth a warning.
    var isHTTP1Only: Bool {
        if case .http1Only = self { return true }
        return false
    }
}

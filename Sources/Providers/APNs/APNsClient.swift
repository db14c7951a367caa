import HTTP2
import ProviderKit
import PushCore
import Reactor

/// Sends notifications for one credential to one APNs host, over a pool of HTTP/2 connections.
///
/// Loop-confined (not Sendable): create it and call it on its loop's thread. The JWT is taken from the
/// shared `ProviderTokenCache` at most once a second and kept here as a ready header value, so the hot
/// path neither signs nor locks per notification.
public final class APNsClient {
    public let pool: HTTP2ConnectionPool
    public let tokenCache: ProviderTokenCache?
    public let requestTimeoutMilliseconds: Int
    private var bearer: String?
    private var bearerToken: String = ""
    private var bearerFetchedAt: UInt64 = 0

    /// The answer to one send: what APNs (or the transport) said, on which connection, after how long.
    public struct Outcome: Sendable {
        public let result: DeliveryResult
        /// The connection that answered, 0 when none did.
        public let connectionID: Int
        /// The JWT sent with the request (empty with certificate auth), for ExpiredProviderToken handling.
        public let token: String
    }

    public init(pool: HTTP2ConnectionPool, tokenCache: ProviderTokenCache?, requestTimeoutMilliseconds: Int) {
        self.pool = pool
        self.tokenCache = tokenCache
        self.requestTimeoutMilliseconds = requestTimeoutMilliseconds
    }

    /// Convenience for tools and tests: a pool of `connections` to `host:port` with the given TLS settings.
    public convenience init(
        loop: EventLoop, host: String, port: Int, tls: TLSConfiguration, tokenCache: ProviderTokenCache?,
        connections: Int = 1, requestTimeoutMilliseconds: Int = 15_000, proxy: String? = nil,
        connectionOptions: HTTP2ConnectionOptions = .init(), maxQueued: Int = 20_000, staggerMilliseconds: Int = 0
    ) throws(HTTP2ClientError) {
        let endpoint = HTTP2Endpoint(host: host, port: port, proxy: proxy)
        try endpoint.validate()
        let options = HTTP2PoolOptions(connectionCount: connections, maxQueuedRequests: maxQueued, connection: connectionOptions,
                                       staggerMilliseconds: staggerMilliseconds)
        let pool = try HTTP2ConnectionPool(loop: loop, endpoint: endpoint, tlsConfiguration: tls, options: options)
        self.init(pool: pool, tokenCache: tokenCache, requestTimeoutMilliseconds: requestTimeoutMilliseconds)
    }

    /// The request APNs expects: `POST /3/device/<token>` with the apns-* headers and, with token auth,
    /// `authorization` as a never-indexed literal.
    public static func request(for n: PushNotification, authorization: String?, timeoutMilliseconds: Int) -> HTTP2Request {
        if let channel = n.channelID { return broadcastRequest(for: n, channel: channel, authorization: authorization, timeoutMilliseconds: timeoutMilliseconds) }
        let apns = n.apns
        var headers: [HTTP2Header] = []
        headers.reserveCapacity(8)
        headers.append(HTTP2Header(name: "apns-push-type", value: apns.pushType.rawValue))
        headers.append(HTTP2Header(name: "apns-topic", value: n.topic))
        headers.append(HTTP2Header(name: "apns-priority", value: Self.priorityText(apns.priority ?? apns.pushType.defaultPriority)))
        if let expiration = n.expiration { headers.append(HTTP2Header(name: "apns-expiration", value: String(expiration))) }
        if let collapse = apns.collapseID { headers.append(HTTP2Header(name: "apns-collapse-id", value: collapse)) }
        if let id = apns.apnsID?.lowercased() { headers.append(HTTP2Header(name: "apns-id", value: id)) }
        if let authorization { headers.append(HTTP2Header(name: "authorization", value: authorization, neverIndex: true)) }
        return HTTP2Request(method: "POST", path: n.path, headers: headers, body: n.payload, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// A broadcast: `POST /4/broadcasts/apps/<bundle id>` with `apns-channel-id`, `apns-push-type: liveactivity`,
    /// `apns-expiration` (0 unless the job gives one: "send once, store nothing" is the one value every channel
    /// accepts), `apns-priority`, and the job's id as `apns-request-id`. No `apns-topic`: the bundle ID is the path.
    static func broadcastRequest(for n: PushNotification, channel: String, authorization: String?, timeoutMilliseconds: Int) -> HTTP2Request {
        var headers: [HTTP2Header] = []
        headers.reserveCapacity(6)
        headers.append(HTTP2Header(name: "apns-channel-id", value: channel))
        headers.append(HTTP2Header(name: "apns-push-type", value: n.pushType.rawValue))
        headers.append(HTTP2Header(name: "apns-expiration", value: String(n.expiration ?? 0)))
        headers.append(HTTP2Header(name: "apns-priority", value: Self.priorityText(n.effectivePriority)))
        if let id = n.headerAPNsID { headers.append(HTTP2Header(name: "apns-request-id", value: id)) }
        if let authorization { headers.append(HTTP2Header(name: "authorization", value: authorization, neverIndex: true)) }
        return HTTP2Request(method: "POST", path: n.path, headers: headers, body: n.payload, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// The three valid priorities as constant strings (no formatting per request).
    static func priorityText(_ priority: Int) -> String {
        switch priority {
        case 10: "10"
        case 5: "5"
        case 1: "1"
        default: String(priority)
        }
    }

    /// The current `authorization` value; re-read from the cache at most once a second.
    private func currentBearer() throws(CredentialError) -> String? {
        guard let tokenCache else { return nil }
        let now = monotonicNanos()
        if let bearer, now &- bearerFetchedAt < 1_000_000_000 { return bearer }
        let token = try tokenCache.token()
        bearerToken = token
        bearer = "bearer " + token
        bearerFetchedAt = now
        return bearer
    }

    /// Sends one notification. `afterConnection`: only a connection newer than this id may carry it (a
    /// resend after the connection was retired). Returns false, without calling `completion`, when the pool
    /// pushes back (its queue is full) — the caller keeps the job and tries again later.
    /// A signing failure completes with a credential error (InvalidProviderToken) so the app is paused.
    @discardableResult
    public func send(_ n: PushNotification, afterConnection: Int = 0, completion: @escaping (Outcome) -> Void) -> Bool {
        let authorization: String?
        do {
            authorization = try currentBearer()
        } catch {
            let response = APNsResponse(status: 403, apnsID: nil, apnsUniqueID: nil, reason: .invalidProviderToken, timestamp: nil)
            completion(Outcome(result: .response(response), connectionID: 0, token: ""))
            return true
        }
        let token = bearerToken
        let request = Self.request(for: n, authorization: authorization, timeoutMilliseconds: requestTimeoutMilliseconds)
        let idHeader = n.isBroadcast ? "apns-request-id" : "apns-id"
        return pool.send(request, onConnectionNewerThan: afterConnection) { result in
            switch result {
            case .success(let response):
                let decoded = APNsResponse.decode(
                    status: response.status, apnsID: response.header(idHeader),
                    apnsUniqueID: response.header("apns-unique-id"), body: response.body)
                completion(Outcome(result: .response(decoded), connectionID: response.connectionID, token: token))
            case .failure(let error):
                completion(Outcome(result: .transport(TransportFailure(error)), connectionID: 0, token: token))
            }
        }
    }

    /// Acts on what APNs said about the connection or the token: retire the connection that answered
    /// ExpiredProviderToken / UnrelatedKeyIdInToken / IdleTimeout / Shutdown, and mark an expired token stale.
    public func handleConnectionAdvice(_ outcome: Outcome, advice: ConnectionAdvice) {
        guard advice == .replace, outcome.connectionID != 0 else { return }
        if let r = outcome.result.apns, r.reason == .expiredProviderToken, let tokenCache {
            if tokenCache.serverSaidExpired(token: outcome.token) { bearer = nil }
        }
        pool.retire(connectionID: outcome.connectionID)
    }

    public func close(graceful: Bool = true) { pool.close(graceful: graceful) }
}

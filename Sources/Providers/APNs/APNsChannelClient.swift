import HTTP2
import ProviderKit
import PushCore
import Reactor

/// Creates, reads, deletes and lists broadcast channels of one app on a channel-management host
/// (`api-manage-broadcast[.sandbox].push.apple.com`, its own host and port), with the app's provider token.
///
/// Loop-confined like `APNsClient`: create and call it on its loop's thread. Management calls are rare, so the
/// cached JWT is read from the `ProviderTokenCache` per call (it signs only when the cached one is due).
public final class APNsChannelClient {
    public let pool: HTTP2ConnectionPool
    public let bundleID: String
    public let tokenCache: ProviderTokenCache?
    public let requestTimeoutMilliseconds: Int

    /// Why a call has no answer from Apple.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// Refused locally with the reason Apple would give; nothing was sent.
        case invalid(ValidationFailure)
        /// The provider token could not be made.
        case credential(String)
        case transport(TransportFailure)

        public var description: String {
            switch self {
            case .invalid(let f): "\(f.reason): \(f.message)"
            case .credential(let d): "credential: \(d)"
            case .transport(let t): "transport: \(t)"
            }
        }
    }

    /// One call's answer, with the `apns-request-id` Apple echoed (or made).
    public struct Reply: Sendable, Equatable {
        public let answer: ChannelManagement.Answer
        public let requestID: String?
    }

    public init(pool: HTTP2ConnectionPool, bundleID: String, tokenCache: ProviderTokenCache?, requestTimeoutMilliseconds: Int = 15_000) {
        self.pool = pool
        self.bundleID = bundleID
        self.tokenCache = tokenCache
        self.requestTimeoutMilliseconds = requestTimeoutMilliseconds
    }

    /// A pool of one connection to `host:port` (the management host of one environment), started.
    public convenience init(
        loop: EventLoop, host: String, port: Int, tls: TLSConfiguration, bundleID: String, tokenCache: ProviderTokenCache?,
        requestTimeoutMilliseconds: Int = 15_000, proxy: String? = nil, connectionOptions: HTTP2ConnectionOptions = .init()
    ) throws(HTTP2ClientError) {
        let endpoint = HTTP2Endpoint(host: host, port: port, proxy: proxy)
        try endpoint.validate()
        let options = HTTP2PoolOptions(connectionCount: 1, maxQueuedRequests: 1_000, connection: connectionOptions)
        let pool = try HTTP2ConnectionPool(loop: loop, endpoint: endpoint, tlsConfiguration: tls, options: options)
        self.init(pool: pool, bundleID: bundleID, tokenCache: tokenCache, requestTimeoutMilliseconds: requestTimeoutMilliseconds)
        pool.start()
    }

    /// The HTTP/2 request for `operation`, exactly as it goes on the wire (`authorization` never indexed).
    public static func request(_ operation: ChannelManagement.Operation, bundleID: String, requestID: String?, authorization: String?,
                               timeoutMilliseconds: Int) throws(ValidationFailure) -> HTTP2Request {
        let built = try ChannelManagement.request(operation, bundleID: bundleID, requestID: requestID)
        var headers = built.headers.map { HTTP2Header(name: $0.name, value: $0.value) }
        if let authorization { headers.append(HTTP2Header(name: "authorization", value: authorization, neverIndex: true)) }
        return HTTP2Request(method: built.method, path: built.path, headers: headers, body: built.body ?? [],
                            timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Runs one management call; `completion` runs once, on the loop.
    public func perform(_ operation: ChannelManagement.Operation, requestID: String? = nil,
                        completion: @escaping (Result<Reply, Failure>) -> Void) {
        let authorization: String?
        do {
            authorization = try tokenCache.map { "bearer " + (try $0.token()) }
        } catch {
            return completion(.failure(.credential("\(error)")))
        }
        let request: HTTP2Request
        do {
            request = try Self.request(operation, bundleID: bundleID, requestID: requestID, authorization: authorization,
                                       timeoutMilliseconds: requestTimeoutMilliseconds)
        } catch {
            return completion(.failure(.invalid(error)))
        }
        let accepted = pool.send(request) { result in
            switch result {
            case .success(let response):
                let answer = ChannelManagement.decode(
                    operation, status: response.status, channelIDHeader: response.header("apns-channel-id"), body: response.body)
                completion(.success(Reply(answer: answer, requestID: response.header("apns-request-id"))))
            case .failure(let error):
                completion(.failure(.transport(TransportFailure(error))))
            }
        }
        if !accepted { completion(.failure(.transport(.notProcessed))) }
    }

    public func close(graceful: Bool = true) { pool.close(graceful: graceful) }
}

import CurlHTTP

/// Where an OAuth-bearer provider's messages go and how its connections and token exchanges behave: what the
/// shared sender (`BearerPoolSender`) reads; FCM's settings, and the push host's part of Huawei's.
public struct BearerPoolSettings: Sendable, Equatable {
    /// `https://host[:port]` of the send API.
    public var url: String
    public init(url: String) { self.url = url }

    /// HTTP/2 connections per app, and the requests one pool holds waiting for a stream.
    public var connectionsPerPool = 2, maxQueuedPerPool = 20000
    public var connectTimeoutMs = 10000, requestTimeoutMs = 15000
    /// The whole token exchange (connect, TLS, answer), done with libcurl off the event loop.
    public var tokenTimeoutMs = 10000
    /// CA bundle for both the send host and the token endpoint (nil: the system's), and an HTTP CONNECT proxy
    /// for both, `http://host:port`.
    public var caFile: String? = nil, proxy: String? = nil

    /// The token exchange's libcurl options: its whole timeout, a connect no longer than the pool's, CA and proxy.
    public var tokenOptions: CurlPost.Options {
        CurlPost.Options(timeoutMilliseconds: tokenTimeoutMs, connectTimeoutMilliseconds: min(connectTimeoutMs, tokenTimeoutMs),
                         caFile: caFile, proxy: proxy)
    }
}

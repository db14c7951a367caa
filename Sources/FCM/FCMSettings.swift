/// FCM HTTP v1: where messages and token requests go (tests point `url` at the simulator; each service
/// account's `token_uri` names its token endpoint) and how the connections to it behave.
public struct FCMSettings: Sendable, Equatable {
    public init() {}
    public var url = "https://fcm.googleapis.com:443"
    /// HTTP/2 connections per project.
    public var connectionsPerPool = 2
    public var requestTimeoutMs = 15000
    public var connectTimeoutMs = 10000
    /// The whole token exchange (connect, TLS, answer), done with libcurl off the event loop.
    public var tokenTimeoutMs = 10000
    /// CA bundle for both the FCM host and the token endpoint; nil uses the system's.
    public var caFile: String? = nil
    /// An HTTP CONNECT proxy for both, `http://host:port`.
    public var proxy: String? = nil
    public var maxQueuedPerPool = 20000
}

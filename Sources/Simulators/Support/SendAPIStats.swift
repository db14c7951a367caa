/// A send-API provider's own counters (FCM's error codes and quota refusals; Push Kit's result codes and
/// tokens), reported in the same JSON object as the shared ones.
public protocol SendAPICounters: Codable, Sendable, Equatable {
    init()
}

/// The counters every send-API simulator keeps.
public struct SendAPISharedCounters: Sendable, Codable, Equatable, ReportsConnectionCounters {
    /// Complete `messages:send` requests (answered, silenced or dropped).
    public var requests = 0
    /// Sends answered as accepted (dry runs included), and of those the `validate_only` ones.
    public var accepted = 0
    public var validateOnly = 0
    /// Send answers by HTTP status ("200", "404", ...).
    public var byStatus: [String: Int] = [:]
    /// Token endpoint requests, access tokens issued, and refusals by the provider's OAuth error.
    public var tokenRequests = 0
    public var tokensIssued = 0
    public var tokenErrors: [String: Int] = [:]
    public var connectionsAccepted = 0
    public var connectionsOpen = 0
    /// Connections by protocol negotiated with ALPN.
    public var http2Connections = 0
    public var http1Connections = 0
    /// Connections closed by a `drop` fault.
    public var connectionsDropped = 0
    public var goawaysSent = 0
    /// Sends never answered (silence).
    public var silencedRequests = 0
    public var handshakeFailures = 0
}

/// Counters of one send-API simulator, as `stats()` and `GET /_mock/stats` report them (control paths are not
/// counted): one JSON object, the shared counters and the provider's, each reached as if it were a field here.
@dynamicMemberLookup
public struct SendAPIStats<Counters: SendAPICounters>: Sendable, Codable, Equatable {
    public var shared = SendAPISharedCounters()
    public var provider = Counters()

    public init() {}

    public subscript<Value>(dynamicMember path: WritableKeyPath<SendAPISharedCounters, Value>) -> Value {
        get { shared[keyPath: path] }
        set { shared[keyPath: path] = newValue }
    }

    public subscript<Value>(dynamicMember path: WritableKeyPath<Counters, Value>) -> Value {
        get { provider[keyPath: path] }
        set { provider[keyPath: path] = newValue }
    }

    public init(from decoder: Decoder) throws {
        shared = try SendAPISharedCounters(from: decoder)
        provider = try Counters(from: decoder)
    }

    public func encode(to encoder: Encoder) throws {
        try shared.encode(to: encoder)
        try provider.encode(to: encoder)
    }
}

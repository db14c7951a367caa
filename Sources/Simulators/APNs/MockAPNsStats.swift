/// Counters of one simulator, as `stats()` and `GET /_mock/stats` report them (control paths are not counted).
public struct MockAPNsStats: Sendable, Codable, Equatable, ReportsConnectionCounters {
    /// Complete APNs requests received (answered, refused, silenced or dropped).
    public var requests = 0
    /// Requests answered 200.
    public var accepted = 0
    /// Answers by HTTP status ("200", "400", ...).
    public var byStatus: [String: Int] = [:]
    /// Error answers by reason ("BadDeviceToken", ...).
    public var byReason: [String: Int] = [:]
    public var connectionsAccepted = 0
    public var connectionsOpen = 0
    /// Connections closed by a `drop` fault.
    public var connectionsDropped = 0
    public var goawaysSent = 0
    /// RST_STREAM REFUSED_STREAM sent by faults and GOAWAYs.
    public var refusedStreams = 0
    /// Requests never answered (silence).
    public var silencedRequests = 0
    /// ES256 verifications actually performed (cached tokens are not re-verified).
    public var tokenVerifications = 0
    public var handshakeFailures = 0
    /// Streams currently open across connections.
    public var streamsInUse = 0
    /// The largest number of streams open at once on one connection.
    public var maxConcurrentStreamsInUse = 0
    /// Broadcasts answered 200 (also counted in `accepted`).
    public var broadcastsAccepted = 0
    public var channelsCreated = 0
    public var channelsDeleted = 0

    public init() {}
}

/// One notification the simulator accepted, for tests and demos that prove what was delivered and how often.
public struct MockAcceptedNotification: Sendable, Codable, Equatable {
    public var token: String
    public var topic: String
    public var apnsID: String
    public var pushType: String
    public var priority: Int
    public var payloadBytes: Int
    /// The payload text, when payload logging is on.
    public var payload: String?
    public var connection: Int
    public var stream: Int32
    public var timeMillis: Int64

    enum CodingKeys: String, CodingKey {
        case token, topic, apnsID = "apns_id", pushType = "push_type", priority, payloadBytes = "payload_bytes", payload, connection, stream
        case timeMillis = "time_ms"
    }
}

/// How `herald mock-expo` behaves beyond the tokens' fates: the access token it asks for, when late receipts come,
/// its rate limit and scripted faults, and its answers' latency.
public struct MockExpoConfiguration: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port = 0
    public var tls: MockTLSFiles?
    /// The access token every request must carry as `Authorization: Bearer <token>`; nil asks for none.
    public var accessToken: String?
    /// A `late` token's receipt appears this long after its ticket.
    public var receiptLateMs = 2000
    /// More `push/send` requests than this in one second are answered 429 (0: no limit).
    public var rateLimitPerSecond = 0
    /// Every n-th `push/send` request is answered 503 (0: never).
    public var failEvery = 0
    /// Added before every answer.
    public var latencyMs = 0
    /// The shared server's connection faults (`FaultScript`'s words): GOAWAY (HTTP/1.1: `Connection: close`) after
    /// this many requests on a connection, close it abruptly when request N+1 arrives, stop reading it after N.
    public var goawayAfterRequests: Int?
    public var dropAfterRequests: Int?
    public var silenceAfterRequests: Int?
    public init() {}
}

/// What `herald mock-expo` counted: requests, tickets and receipts, and how often one receipt was asked for (the
/// receipts poller's schedule is held to it).
public struct MockExpoStats: Sendable, Equatable, Codable {
    public var sendRequests = 0, messages = 0, gzipRequests = 0
    public var ticketsOK = 0, ticketErrors = 0
    public var receiptRequests = 0, receiptIDsAsked = 0, receiptsAnswered = 0
    /// The most asks of any one receipt id, and the shortest time between two asks of one id (ms; nil: none twice).
    public var maxAsksPerID = 0
    public var minAskGapMs: Int64?
    public var unauthorized = 0, rateLimited = 0, faults = 0, badRequests = 0
    public init() {}
}

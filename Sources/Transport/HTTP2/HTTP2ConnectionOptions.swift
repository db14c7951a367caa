/// Tunables of one connection; the defaults suit APNs.
public struct HTTP2ConnectionOptions: Sendable, Hashable {
    /// Never more streams than this, whatever the server allows.
    public var maxConcurrentStreamsLimit: Int
    /// DNS + TCP + proxy + TLS + the server's first SETTINGS must fit in this.
    public var connectTimeoutMilliseconds: Int
    /// PING after this long without receiving anything (Apple: about an hour).
    public var pingIdleMilliseconds: Int
    /// No PING ACK within this declares the connection dead.
    public var pingTimeoutMilliseconds: Int
    /// Requests a bare connection holds beyond its stream limit (a pool keeps its own queue instead).
    public var maxQueuedRequests: Int
    /// Timeouts and idleness are checked this often: one timer per connection, not one per request.
    public var sweepIntervalMilliseconds: Int

    public init(
        maxConcurrentStreamsLimit: Int = 1000, connectTimeoutMilliseconds: Int = 10_000,
        pingIdleMilliseconds: Int = 3_600_000, pingTimeoutMilliseconds: Int = 10_000,
        maxQueuedRequests: Int = 10_000, sweepIntervalMilliseconds: Int = 100
    ) {
        self.maxConcurrentStreamsLimit = maxConcurrentStreamsLimit
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.pingIdleMilliseconds = pingIdleMilliseconds
        self.pingTimeoutMilliseconds = pingTimeoutMilliseconds
        self.maxQueuedRequests = maxQueuedRequests
        self.sweepIntervalMilliseconds = sweepIntervalMilliseconds
    }
}

/// What a connection tells its owner (the pool, and through it the worker's log).
public enum HTTP2ConnectionEvent: Sendable, Equatable {
    /// TLS up, h2 agreed, the server's first SETTINGS received: requests flow.
    case connected(connectionID: Int, maxConcurrentStreams: Int)
    /// Streams freed or the server raised its limit: a pool may hand over more requests.
    case capacityAvailable(connectionID: Int)
    /// The server sent GOAWAY; the connection drains and closes.
    case goaway(connectionID: Int, lastStreamID: Int32, errorCode: UInt32, reason: String?)
    /// The connection retired itself (stream ids running out): it drains, and a pool replaces it now.
    case draining(connectionID: Int)
    /// Gone for good, with why (nil when closed on request after draining).
    case closed(connectionID: Int, error: HTTP2ClientError?)
}

/// What one Redis connection has done since it was made, for metrics: plain counters kept on its loop.
public struct RedisConnectionStats: Sendable, Equatable {
    /// Replies received (one per command that completed a round trip, error replies included).
    public var roundTrips: UInt64 = 0
    /// Commands that failed: error replies, timeouts, and commands lost with the connection or never sent.
    public var errors: UInt64 = 0
    /// Times the connection was established (the first connect and every reconnect).
    public var connects: UInt64 = 0
    /// Script calls whose `WAIT` saw fewer replicas than `redis.wait_replicas` (kept by `ReplicaWaitSender`).
    public var notReplicated: UInt64 = 0

    public init() {}

    public static func + (a: RedisConnectionStats, b: RedisConnectionStats) -> RedisConnectionStats {
        var c = a
        c.roundTrips &+= b.roundTrips
        c.errors &+= b.errors
        c.connects &+= b.connects
        c.notReplicated &+= b.notReplicated
        return c
    }
}

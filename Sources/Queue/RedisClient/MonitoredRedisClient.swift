/// The worker's Redis client as its metrics and logs see it: a `RedisCommandSender` that says whether it is
/// up, counts its round trips, and reports every connection's state changes (one connection for a standalone
/// Redis, one per master for a cluster). Loop-confined like the sender.
public protocol MonitoredRedisClient: RedisCommandSender {
    /// True when commands can go straight out (for a cluster: the slot map is known and every master is connected).
    var isConnected: Bool { get }
    /// Counters over all its connections (including ones since closed), for metrics.
    var stats: RedisConnectionStats { get }
    /// Calls `handler` on the loop with the endpoint (no password) and its new state on every change; replaces
    /// any earlier handler.
    func observeConnections(_ handler: @escaping (_ endpoint: String, _ state: RedisConnection.State) -> Void)
}

extension RedisConnection: MonitoredRedisClient {
    public func observeConnections(_ handler: @escaping (_ endpoint: String, _ state: RedisConnection.State) -> Void) {
        let endpoint = url.description
        onStateChange = { state in handler(endpoint, state) }
    }
}

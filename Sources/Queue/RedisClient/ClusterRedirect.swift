/// The error replies by which a cluster node says it did **not** run a command and where to send it:
/// these alone are retried by the cluster clients (anything else, lost connections included, goes to the caller).
enum ClusterRedirect: Equatable {
    /// The slot lives on `node` for good: update the map and send there.
    case moved(slot: Int, node: RedisNodeAddress)
    /// The slot is migrating: send this one command to `node` after ASKING, and leave the map alone.
    case ask(slot: Int, node: RedisNodeAddress)
    /// A multi-key command met a slot in mid-migration, or the cluster is down (failover running): wait, retry.
    case tryAgain
    case clusterDown

    /// `MOVED 3999 127.0.0.1:6381`; an empty host (`MOVED 3999 :6381`, Redis 7 with an unknown endpoint)
    /// means the host of the node that answered, `replier`.
    init?(_ message: String, replier: RedisNodeAddress) {
        if message.hasPrefix("TRYAGAIN") { self = .tryAgain; return }
        if message.hasPrefix("CLUSTERDOWN") { self = .clusterDown; return }
        let parts = message.split(separator: " ")
        guard parts.count >= 3, parts[0] == "MOVED" || parts[0] == "ASK", let slot = Int(parts[1]),
              (0..<ClusterSlot.count).contains(slot), let colon = parts[2].lastIndex(of: ":"),
              let port = Int(parts[2][parts[2].index(after: colon)...]) else { return nil }
        let host = String(parts[2][..<colon])
        let node = RedisNodeAddress(host: host.isEmpty ? replier.host : host, port: port)
        self = parts[0] == "MOVED" ? .moved(slot: slot, node: node) : .ask(slot: slot, node: node)
    }
}

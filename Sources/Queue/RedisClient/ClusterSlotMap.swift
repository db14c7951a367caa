extension RedisNodeAddress {
    /// The seeds' addresses, and the URL whose credentials and options every node connection uses. A cluster
    /// is reached over TCP and has only database 0: anything else is refused here with why.
    static func seeds(_ urls: [RedisURL]) throws(RedisError) -> ([RedisNodeAddress], RedisURL) {
        guard let first = urls.first else { throw .connectFailed("a Redis Cluster needs at least one seed node") }
        var addresses: [RedisNodeAddress] = []
        for seed in urls {
            guard case .tcp(let host, let port) = seed.endpoint else {
                throw .connectFailed("Redis Cluster seed \(seed) is not host:port (cluster nodes are reached over TCP)")
            }
            guard seed.database == 0 else { throw .connectFailed("Redis Cluster has only database 0, not \(seed.database) (\(seed))") }
            addresses.append(RedisNodeAddress(host: host, port: port))
        }
        return (addresses, first)
    }

    /// The seed's URL (credentials, TLS options) pointed at this node.
    func url(from seed: RedisURL) -> RedisURL {
        var url = seed
        url.endpoint = endpoint
        return url
    }
}

/// Which master serves each of the 16384 slots, as `CLUSTER SLOTS` told it (and MOVED replies corrected it).
struct ClusterSlotMap {
    /// Masters in first-seen order; `owner` holds indices into it.
    private(set) var masters: [RedisNodeAddress] = []
    private var owner = [Int32](repeating: -1, count: ClusterSlot.count)

    var isEmpty: Bool { masters.isEmpty }

    func node(forSlot slot: Int) -> RedisNodeAddress? {
        let index = owner[slot]
        return index < 0 ? nil : masters[Int(index)]
    }

    mutating func assign(slot: Int, to node: RedisNodeAddress) {
        owner[slot] = Int32(index(of: node))
    }

    private mutating func index(of node: RedisNodeAddress) -> Int {
        if let index = masters.firstIndex(of: node) { return index }
        masters.append(node)
        return masters.count - 1
    }

    /// Parses a `CLUSTER SLOTS` reply: `[[start, end, [host, port, id, ...], replica...], ...]`. An empty host
    /// (a node that does not know its address) means `replier`'s host.
    init(clusterSlots reply: RESPValue, replier: RedisNodeAddress) throws(RedisError) {
        guard let ranges = reply.array else { throw .protocolError("CLUSTER SLOTS: not an array: \(reply)") }
        for range in ranges {
            guard let items = range.array, items.count >= 3, let start = items[0].int, let end = items[1].int,
                  start >= 0, end < ClusterSlot.count, start <= end, let master = items[2].array, master.count >= 2,
                  let host = master[0].string, let port = master[1].int else {
                throw .protocolError("CLUSTER SLOTS: unexpected entry \(range)")
            }
            let node = RedisNodeAddress(host: host.isEmpty || host == "?" ? replier.host : host, port: Int(port))
            let index = Int32(index(of: node))
            for slot in Int(start)...Int(end) { owner[slot] = index }
        }
        if masters.isEmpty { throw .protocolError("CLUSTER SLOTS: no slot is served (cluster not set up yet?)") }
    }

    init() {}
}

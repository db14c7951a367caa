import Glibc
import Reactor
import TLS

/// The blocking client over a Redis Cluster, for tools and tests: a `BlockingRedis` per master (made when
/// first needed), each command sent to the master of its key's slot, MOVED (map updated) and ASK (ASKING +
/// the command, once) followed, TRYAGAIN and CLUSTERDOWN retried after a short sleep, all within the command
/// timeout and at most `maxRedirects` times. A connection that breaks fails its call (`.connectionLost` /
/// `.timeout`: the command may have run); the next call to that node connects again and re-reads the map.
///
/// Not Sendable and not thread-safe: one per thread.
public final class BlockingRedisCluster: BlockingRedisCommands {
    public let seeds: [RedisNodeAddress]
    public let maxRedirects: Int
    private let baseURL: RedisURL
    private let connectTimeoutMilliseconds: Int
    private let commandTimeoutMilliseconds: Int
    private let tls: TLSContext?
    private var map = ClusterSlotMap()
    private var connections: [RedisNodeAddress: BlockingRedis] = [:]
    private var closed = false

    /// Connects to the first reachable seed and reads the slot map (`CLUSTER SLOTS`).
    /// `tls`: the context for `rediss://` seeds (every node is reached the same way).
    public init(seeds: [RedisURL], tls: TLSContext? = nil, connectTimeoutMilliseconds: Int = 2_000, commandTimeoutMilliseconds: Int = 10_000,
                maxRedirects: Int = 5) throws(RedisError) {
        (self.seeds, self.baseURL) = try RedisNodeAddress.seeds(seeds)
        self.tls = tls
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.commandTimeoutMilliseconds = commandTimeoutMilliseconds
        self.maxRedirects = maxRedirects
        try refreshMap()
    }

    /// The master serving `slot` in the current map.
    public func master(forSlot slot: Int) -> RedisNodeAddress? { map.node(forSlot: slot) }

    public var masters: [RedisNodeAddress] { map.masters }

    public func command(_ args: [[UInt8]]) throws(RedisError) -> RESPValue {
        let reply = try execute(args, slot: CommandKey.of(args).map(ClusterSlot.of))
        if case .error(let message) = reply { throw .server(message) }
        return reply
    }

    /// Commands grouped by node, one pipeline per node, replies put back in the original order. Order holds
    /// among the commands of one node; a redirected one is sent again on its own afterwards.
    public func pipeline(rawCommands commands: [[[UInt8]]]) throws(RedisError) -> [RESPValue] {
        guard !closed else { throw .closed }
        var replies = [RESPValue?](repeating: nil, count: commands.count)
        let slots = commands.map { CommandKey.of($0).map(ClusterSlot.of) }
        var groups: [RedisNodeAddress: [Int]] = [:]
        var order: [RedisNodeAddress] = []
        for (index, slot) in slots.enumerated() {
            let node = try node(for: slot)
            if groups[node] == nil { order.append(node) }
            groups[node, default: []].append(index)
        }
        for node in order {
            let indices = groups[node]!
            let nodeReplies = try onNode(node) { redis throws(RedisError) in try redis.pipeline(rawCommands: indices.map { commands[$0] }) }
            for (position, index) in indices.enumerated() {
                let reply = nodeReplies[position]
                if let message = reply.errorMessage, ClusterRedirect(message, replier: node) != nil {
                    replies[index] = try execute(commands[index], slot: slots[index], first: (reply, node))
                } else {
                    replies[index] = reply
                }
            }
        }
        return replies.map { $0! }
    }

    public func evalScript(_ script: RedisScript, keys: [[UInt8]], args: [[UInt8]]) throws(RedisError) -> RESPValue {
        let slot = try CommandKey.scriptSlot(keys).get()
        var reply = try execute(script.evalsha(keys: keys, args: args), slot: slot)
        if RedisScript.isNoScript(reply) { reply = try execute(script.eval(keys: keys, args: args), slot: slot) }
        if case .error(let message) = reply { throw .server(message) }
        return reply
    }

    public func close() {
        closed = true
        for connection in connections.values { connection.close() }
        connections = [:]
    }

    // MARK: routing

    /// Sends `args` to the node of `slot` and follows redirects; error replies other than redirects come back
    /// as `.error` values. `first`: a reply already received (from a pipeline) to start from.
    private func execute(_ args: [[UInt8]], slot: Int?, first: (RESPValue, RedisNodeAddress)? = nil) throws(RedisError) -> RESPValue {
        let deadline = monotonicNanos() &+ UInt64(commandTimeoutMilliseconds) * 1_000_000
        var asking: RedisNodeAddress?
        var redirects = 0
        var retries = 0
        var pending = first
        while true {
            let reply: RESPValue
            let node: RedisNodeAddress
            if let received = pending {
                (reply, node) = received
                pending = nil
            } else if let target = asking {
                node = target
                reply = try onNode(node) { redis throws(RedisError) in try redis.pipeline(rawCommands: [[Array("ASKING".utf8)], args]) }[1]
            } else {
                node = try self.node(for: slot)
                reply = try onNode(node) { redis throws(RedisError) in try redis.pipeline(rawCommands: [args]) }[0]
            }
            asking = nil
            guard let message = reply.errorMessage, let redirect = ClusterRedirect(message, replier: node) else { return reply }
            switch redirect {
            case .moved(let movedSlot, let target):
                map.assign(slot: movedSlot, to: target)
                redirects += 1
                try? refreshMap()
            case .ask(_, let target):
                asking = target
                redirects += 1
            case .tryAgain, .clusterDown:
                let delay = min(500, 25 << min(retries, 5))
                retries += 1
                guard monotonicNanos() &+ UInt64(delay) * 1_000_000 < deadline else { return reply }
                usleep(useconds_t(delay * 1000))
                if case .clusterDown = redirect { try? refreshMap() }
                continue
            }
            if redirects > maxRedirects {
                throw .server("CLUSTER REDIRECTS: still redirected after \(maxRedirects) redirects (last: \(message)); "
                    + "the cluster's slot configuration is inconsistent")
            }
        }
    }

    private func node(for slot: Int?) throws(RedisError) -> RedisNodeAddress {
        if let slot {
            if let node = map.node(forSlot: slot) { return node }
            try refreshMap()
            if let node = map.node(forSlot: slot) { return node }
            throw .server("CLUSTERDOWN slot \(slot) is not served by any master")
        }
        guard let node = map.masters.first else { throw .notConnected }
        return node
    }

    /// Runs `body` on the node's connection (made if needed); the map is re-read when it fails (the node may
    /// have failed over).
    private func onNode<T>(_ node: RedisNodeAddress, _ body: (BlockingRedis) throws(RedisError) -> T) throws(RedisError) -> T {
        do {
            return try onNodeOnce(node, body)
        } catch {
            try? refreshMap()
            throw error
        }
    }

    /// Reads `CLUSTER SLOTS` from a known master or a seed, the first that answers.
    private func refreshMap() throws(RedisError) {
        var lastError = RedisError.notConnected
        let candidates = map.masters + seeds.filter { !map.masters.contains($0) }
        for node in candidates {
            do {
                let reply = try onNodeOnce(node) { redis throws(RedisError) in try redis.command([Array("CLUSTER".utf8), Array("SLOTS".utf8)]) }
                map = try ClusterSlotMap(clusterSlots: reply, replier: node)
                return
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// `body` on the node's connection; a broken one is dropped, so the next call connects again.
    private func onNodeOnce<T>(_ node: RedisNodeAddress, _ body: (BlockingRedis) throws(RedisError) -> T) throws(RedisError) -> T {
        guard !closed else { throw .closed }
        let redis: BlockingRedis
        if let existing = connections[node] {
            redis = existing
        } else {
            redis = try BlockingRedis(url: node.url(from: baseURL), tls: tls, connectTimeoutMilliseconds: connectTimeoutMilliseconds,
                                      commandTimeoutMilliseconds: commandTimeoutMilliseconds)
            connections[node] = redis
        }
        do {
            return try body(redis)
        } catch {
            if case .server = error {} else {
                connections[node] = nil
                redis.close()
            }
            throw error
        }
    }
}

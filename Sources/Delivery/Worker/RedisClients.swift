import Reactor
import RedisQueue
import TLS

/// The one place that turns the `redis` settings into clients, so the worker and every tool (`stats`, `tail`,
/// `enqueue`, the scheduler, the dashboard, `replay`, `forward`) reach Redis the same way.
extension Configuration.RedisSettings {
    /// Where Redis is, for log lines (no password).
    public var redactedURL: String {
        let base = (try? RedisURL(parsing: url).description) ?? "redis (bad URL)"
        return mode == .sentinel ? "sentinel master \(masterName) via \(sentinels.joined(separator: ",")) (\(base))" : base
    }

    /// The worker's pipelined client on `loop` (not started): one `RedisConnection` (in sentinel mode asking the
    /// sentinels for the master before every (re)connect and following `+switch-master`), or a `RedisCluster`.
    public func makeClient(loop: EventLoop) throws -> any MonitoredRedisClient {
        let parsed = try RedisURL(parsing: url)
        var options = RedisConnection.Options()
        options.connectTimeoutMilliseconds = connectTimeoutMs
        options.commandTimeoutMilliseconds = commandTimeoutMs
        // A cluster's node connections take the same context: every node is reached as `url` is.
        options.tls = try makeTLSContext(for: parsed)
        switch mode {
        case .standalone:
            return RedisConnection(url: parsed, loop: loop, options: options)
        case .sentinel:
            let sentinel = try sentinelSettings()
            let connection = RedisConnection(url: parsed, loop: loop, options: options)
            if let sentinel { connection.addressSource = SentinelAddressSource(settings: sentinel, loop: loop) }
            return connection
        case .cluster:
            var clusterOptions = RedisCluster.Options()
            clusterOptions.connection = options
            return try RedisCluster(seeds: try clusterSeeds(), loop: loop, options: clusterOptions)
        }
    }

    /// What the queue runs its scripts through: `client` itself, or behind `WAIT` when `wait_replicas` is set
    /// (refused in cluster mode by `topologyProblems`: the WAIT must reach the script's node).
    public func durable(_ client: any RedisCommandSender) -> any RedisCommandSender {
        waitReplicas > 0 ? ReplicaWaitSender(client, replicas: waitReplicas, timeoutMilliseconds: waitTimeoutMs) : client
    }

    /// A connected blocking client for a tool. A bad URL is a `.connectFailed` too: tools that retry report it.
    /// In sentinel mode the master is looked up once, with the role check. (Tools do not WAIT: what they write
    /// is re-done by running them again.)
    public func makeBlockingClient(connectTimeoutMilliseconds: Int = 2_000, commandTimeoutMilliseconds: Int = 10_000) throws(RedisError) -> any BlockingRedisCommands {
        let parsed: RedisURL
        do { parsed = try RedisURL(parsing: url) } catch { throw .connectFailed(error.description) }
        let tls = try makeTLSContext(for: parsed)
        switch mode {
        case .standalone:
            return try BlockingRedis(url: parsed, tls: tls, connectTimeoutMilliseconds: connectTimeoutMilliseconds,
                                     commandTimeoutMilliseconds: commandTimeoutMilliseconds)
        case .sentinel:
            guard let sentinel = try sentinelSettings() else { throw .connectFailed("redis.mode is sentinel but no sentinels are set") }
            return try BlockingRedis.connectToMaster(sentinel: sentinel, url: parsed, tls: tls, connectTimeoutMilliseconds: connectTimeoutMilliseconds,
                                                     commandTimeoutMilliseconds: commandTimeoutMilliseconds)
        case .cluster:
            let seeds: [RedisURL]
            do { seeds = try clusterSeeds() } catch { throw .connectFailed("\(error)") }
            return try BlockingRedisCluster(seeds: seeds, tls: tls, connectTimeoutMilliseconds: connectTimeoutMilliseconds,
                                            commandTimeoutMilliseconds: commandTimeoutMilliseconds)
        }
    }

    /// `url`, then every `cluster_nodes` entry with `url`'s credentials.
    func clusterSeeds() throws -> [RedisURL] {
        let first = try RedisURL(parsing: url)
        return try [first] + clusterNodes.map { node in
            var seed = first
            seed.endpoint = try RedisURL(parsing: "redis://\(node)").endpoint
            return seed
        }
    }

    /// What makes cluster mode unusable, each with what to do (`ConfigurationLoader.validate`).
    func clusterProblems() -> [String] {
        var problems: [String] = []
        if let parsed = try? RedisURL(parsing: url) {
            if case .unix = parsed.endpoint { problems.append("redis.url: a Redis Cluster is reached over TCP (redis://host:port), not a Unix socket") }
            if parsed.database != 0 { problems.append("redis.url: Redis Cluster has only database 0, not \(parsed.database)") }
        }
        for node in clusterNodes {
            guard let parsed = try? RedisURL(parsing: "redis://\(node)"), case .tcp = parsed.endpoint, parsed.database == 0,
                  parsed.password == nil, !node.contains("/") else {
                problems.append("redis.cluster_nodes: '\(node)' is not host:port (credentials come from redis.url)")
                continue
            }
        }
        // The scripts touch a shard's keys together: in a cluster each shard's keys must share one slot (the
        // numbered shard prefixes {<prefix>:<i>} are hash tags; a single shard needs one in its prefix).
        for shard in (try? queueShards())?.shards ?? [] {
            let keys = shard.keys
            let slot = ClusterSlot.of(keys.queue)
            if ClusterSlot.of(keys.prefix + ":a") != ClusterSlot.of(keys.prefix + ":b") || shard.queues.contains(where: { ClusterSlot.of($0) != slot }) {
                problems.append(shards > 1 || !shardPrefixes.isEmpty
                    ? "redis.shard_prefixes: in cluster mode each shard's keys must share one slot: give '\(keys.prefix)' a hash tag, e.g. \"{\(keys.prefix)}\""
                    : "redis.prefix and redis.queues: in cluster mode every key must share one slot: give the prefix a hash tag, "
                        + "e.g. \"{herald}\", and start every queue key with the same tag (or use redis.shards, whose prefixes are hash tags)")
                break
            }
        }
        return problems
    }

    /// The `redis.tls` context of a `rediss://` URL (one per client; connections of a client share it), nil for
    /// plain URLs. `redis.tls` with a plain URL throws rather than connect in plaintext.
    func makeTLSContext(for parsed: RedisURL) throws(RedisError) -> TLSContext? {
        guard parsed.tls else {
            if tls.isSet { throw .connectFailed("redis.tls is set but the Redis URL is not rediss:// (TLS is on only for rediss:// URLs)") }
            return nil
        }
        do { return try TLSContext(tls.tlsConfiguration, alpn: []) } catch { throw .connectFailed("redis.tls: \(error.message)") }
    }
}

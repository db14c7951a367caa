import RedisQueue

/// The sentinel settings of `redis.mode` (which server is the master) and `redis.wait_replicas`, checked in one place so
/// `check-config`, the worker and every tool refuse a bad setting with the same words.
extension Configuration.RedisSettings {
    /// Problems with the sentinel keys and the WAIT keys (empty when all is well).
    public func topologyProblems() -> [String] {
        var problems: [String] = []
        if mode == .sentinel {
            if sentinels.isEmpty { problems.append("redis.sentinels must list at least one sentinel as host:port when redis.mode is \"sentinel\"") }
            for text in sentinels where RedisNodeAddress(parsing: text) == nil {
                problems.append("redis.sentinels: '\(text)' is not host:port (or [v6]:port) with a port 1...65535")
            }
            if masterName.isEmpty || masterName.contains(where: { $0 == " " || $0.isNewline }) {
                problems.append("redis.master_name must name the master as the sentinels know it (sentinel monitor <name> ...), without spaces")
            }
            if case .unix? = (try? RedisURL(parsing: url))?.endpoint {
                problems.append("redis.url: a unix socket cannot be a Sentinel-managed master; give a redis:// URL (its host and port are ignored)")
            }
            if sentinelUser != nil && sentinelPassword == nil { problems.append("redis.sentinel_user needs redis.sentinel_password") }
        } else if !sentinels.isEmpty || !masterName.isEmpty {
            problems.append("redis.sentinels and redis.master_name need redis.mode \"sentinel\" (mode is \"\(mode.rawValue)\")")
        }
        if waitReplicas > 0 && mode == .cluster {
            problems.append("redis.wait_replicas is not available in cluster mode yet (each WAIT must follow its script on the same node)")
        }
        if waitReplicas > 0 && (waitTimeoutMs < 1 || waitTimeoutMs >= commandTimeoutMs) {
            problems.append("redis.wait_timeout_ms (\(waitTimeoutMs)) must be at least 1 and below redis.command_timeout_ms (\(commandTimeoutMs)) when redis.wait_replicas is set")
        }
        return problems
    }

    /// The sentinels to ask, in sentinel mode (nil otherwise); each question gets `connect_timeout_ms`.
    public func sentinelSettings() throws(RedisError) -> SentinelSettings? {
        let problems = topologyProblems()
        guard problems.isEmpty else { throw .connectFailed(problems.joined(separator: "; ")) }
        guard mode == .sentinel else { return nil }
        return SentinelSettings(sentinels: sentinels.compactMap(RedisNodeAddress.init(parsing:)), masterName: masterName,
                                user: sentinelUser, password: sentinelPassword, timeoutMilliseconds: connectTimeoutMs)
    }
}

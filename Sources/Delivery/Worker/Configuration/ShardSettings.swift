import PushCore
import RedisQueue

/// `redis.shards` / `redis.shard_prefixes` turned into the key sets the worker and every tool use.
extension Configuration.RedisSettings {
    /// The most shards a configuration may name: far more than any cluster needs, few enough to keep a claim
    /// round over all of them cheap.
    public static let maxShards = 1024

    /// The shard prefixes: `shard_prefixes` when given, else `{<prefix>:<i>}` for `shards` > 1, else `prefix`.
    public var shardPrefixList: [String] {
        shardPrefixes.isEmpty ? QueueShards.defaultPrefixes(prefix: prefix, count: shards) : shardPrefixes
    }

    /// Every shard's keys and queues.
    public func queueShards() throws(QueueShards.Problem) -> QueueShards {
        try QueueShards(basePrefix: prefix, prefixes: shardPrefixList, queues: queues)
    }

    /// What is wrong with the shard settings, for `ConfigurationLoader.validate`.
    public func shardProblems() -> [String] {
        // The same words as the declaration's bounds check (`validate` drops the repeat); tools call this alone.
        if shards < 1 || shards > Self.maxShards { return ["redis.shards must be 1...\(Self.maxShards), got \(shards)"] }
        if !shardPrefixes.isEmpty && shards != 1 && shards != shardPrefixes.count {
            return ["redis.shards is \(shards) but redis.shard_prefixes names \(shardPrefixes.count); give one of them, or the same count"]
        }
        if shardPrefixes.count > Self.maxShards { return ["redis.shard_prefixes names more than \(Self.maxShards) shards"] }
        guard QueueKeys.isValid(prefix) else { return [] }  // reported with redis.prefix
        do { _ = try queueShards() } catch { return ["redis shards: \(error.description)"] }
        return []
    }
}

extension Configuration {
    /// `queueRetry` under every shard's copy of each queue key, so a lease's `queueKey` finds its policy.
    public var shardQueueRetry: [String: RetrySettings] {
        guard let shards = try? redis.queueShards(), shards.count > 1 || shards.shards[0].queues != shards.configuredQueues else {
            return queueRetry
        }
        var byKey: [String: RetrySettings] = [:]
        for shard in shards.shards {
            for (index, queue) in shard.queues.enumerated() {
                if let settings = queueRetry[shards.configuredQueues[index]] { byKey[queue] = settings }
            }
        }
        return byKey
    }
}

/// Where a producer's job goes among the shards' copies of one configured queue: the shard its id hashes to
/// (`QueueShards.shard(forJobID:)`, so copies of one id share a shard and its idempotency key), a job without an
/// id to the next shard in turn. The one rule `herald enqueue` and `herald api` both follow.
public struct ShardRouter: Sendable {
    public let shards: QueueShards
    /// The configured queue key (for the base prefix).
    public let queue: String
    /// Every shard's copy of `queue`, by shard index.
    public let shardQueues: [String]
    private var turn = 0

    public struct NotUnderPrefix: Error, CustomStringConvertible {
        public let description: String
    }

    public init(shards: QueueShards, queue: String) throws(NotUnderPrefix) {
        var keys: [String] = []
        for index in 0..<shards.count {
            guard let key = shards.key(queue, inShard: index) else {
                throw NotUnderPrefix(description: "queue \(queue) is not under the prefix \(shards.basePrefix): with shards, name the queue as <prefix>:<name>")
            }
            keys.append(key)
        }
        self.shards = shards
        self.queue = queue
        self.shardQueues = keys
    }

    /// The shard queue key for a job whose producer id is `id` (nil: none).
    public mutating func queueKey(forJobID id: String?) -> String {
        if let id { return shardQueues[shards.shard(forJobID: id)] }
        let shard = turn
        turn = (turn + 1) % shardQueues.count
        return shardQueues[shard]
    }
}

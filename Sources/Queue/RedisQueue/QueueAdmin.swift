/// One configured queue as `herald queue list` shows it: jobs waiting over every shard, and whether it is paused.
public struct QueueState: Sendable, Equatable {
    public let queue: String
    public var length = 0
    /// Paused in every shard / in some (a pause or resume that did not reach every shard).
    public var paused = false
    public var partlyPaused = false
}

/// The operator's controls over whole queues (`herald queue`), in every shard: pause and resume (the claim
/// script skips a queue in `<prefix>:paused`, so every worker stops taking from it at its next claim), purge.
/// Blocking.
public enum QueueAdmin {
    public static func states(redis: any BlockingRedisCommands, shards: QueueShards) throws(RedisError) -> [QueueState] {
        var states = shards.configuredQueues.map { QueueState(queue: $0) }
        var pausedIn = [Int](repeating: 0, count: states.count)
        for shard in shards.shards {
            let commands = shard.queues.map { ["LLEN", $0] } + [["SMEMBERS", shard.keys.paused]]
            let replies = try redis.pipeline(commands)
            if let problem = KeyReplyError.collect(commands, replies).first { throw .server("\(problem.key): \(problem.message)") }
            let paused = Set((replies.last?.array ?? []).compactMap(\.string))
            for (index, queue) in shard.queues.enumerated() {
                states[index].length += Int(replies[index].int ?? 0)
                if paused.contains(queue) { pausedIn[index] += 1 }
            }
        }
        for index in states.indices {
            states[index].paused = pausedIn[index] == shards.count
            states[index].partlyPaused = pausedIn[index] > 0 && pausedIn[index] < shards.count
        }
        return states
    }

    /// Pauses (or resumes) each configured queue in every shard. Returns the shards where that changed something.
    public static func setPaused(_ paused: Bool, queues: [String], redis: any BlockingRedisCommands, shards: QueueShards) throws(RedisError) -> Int {
        var changed = 0
        for (index, shard) in shards.shards.enumerated() {
            let members = queues.map { shards.key($0, inShard: index) ?? $0 }
            let reply = try redis.command([paused ? "SADD" : "SREM", shard.keys.paused] + members)
            changed += Int(reply.int ?? 0)
        }
        return changed
    }

    /// Removes every job waiting in each configured queue, in every shard (jobs already claimed are not
    /// touched). Returns how many were removed.
    public static func purge(queues: [String], redis: any BlockingRedisCommands, shards: QueueShards) throws(RedisError) -> Int {
        var removed = 0
        for (index, _) in shards.shards.enumerated() {
            for queue in queues {
                let key = shards.key(queue, inShard: index) ?? queue
                let reply: RESPValue
                do {
                    reply = try redis.evalScript(QueueScripts.purgeQueue, keys: [Array(key.utf8)], args: [])
                } catch {
                    throw error.refined()
                }
                removed += Int(reply.int ?? 0)
            }
        }
        return removed
    }
}

import DeviceRegistry
import Reactor
import RedisQueue

/// `JobSource` over the Redis queue: one client (`redis.makeClient`) shared by a `JobQueue` per shard
/// (`redis.shards`, one by default), claimed from, completed into and maintained (heartbeats, reaper, retry
/// scheduler) by a `ShardedJobSource`, plus the log lines about the Redis connection. Loop-confined.
public final class RedisJobSource: JobSource {
    public let shards: ShardedJobSource
    private let redis: any MonitoredRedisClient
    /// The WAIT decorator when `redis.wait_replicas` is set.
    private let waiting: ReplicaWaitSender?
    private let logger: Logger
    /// `registry.enabled`: each batch's dropped and delivered devices, and the sweeper.
    private let registry: RegistryWriter?
    private let sweeper: RegistrySweeper?

    public init(configuration: Configuration, loop: EventLoop, workerID: String, logger: Logger) throws {
        redis = try configuration.redis.makeClient(loop: loop)
        var queueOptions = JobQueueOptions()
        queueOptions.leaseMilliseconds = configuration.worker.leaseSeconds * 1000
        queueOptions.resultsMaxLength = configuration.worker.resultsMaxLength
        queueOptions.deadMaxLength = configuration.worker.deadMaxLength
        queueOptions.archiveMaxLength = configuration.worker.archiveMaxLength
        queueOptions.resultIndexTTLSeconds = configuration.results.indexTTLSeconds
        queueOptions.queueWeights = configuration.redis.claimWeights
        let sender = configuration.redis.durable(redis)
        waiting = sender as? ReplicaWaitSender
        let layout = try configuration.redis.queueShards()
        var queues: [JobQueue] = []
        for shard in layout.shards {
            queues.append(try JobQueue(connection: sender, keys: shard.keys, workerID: workerID, queueKeys: shard.queues, options: queueOptions,
                                       leaseTag: layout.count > 1 ? "s\(shard.index)" : ""))
        }
        shards = ShardedJobSource(queues: queues, loop: loop, settings: configuration.worker, logger: logger)
        shards.wakesForPacedRetries = configuration.budgets.anyOn
        self.logger = logger
        let registryOn = configuration.registry.enabled
        let deviceShards = queues.map { DeviceKeys($0.keys) }
        registry = registryOn ? RegistryWriter(redis: redis, shards: deviceShards, settings: configuration.registry, logger: logger) : nil
        sweeper = registryOn ? RegistrySweeper(redis: redis, shards: deviceShards, settings: configuration.registry, logger: logger) : nil
        if let sentinel = (redis as? RedisConnection)?.addressSource as? SentinelAddressSource {
            sentinel.onEvent = { event in logger.info("redis sentinel", ["event": .string(event)]) }
        }
        var shortfallWarnings = WarningThrottle(seconds: 30)
        waiting?.onShortfall = { [logger] confirmed, wanted in
            guard shortfallWarnings.allow() else { return }
            logger.warning("redis replicas did not confirm a write in time; it is retried or put back", [
                "confirmed": .int(confirmed), "wanted": .int(wanted),
            ])
        }
        // Every pass that meets a wrong-typed key reports it; one line per key every 30 s is enough to act on.
        var throttles: [String: WarningThrottle] = [:]
        for queue in queues {
            queue.onKeyProblem = { problem in
                var throttle = throttles[problem.key] ?? WarningThrottle(seconds: 30)
                if throttle.allow() {
                    let fields: [String: LogValue] = ["key": .string(problem.key), "found": .string(problem.found), "expected": .string(problem.expected)]
                    if problem.wasReset {
                        logger.error("budget key held no usable time; reset, its budget starts afresh", fields.merging([
                            "hint": .string("something other than Herald wrote it; its jobs are paced from now"),
                        ]) { $1 })
                    } else if problem.sentUnchecked {
                        logger.error("idempotency key has the wrong type; its job was sent without the check", fields.merging([
                            "hint": .string("every copy of this job id is sent until the key is deleted or renamed"),
                        ]) { $1 })
                    } else {
                        logger.error("redis key has the wrong type; skipped, nothing taken from or written to it", fields.merging([
                            "hint": .string("the jobs it concerns wait (queued or leased) and go on by themselves once the key is fixed"),
                        ]) { $1 })
                    }
                }
                throttles[problem.key] = throttle
            }
        }
    }

    /// Shard 0's queue (the only one unless `redis.shards` > 1).
    public var queue: JobQueue { shards.queues[0] }

    public var isConnected: Bool { redis.isConnected }
    /// Dead workers this loop's reaper reaped.
    public var workersReaped: Int { shards.workersReaped }
    public var redisStats: RedisConnectionStats {
        var stats = redis.stats
        stats.notReplicated = waiting?.shortfalls ?? 0
        return stats
    }

    static func failure(_ error: RedisError) -> JobSourceFailure {
        JobSourceFailure(error.description, maybeApplied: error.outcomeUnknown, closed: error == .closed)
    }

    public func claim(max: Int, completion: @escaping (Result<[Lease], JobSourceFailure>) -> Void) {
        shards.claim(max: max, completion: completion)
    }

    public func record(_ batch: [JobCompletion], isRepeat: Bool, completion: @escaping (Result<CompletionReport, JobSourceFailure>) -> Void) {
        registry?.record(batch)
        shards.record(batch, isRepeat: isRepeat, completion: completion)
    }

    public func claimOnce(_ jobs: [(lease: Lease, jobID: String)], windowMilliseconds: Int64,
                          completion: @escaping (Result<[OnceVerdict], JobSourceFailure>) -> Void) {
        shards.claimOnce(jobs, windowMilliseconds: windowMilliseconds, completion: completion)
    }

    public func checkBudgets(_ jobs: [(lease: Lease, limits: [BudgetLimit])],
                             completion: @escaping (Result<[BudgetVerdict], JobSourceFailure>) -> Void) {
        shards.checkBudgets(jobs, completion: completion)
    }

    public func returnAll(completion: @escaping (Result<Int, JobSourceFailure>) -> Void) {
        shards.returnAll(completion: completion)
    }

    /// Connects, and starts heartbeats, the reaper and the retry scheduler (in every shard).
    public func open() {
        watchConnection()
        redis.start()
        shards.open()
        sweeper?.start()
    }

    /// Stops the heartbeats, reapers, retry passes and the sweeper, connections left open: on shutdown before the
    /// retire, so no heartbeat sent after it puts the drained worker's entry back in `<p>:workers`.
    public func stopMaintenance() {
        sweeper?.stop()
        shards.close()
    }

    public func close() {
        stopMaintenance()
        redis.close()
    }

    /// Per endpoint (one, or each cluster master): one line when its connection is lost, then one every 30 s
    /// while it stays away (not one per reconnect attempt), and one when it is back.
    private func watchConnection() {
        struct Watch {
            var connected = false
            var failedAttempts = 0
            var unavailableWarnings = WarningThrottle(seconds: 30)
        }
        var watches: [String: Watch] = [:]
        let logger = self.logger
        let sentinel = (redis as? RedisConnection)?.addressSource as? SentinelAddressSource
        redis.observeConnections { endpoint, state in
            var watch = watches[endpoint] ?? Watch()
            defer { watches[endpoint] = watch }
            switch state {
            case .connected:
                var fields: [String: LogValue] = ["url": .string(endpoint), "failed_attempts": .int(watch.failedAttempts)]
                if let master = sentinel?.master { fields["master"] = .string(master.description) }
                logger.info("redis connected", fields)
                watch.connected = true
                watch.failedAttempts = 0
            case .disconnected(let reason, let retry):
                watch.failedAttempts += 1
                if watch.connected { watch.unavailableWarnings.markLogged() }
                if watch.connected || watch.unavailableWarnings.allow() {
                    logger.warning(watch.connected ? "redis connection lost" : "redis unavailable; retrying", [
                        "reason": .string(reason), "retry_in_ms": .int(retry), "failed_attempts": .int(watch.failedAttempts),
                        "url": .string(endpoint),
                    ])
                }
                watch.connected = false
            default: break
            }
        }
    }
}

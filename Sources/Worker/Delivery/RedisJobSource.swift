import Reactor
import RedisQueue

/// `JobSource` over the Redis queue: claims, completion batches and lease returns through `JobQueue`, plus
/// what keeps leases valid while the worker runs (heartbeats, the reaper for dead workers, the retry
/// scheduler) and the log lines about the Redis connection. Loop-confined.
public final class RedisJobSource: JobSource {
    public let queue: JobQueue
    private let redis: any MonitoredRedisClient
    /// The WAIT decorator when `redis.wait_replicas` is set.
    private let waiting: ReplicaWaitSender?
    private let settings: Configuration.WorkerSettings
    private let logger: Logger
    private var timers: [LoopTimer] = []
    private var isOpen = false

    public init(configuration: Configuration, loop: EventLoop, workerID: String, logger: Logger) throws {
        redis = try configuration.redis.makeClient(loop: loop)
        var queueOptions = JobQueueOptions()
        queueOptions.leaseMilliseconds = configuration.worker.leaseSeconds * 1000
        queueOptions.resultsMaxLength = configuration.worker.resultsMaxLength
        queueOptions.deadMaxLength = configuration.worker.deadMaxLength
        queueOptions.archiveMaxLength = configuration.worker.archiveMaxLength
        queueOptions.queueWeights = configuration.redis.claimWeights
        let keys = try QueueKeys(prefix: configuration.redis.prefix)
        let sender = configuration.redis.durable(redis)
        waiting = sender as? ReplicaWaitSender
        queue = try JobQueue(connection: sender, keys: keys, workerID: workerID, queueKeys: configuration.redis.queueKeys, options: queueOptions)
        settings = configuration.worker
        self.logger = logger
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
        queue.onKeyProblem = { problem in
            var throttle = throttles[problem.key] ?? WarningThrottle(seconds: 30)
            if throttle.allow() {
                logger.error("redis key has the wrong type; skipped, nothing taken from or written to it", [
                    "key": .string(problem.key), "found": .string(problem.found), "expected": .string(problem.expected),
                    "hint": .string("the jobs it concerns wait (queued or leased) and go on by themselves once the key is fixed"),
                ])
            }
            throttles[problem.key] = throttle
        }
    }

    private var loop: EventLoop { redis.loop }

    public var isConnected: Bool { redis.isConnected }
    public var redisStats: RedisConnectionStats {
        var stats = redis.stats
        stats.notReplicated = waiting?.shortfalls ?? 0
        return stats
    }

    static func failure(_ error: RedisError) -> JobSourceFailure {
        JobSourceFailure(error.description, maybeApplied: error.outcomeUnknown, closed: error == .closed)
    }

    public func claim(max: Int, completion: @escaping (Result<[Lease], JobSourceFailure>) -> Void) {
        queue.claim(max: max) { result in completion(result.mapError(Self.failure)) }
    }

    public func record(_ batch: [JobCompletion], isRepeat: Bool, completion: @escaping (Result<CompletionReport, JobSourceFailure>) -> Void) {
        queue.complete(batch, isRepeat: isRepeat) { result in completion(result.mapError(Self.failure)) }
    }

    public func claimOnce(_ jobs: [(lease: Lease, jobID: String)], windowMilliseconds: Int64,
                          completion: @escaping (Result<[OnceVerdict], JobSourceFailure>) -> Void) {
        queue.claimOnce(jobs, windowMilliseconds: windowMilliseconds) { result in completion(result.mapError(Self.failure)) }
    }

    public func returnAll(completion: @escaping (Result<Int, JobSourceFailure>) -> Void) {
        queue.retire { result in completion(result.mapError(Self.failure)) }
    }

    /// Connects, and starts heartbeats, the reaper and the retry scheduler.
    public func open() {
        guard !isOpen else { return }
        isOpen = true
        watchConnection()
        redis.start()
        let lease = settings.leaseSeconds * 1000
        repeatEvery(milliseconds: max(200, lease / 3)) { [weak self] in self?.queue.renewHeartbeat() }
        if settings.runReaper {
            repeatEvery(milliseconds: max(500, lease / 2)) { [weak self] in
                self?.queue.reap { result in
                    if case .success(let n) = result, n > 0 { self?.logger.warning("returned the jobs of dead workers to the queue", ["jobs": .int(n)]) }
                }
            }
        }
        if settings.runScheduler { scheduleRetryPass(after: 0) }
    }

    public func close() {
        isOpen = false
        for timer in timers { timer.cancel() }
        timers.removeAll()
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

    private func repeatEvery(milliseconds: Int, _ body: @escaping () -> Void) {
        let index = timers.count
        timers.append(loop.schedule(afterMilliseconds: milliseconds) {})
        rearm(index, milliseconds, body)
    }

    private func rearm(_ index: Int, _ milliseconds: Int, _ body: @escaping () -> Void) {
        timers[index] = loop.schedule(afterMilliseconds: milliseconds) { [weak self] in
            guard let self, self.isOpen else { return }
            body()
            self.rearm(index, milliseconds, body)
        }
    }

    private func scheduleRetryPass(after ms: Int) {
        let index = timers.count
        timers.append(loop.schedule(afterMilliseconds: 0) {})
        retryPass(index, after: ms)
    }

    private func retryPass(_ index: Int, after ms: Int) {
        timers[index] = loop.schedule(afterMilliseconds: ms) { [weak self] in
            guard let self, self.isOpen else { return }
            self.queue.moveDueRetries { [weak self] result in
                guard let self, self.isOpen else { return }
                switch result {
                case .success(let move):
                    self.retryPass(index, after: max(5, move.sleepMilliseconds(batchLimit: self.queue.options.retryMovesPerCall, cap: 1000)))
                case .failure:
                    self.retryPass(index, after: 1000)
                }
            }
        }
    }
}

import APNs
import APNsHTTP2
import Foundation
import HTTP2
import Reactor
import RedisQueue

/// The worker's core on one event loop: claim a batch -> parse and validate -> send over the app's pool ->
/// decide with the outcome policy -> record (result, ack, retry, dropped token) in batched Redis scripts.
///
/// Loop-confined: build it and call it on `loop`'s thread. Redis and APNs I/O share that thread, so a job
/// never hops threads and nothing here takes a lock. In flight (claimed, not yet recorded) is bounded by
/// `worker.max_in_flight`: the pipeline claims more only as results are written, so memory stays flat at
/// any queue length.
///
/// This file holds the state and the life cycle (start, claims, timers, shutdown); the work per job is in
/// DeliveryPipeline+Jobs.swift and the writes to Redis in DeliveryPipeline+Recording.swift. Members are
/// internal rather than private only so those extensions can reach them.
public final class DeliveryPipeline {
    public let loop: EventLoop
    public let workerID: String
    public internal(set) var counters = PipelineCounters()
    let configuration: Configuration
    let logger: Logger
    let redis: RedisConnection
    let queue: JobQueue
    let directory: AppDirectory
    var slots: [AppSlot]
    let policy: OutcomePolicy
    var backoff = ClaimBackoff()

    enum Phase { case idle, running, draining, stopped }
    var phase = Phase.idle
    /// Jobs claimed and not yet recorded in Redis (the bound), including reserved claim slots.
    var inFlight = 0
    var claiming = false
    var claimTimer: LoopTimer?
    var pending: [JobCompletion] = []
    var flushTimer: LoopTimer?
    var flushesOutstanding = 0
    /// Repeating timers (heartbeat, reaper, progress), each re-armed in its slot.
    var timers: [LoopTimer] = []
    var retryTimer: LoopTimer?
    /// Jobs the pool pushed back (its queue was full); sent again as answers free room.
    var backlog: [JobAttempt] = []
    var recordWarnings = WarningThrottle(seconds: 10)
    var claimWarnings = WarningThrottle(seconds: 30)
    var idPrefix: String
    var idCounter: UInt64 = 0
    var shutdownDone: (() -> Void)?
    var shutdownDeadline: LoopTimer?

    public init(configuration: Configuration, credentials: [AppCredentials], loop: EventLoop, workerID: String, logger: Logger) throws {
        self.configuration = configuration
        self.loop = loop
        self.workerID = workerID
        self.logger = logger
        let url = try RedisURL(parsing: configuration.redis.url)
        var redisOptions = RedisConnection.Options()
        redisOptions.connectTimeoutMilliseconds = configuration.redis.connectTimeoutMs
        redisOptions.commandTimeoutMilliseconds = configuration.redis.commandTimeoutMs
        redis = RedisConnection(url: url, loop: loop, options: redisOptions)
        var queueOptions = JobQueueOptions()
        queueOptions.leaseMilliseconds = configuration.worker.leaseSeconds * 1000
        queueOptions.resultsMaxLength = configuration.worker.resultsMaxLength
        queueOptions.deadMaxLength = configuration.worker.deadMaxLength
        let keys = try QueueKeys(prefix: configuration.redis.prefix)
        queue = try JobQueue(connection: redis, keys: keys, workerID: workerID, queueKeys: configuration.redis.queueKeys, options: queueOptions)
        directory = AppDirectory(credentials.map(\.app))
        slots = credentials.map { AppSlot(credentials: $0) }
        policy = OutcomePolicy(settings: configuration.retry)
        var random = SystemRandomNumberGenerator()
        idPrefix = String(random.next() & 0xFFFF_FFFF_FFFF, radix: 36)
        backoff = ClaimBackoff(initialMilliseconds: 2, maxMilliseconds: 200)
    }

    // MARK: life cycle

    /// Connects to Redis and starts claiming, heartbeats, the reaper and the retry scheduler.
    public func start() {
        guard phase == .idle else { return }
        phase = .running
        // One line when the connection is lost, then one every 30 s while Redis stays away (not one per
        // reconnect attempt), and one when it is back.
        var connected = false
        var failedAttempts = 0
        var unavailableWarnings = WarningThrottle(seconds: 30)
        redis.onStateChange = { [weak self] state in
            guard let self else { return }
            switch state {
            case .connected:
                self.logger.info("redis connected", ["url": .string(self.redis.url.description), "failed_attempts": .int(failedAttempts)])
                connected = true
                failedAttempts = 0
            case .disconnected(let reason, let retry):
                failedAttempts += 1
                if connected { unavailableWarnings.markLogged() }
                if connected || unavailableWarnings.allow() {
                    self.logger.warning(connected ? "redis connection lost" : "redis unavailable; retrying", [
                        "reason": .string(reason), "retry_in_ms": .int(retry), "failed_attempts": .int(failedAttempts),
                        "url": .string(self.redis.url.description),
                    ])
                }
                connected = false
            default: break
            }
        }
        redis.start()
        let lease = configuration.worker.leaseSeconds * 1000
        repeatEvery(milliseconds: max(200, lease / 3)) { [weak self] in self?.queue.renewHeartbeat() }
        if configuration.worker.runReaper {
            repeatEvery(milliseconds: max(500, lease / 2)) { [weak self] in
                self?.queue.reap { result in
                    if case .success(let n) = result, n > 0 { self?.logger.warning("returned the jobs of dead workers to the queue", ["jobs": .int(n)]) }
                }
            }
        }
        if configuration.worker.runScheduler { scheduleRetryPass(after: 0) }
        repeatEvery(milliseconds: 30_000) { [weak self] in
            guard let self else { return }
            self.logger.info("progress", self.counters.logFields.merging(["in_flight": .int(self.inFlight)]) { a, _ in a })
        }
        // A process restarted under the same worker id (systemd, compose) would otherwise leave its
        // predecessor's leases stranded: its own heartbeat keeps the reaper away from them. Return them first.
        queue.retire { [weak self] result in
            guard let self else { return }
            if case .success(let n) = result, n > 0 {
                self.logger.warning("returned jobs left in flight by an earlier process with this worker id", ["jobs": .int(n)])
            }
            self.pump()
        }
    }

    /// Stops claiming, lets in-flight requests finish until `deadlineSeconds`, writes their results, returns
    /// every lease still held to its queue, closes connections, then calls `done` (on the loop).
    public func shutdown(deadlineSeconds: Int, done: @escaping () -> Void) {
        guard phase == .running || phase == .idle else { return }
        let wasIdle = phase == .idle
        phase = .draining
        shutdownDone = done
        claimTimer?.cancel()
        if wasIdle { finishShutdown(); return }
        logger.info("draining", ["in_flight": .int(inFlight), "deadline_s": .int(deadlineSeconds)])
        shutdownDeadline = loop.schedule(afterMilliseconds: deadlineSeconds * 1000) { [weak self] in
            self?.logger.warning("shutdown deadline reached; returning unfinished jobs to the queue", ["in_flight": .int(self?.inFlight ?? 0)])
            self?.finishShutdown()
        }
        checkDrained()
    }

    func checkDrained() {
        guard phase == .draining else { return }
        if inFlight == 0 && pending.isEmpty && flushesOutstanding == 0 { finishShutdown() }
    }

    func finishShutdown() {
        guard phase == .draining else { return }
        phase = .stopped
        shutdownDeadline?.cancel()
        for timer in timers { timer.cancel() }
        retryTimer?.cancel()
        flushTimer?.cancel()
        // Nothing more goes to APNs once leases are being returned: another worker will redo these jobs.
        for slot in slots { slot.closeAll(graceful: false) }
        let finalize: () -> Void = { [weak self] in
            guard let self else { return }
            self.queue.retire { result in
                if case .success(let n) = result, n > 0 { self.logger.info("returned unsent jobs to the queue", ["jobs": .int(n)]) }
                if case .failure(let error) = result { self.logger.error("could not return leases (they expire and are reaped)", ["error": .string(error.description)]) }
                for slot in self.slots { slot.closeAll(graceful: false) }
                self.redis.close()
                self.logger.info("stopped", self.counters.logFields)
                let done = self.shutdownDone
                self.shutdownDone = nil
                done?()
            }
        }
        if pending.isEmpty { finalize(); return }
        let batch = pending
        pending.removeAll()
        queue.complete(batch) { [weak self] result in
            if case .success(let report) = result { self?.account(report) }
            finalize()
        }
    }

    func repeatEvery(milliseconds: Int, _ body: @escaping () -> Void) {
        timers.append(loop.schedule(afterMilliseconds: 0) {})
        rearm(index: timers.count - 1, milliseconds: milliseconds, body)
    }

    func rearm(index: Int, milliseconds: Int, _ body: @escaping () -> Void) {
        timers[index] = loop.schedule(afterMilliseconds: milliseconds) { [weak self] in
            guard let self, self.phase == .running || self.phase == .draining else { return }
            body()
            self.rearm(index: index, milliseconds: milliseconds, body)
        }
    }

    func scheduleRetryPass(after ms: Int) {
        let timer = loop.schedule(afterMilliseconds: ms) { [weak self] in
            guard let self, self.phase == .running else { return }
            self.queue.moveDueRetries { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let move):
                    self.scheduleRetryPass(after: max(5, move.sleepMilliseconds(batchLimit: self.queue.options.retryMovesPerCall, cap: 1000)))
                case .failure:
                    self.scheduleRetryPass(after: 1000)
                }
            }
        }
        retryTimer = timer
    }

    // MARK: claiming

    var claimThreshold: Int { max(1, min(configuration.worker.claimBatch, configuration.worker.maxInFlight / 2)) }

    /// Claims more when there is room for a batch; one claim at a time.
    func pump() {
        guard phase == .running, !claiming, claimTimer == nil || claimTimer!.isCancelled else { return }
        let room = configuration.worker.maxInFlight - inFlight
        guard room >= claimThreshold || (inFlight == 0 && room > 0) else { return }
        let count = min(room, configuration.worker.claimBatch)
        claiming = true
        inFlight += count
        queue.claim(max: count) { [weak self] result in
            guard let self else { return }
            self.claiming = false
            switch result {
            case .success(let leases):
                self.inFlight -= count - leases.count
                self.counters.claimed += leases.count
                let now = monotonicNanos()
                for lease in leases { self.process(lease, claimedAt: now) }
                let delay = self.backoff.next(claimed: leases.count)
                if self.phase == .draining {
                    self.checkDrained()
                } else if delay == 0 {
                    self.pump()
                } else {
                    self.claimLater(delay)
                }
            case .failure(let error):
                self.inFlight -= count
                if error != .closed {
                    if self.claimWarnings.allow() {
                        self.logger.warning("claim failed; retrying", ["error": .string(error.description)])
                    }
                    self.claimLater(500)
                }
                self.checkDrained()
            }
        }
    }

    func claimLater(_ ms: Int) {
        claimTimer = loop.schedule(afterMilliseconds: ms) { [weak self] in
            self?.claimTimer = nil
            self?.pump()
        }
    }

    func nextJobID() -> String {
        idCounter &+= 1
        return "\(idPrefix)-\(idCounter)"
    }
}


import Reactor
import RedisQueue

/// `JobSource` over the shards (`redis.shards`): one `JobQueue` per shard, all on one shared
/// `RedisCommandSender` (one connection per node, not per shard). Claims go round the shards, starting one
/// further each time, and pass over a shard that just answered empty for a short, growing while
/// (`ClaimBackoff`), so an empty shard never holds up the others; completions and idempotency checks go to the
/// shard their lease came from; returning leases, heartbeats, the reaper and the retry scheduler run in every
/// shard. With one shard it does exactly what one `JobQueue` does. Loop-confined.
public final class ShardedJobSource: JobSource {
    public let queues: [JobQueue]
    private let loop: EventLoop
    private let settings: Configuration.WorkerSettings
    private let logger: Logger
    /// Shard index by queue key: a lease's `queueKey` names its shard (shard prefixes differ, so keys do).
    private let shardOfQueue: [String: Int]
    /// Per shard: when it may be asked again after an empty or failed claim, and how long it waits next time.
    private var pauses: [ShardPause]
    private var cursor = 0
    private var timers: [LoopTimer] = []
    private var isOpen = false
    /// Budgets on (`budgets.*`): a paced retry recorded for earlier than its shard's next retry pass brings that
    /// pass forward, so the job leaves in its slot rather than up to a second late, in a burst with the others.
    public var wakesForPacedRetries = false
    /// Per shard: its retry pass's timer (index into `timers`), when it fires (monotonic ns), whether it is running.
    /// `soonest`: while it runs, the earliest paced retry recorded meanwhile (wall ms), for its next sleep.
    private var passes: [(timer: Int, due: UInt64, running: Bool, soonest: Int64?)] = []

    /// How long a shard that failed a claim is passed over (its connection is likely reconnecting).
    static let failedClaimPauseMilliseconds = 500

    /// `queues`: one per shard, in shard order, all on `loop`.
    public init(queues: [JobQueue], loop: EventLoop, settings: Configuration.WorkerSettings, logger: Logger) {
        precondition(!queues.isEmpty, "a sharded source needs at least one shard")
        self.queues = queues
        self.loop = loop
        self.settings = settings
        self.logger = logger
        var byQueue: [String: Int] = [:]
        for (index, queue) in queues.enumerated() {
            for key in queue.queueKeys { byQueue[key] = index }
        }
        shardOfQueue = byQueue
        pauses = Array(repeating: ShardPause(), count: queues.count)
    }

    /// The shard a lease belongs to (0 for a key no shard has, which a claim never hands out).
    func shard(of lease: Lease) -> Int { queues.count == 1 ? 0 : shardOfQueue[lease.queueKey] ?? 0 }

    // MARK: JobSource

    public func claim(max: Int, completion: @escaping (Result<[Lease], JobSourceFailure>) -> Void) {
        let now = monotonicNanos()
        let count = queues.count
        let order = (0..<count).map { (cursor + $0) % count }
        cursor = (cursor + 1) % count
        var visit = order.filter { pauses[$0].notBefore <= now }
        // Every shard is resting: ask the one that rests least, so the core's own back-off (not ours on top of
        // it) paces an idle worker.
        if visit.isEmpty, let soonest = order.min(by: { pauses[$0].notBefore < pauses[$1].notBefore }) { visit = [soonest] }
        claim(max: max, visiting: visit[...], firstFailure: nil, completion: completion)
    }

    /// Asks each shard of `visiting` in turn until one hands out jobs. No jobs anywhere: an empty answer, or
    /// the first failure when some shard failed (the core then waits before it claims again).
    private func claim(max: Int, visiting: ArraySlice<Int>, firstFailure: JobSourceFailure?,
                       completion: @escaping (Result<[Lease], JobSourceFailure>) -> Void) {
        guard let shard = visiting.first else {
            completion(firstFailure.map { .failure($0) } ?? .success([]))
            return
        }
        queues[shard].claim(max: max) { [weak self] result in
            guard let self else { return completion(.failure(JobSourceFailure("closed", closed: true))) }
            let now = monotonicNanos()
            switch result {
            case .success(let leases):
                self.pauses[shard].answered(claimed: leases.count, now: now)
                if leases.isEmpty {
                    self.claim(max: max, visiting: visiting.dropFirst(), firstFailure: firstFailure, completion: completion)
                } else {
                    completion(.success(leases))
                }
            case .failure(let error):
                let failure = RedisJobSource.failure(error)
                if failure.closed { return completion(.failure(failure)) }
                self.pauses[shard].failed(now: now, pauseMilliseconds: Self.failedClaimPauseMilliseconds)
                self.claim(max: max, visiting: visiting.dropFirst(), firstFailure: firstFailure ?? failure, completion: completion)
            }
        }
    }

    public func record(_ batch: [JobCompletion], isRepeat: Bool, completion: @escaping (Result<CompletionReport, JobSourceFailure>) -> Void) {
        let groups = group(batch) { $0.lease }
        if groups.count == 1, let (shard, part) = groups.first {
            if wakesForPacedRetries {
                return queues[shard].complete(part, isRepeat: isRepeat) { [weak self] result in
                    if case .success = result { self?.bringRetryPassForward(shard, part) }
                    completion(result.mapError(RedisJobSource.failure))
                }
            }
            return queues[shard].complete(part, isRepeat: isRepeat) { result in completion(result.mapError(RedisJobSource.failure)) }
        }
        var merged = CompletionReport()
        var failures: [JobSourceFailure] = []
        var waiting = groups.count
        for (shard, part) in groups {
            queues[shard].complete(part, isRepeat: isRepeat) { [weak self] result in
                switch result {
                case .success(let report):
                    merged.add(report)
                    if self?.wakesForPacedRetries == true { self?.bringRetryPassForward(shard, part) }
                case .failure(let error): failures.append(RedisJobSource.failure(error))
                }
                waiting -= 1
                guard waiting == 0 else { return }
                guard let first = failures.first else { return completion(.success(merged)) }
                // Some shards applied their part: the core sends the whole batch again, and it must go as a
                // repeat so that their leases, gone now, are not recovered (recorded twice) but counted unconfirmed.
                let applied = failures.count < groups.count
                completion(.failure(JobSourceFailure(first.description, maybeApplied: first.maybeApplied || applied,
                                                     closed: failures.contains { $0.closed })))
            }
        }
    }

    public func claimOnce(_ jobs: [(lease: Lease, jobID: String)], windowMilliseconds: Int64,
                          completion: @escaping (Result<[OnceVerdict], JobSourceFailure>) -> Void) {
        let indexed = Array(jobs.enumerated())
        let groups = group(indexed) { $0.element.lease }
        if groups.count == 1, let (shard, _) = groups.first {
            return queues[shard].claimOnce(jobs, windowMilliseconds: windowMilliseconds) { result in completion(result.mapError(RedisJobSource.failure)) }
        }
        var verdicts = [OnceVerdict](repeating: .unguarded, count: jobs.count)
        var failure: JobSourceFailure?
        var waiting = groups.count
        for (shard, part) in groups {
            queues[shard].claimOnce(part.map(\.element), windowMilliseconds: windowMilliseconds) { result in
                switch result {
                case .success(let answers): for (item, verdict) in zip(part, answers) { verdicts[item.offset] = verdict }
                case .failure(let error): failure = failure ?? RedisJobSource.failure(error)
                }
                waiting -= 1
                if waiting == 0 { completion(failure.map { .failure($0) } ?? .success(verdicts)) }
            }
        }
    }

    /// A claimed batch comes from one shard, so this is one call; each shard keeps its own budgets, so with
    /// several shards each gets its share of a budget (the interval times the shard count).
    public func checkBudgets(_ jobs: [(lease: Lease, limits: [BudgetLimit])],
                             completion: @escaping (Result<[BudgetVerdict], JobSourceFailure>) -> Void) {
        let scale = Int64(queues.count)
        let indexed = Array(jobs.enumerated())
        let groups = group(indexed) { $0.element.lease }
        var verdicts = [BudgetVerdict](repeating: .allowed, count: jobs.count)
        var failure: JobSourceFailure?
        var waiting = groups.count
        for (shard, part) in groups {
            let limits = part.map { item in scale == 1 ? item.element.limits : item.element.limits.map { $0.share(among: scale) } }
            queues[shard].checkBudgets(limits) { result in
                switch result {
                case .success(let answers): for (item, verdict) in zip(part, answers) { verdicts[item.offset] = verdict }
                case .failure(let error): failure = failure ?? RedisJobSource.failure(error)
                }
                waiting -= 1
                if waiting == 0 { completion(failure.map { .failure($0) } ?? .success(verdicts)) }
            }
        }
    }

    public func returnAll(completion: @escaping (Result<Int, JobSourceFailure>) -> Void) {
        var returned = 0
        var failure: JobSourceFailure?
        var waiting = queues.count
        for queue in queues {
            queue.retire { result in
                switch result {
                case .success(let n): returned += n
                case .failure(let error): failure = failure ?? RedisJobSource.failure(error)
                }
                waiting -= 1
                if waiting == 0 { completion(failure.map { .failure($0) } ?? .success(returned)) }
            }
        }
    }

    /// Items split by the shard of their lease, in shard order; each part keeps the batch's order.
    private func group<Item>(_ items: [Item], lease: (Item) -> Lease) -> [(Int, [Item])] {
        if queues.count == 1 { return [(0, items)] }
        var parts: [Int: [Item]] = [:]
        for item in items { parts[shard(of: lease(item)), default: []].append(item) }
        return parts.sorted { $0.key < $1.key }
    }

    // MARK: maintenance

    /// Dead workers this source's reapers reaped, over every shard.
    public var workersReaped: Int { queues.reduce(0) { $0 + $1.workersReaped } }

    /// Starts heartbeats, the reaper and the retry scheduler in every shard.
    public func open() {
        guard !isOpen else { return }
        isOpen = true
        let lease = settings.leaseSeconds * 1000
        for (shard, queue) in queues.enumerated() {
            repeatEvery(milliseconds: max(200, lease / 3)) { [weak queue] in queue?.renewHeartbeat() }
            if settings.runReaper {
                repeatEvery(milliseconds: max(500, lease / 2)) { [weak self, weak queue] in
                    queue?.reap { result in
                        guard case .success(let n) = result, n > 0, let self else { return }
                        var fields: [String: LogValue] = ["jobs": .int(n)]
                        if self.queues.count > 1 { fields["shard"] = .int(shard) }
                        self.logger.warning("returned the jobs of dead workers to the queue", fields)
                    }
                }
            }
            if settings.runScheduler { scheduleRetryPass(shard) }
        }
    }

    public func close() {
        isOpen = false
        for timer in timers { timer.cancel() }
        timers.removeAll()
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

    private func scheduleRetryPass(_ shard: Int) {
        let index = timers.count
        timers.append(loop.schedule(afterMilliseconds: 0) {})
        while passes.count <= shard { passes.append((0, 0, false, nil)) }
        passes[shard].timer = index
        retryPass(shard, after: 0)
    }

    /// Sleeps until the shard's next retry falls due (at most a second), at once after a full batch.
    private func retryPass(_ shard: Int, after ms: Int) {
        let index = passes[shard].timer
        passes[shard].due = monotonicNanos() &+ UInt64(ms) * 1_000_000
        passes[shard].running = false
        timers[index] = loop.schedule(afterMilliseconds: ms) { [weak self] in
            guard let self, self.isOpen else { return }
            let queue = self.queues[shard]
            self.passes[shard].running = true
            queue.moveDueRetries { [weak self, weak queue] result in
                guard let self, self.isOpen, let queue else { return }
                switch result {
                case .success(let move):
                    var sleep = move.sleepMilliseconds(batchLimit: queue.options.retryMovesPerCall, cap: 1000)
                    if let soonest = self.passes[shard].soonest { sleep = min(sleep, Int(max(0, soonest - wallClockMillis()))) }
                    self.passes[shard].soonest = nil
                    self.retryPass(shard, after: max(5, sleep))
                case .failure:
                    self.retryPass(shard, after: 1000)
                }
            }
        }
    }

    /// A recorded batch put retries into the shard's retry set: the earliest due before the next pass moves it.
    private func bringRetryPassForward(_ shard: Int, _ part: [JobCompletion]) {
        guard isOpen, settings.runScheduler, shard < passes.count else { return }
        var earliest: Int64?
        for completion in part where !completion.handedBack {
            if let due = completion.retry?.dueAt, due < earliest ?? .max { earliest = due }
        }
        guard let earliest else { return }
        if passes[shard].running {
            passes[shard].soonest = min(passes[shard].soonest ?? .max, earliest)
            return
        }
        // A day caps it: the pass due within a second comes first anyway, and a time from Redis far ahead (a corrupt
        // budget) must not overflow the nanoseconds below.
        let ms = Int(min(max(0, earliest - wallClockMillis()), 86_400_000))
        guard monotonicNanos() &+ UInt64(ms) * 1_000_000 &+ 1_000_000 < passes[shard].due else { return }
        timers[passes[shard].timer].cancel()
        retryPass(shard, after: ms)
    }
}

/// One shard's rest after a claim found nothing (2 ms doubling to 200 ms, as `ClaimBackoff`) or failed; over
/// as soon as it hands out jobs.
struct ShardPause {
    private var backoff = ClaimBackoff(initialMilliseconds: 2, maxMilliseconds: 200)
    /// Monotonic nanoseconds before which claims pass this shard over.
    private(set) var notBefore: UInt64 = 0

    mutating func answered(claimed: Int, now: UInt64) {
        let rest = backoff.next(claimed: claimed)
        notBefore = rest == 0 ? 0 : now &+ UInt64(rest) * 1_000_000
    }

    mutating func failed(now: UInt64, pauseMilliseconds: Int) {
        notBefore = now &+ UInt64(pauseMilliseconds) * 1_000_000
    }
}

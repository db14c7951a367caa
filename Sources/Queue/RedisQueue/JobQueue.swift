import Reactor

/// A worker's view of the queue on a `RedisCommandSender` (a `RedisConnection`): claim, complete, heartbeat, reap, schedule retries.
///
/// Loop-confined like its connection (not Sendable): call everything on `connection.loop`; completions run
/// there. Calls pipeline: completions may go out while claims are in flight. A call that fails with
/// `.connectionLost`/`.timeout` may or may not have run: re-sending a completion batch is safe (the lease-lost
/// rule turns a repeat into `leasesLost`). Jobs from a claim whose reply was lost stay in this worker's lease
/// hash (unknown to it) until `retire()` returns them on shutdown or the reaper does after a crash.
/// A call that fails with `.wrongType` changed nothing (the scripts check key types before writing): keep the
/// leases and send the same call again later, not as a repeat.
public final class JobQueue {
    public let connection: any RedisCommandSender
    public let keys: QueueKeys
    public let workerID: String
    let commands: QueueCommands
    private var leasePrefixes = LeasePrefixes()
    /// Fair share between the queues (`JobQueueOptions.queueWeights`); nil for strict priority.
    private var rotation: QueueRotation?
    private var heartbeatTimer: LoopTimer?
    /// Workers whose heartbeat had run out that this queue's reaper found and reaped (`herald_workers_reaped_total`:
    /// a worker that died without ending cleanly, even when another worker's reaper got to it first).
    public private(set) var workersReaped = 0
    private var reapTimer: LoopTimer?
    private var schedulerTimer: LoopTimer?
    /// Hears of every key a script passed over (a queue key holding a string, say): the claim skipped that
    /// queue, the reaper, release or retire left leases that belong to it in place, the scheduler left its
    /// retries in the retry set. Called on the loop, once per key per call: rate-limit the log line.
    public var onKeyProblem: ((QueueKeyProblem) -> Void)?

    /// `queueKeys` in priority order (default: `keys.queue`). `workerID` must be unique among live workers
    /// (e.g. host:pid:random) and a valid key part. `leaseTag` goes into every lease id, so the queues of
    /// several shards in one process never hand out the same id.
    public init(connection: any RedisCommandSender, keys: QueueKeys, workerID: String, queueKeys: [String]? = nil,
                options: JobQueueOptions = JobQueueOptions(), leaseTag: String = "") throws(QueueKeys.InvalidKey) {
        self.commands = try QueueCommands(keys: keys, workerID: workerID, queueKeys: queueKeys, options: options)
        self.leasePrefixes = LeasePrefixes(tag: leaseTag)
        self.rotation = options.rotation(for: commands.queueKeys)
        self.connection = connection
        self.keys = keys
        self.workerID = workerID
    }

    public var options: JobQueueOptions { commands.options }
    /// The queue keys claims take from, in priority order.
    public var queueKeys: [String] { commands.queueKeys }

    private func run(_ call: (RedisScript, [[UInt8]], [[UInt8]]), _ completion: @escaping (Result<RESPValue, RedisError>) -> Void) {
        connection.evalScript(call.0, keys: call.1, args: call.2) { result in completion(result.mapError { $0.refined() }) }
    }

    /// A script whose keys come from data (`KeyRounds`): called again, declaring what its reply asked for,
    /// until it needs nothing more; `merge` adds up the rounds' values.
    private func rounds<T>(_ script: String, _ make: @escaping ([[UInt8]]) -> QueueCommands.Call,
                           parse: @escaping (RESPValue) throws(RedisError) -> (T, needs: [[UInt8]]), merge: @escaping (T, T) -> T,
                           state: KeyRounds? = nil, sofar: T? = nil, completion: @escaping (Result<T, RedisError>) -> Void) {
        var state = state ?? KeyRounds(script: script)
        run(make(state.learnt)) { [weak self] result in
            do throws(RedisError) {
                let (value, needs) = try parse(result.get())
                let total = sofar.map { merge($0, value) } ?? value
                guard try state.again(needs: needs) else { return completion(.success(total)) }
                guard let self else { return completion(.failure(.closed)) }
                self.rounds(script, make, parse: parse, merge: merge, state: state, sofar: total, completion: completion)
            } catch {
                completion(.failure(error))
            }
        }
    }

    /// For the scripts that answer {count, ..., problems, needs}: reports the problems, hands on the count.
    private func runCount(_ script: String, _ make: @escaping ([[UInt8]]) -> QueueCommands.Call,
                          _ completion: @escaping (Result<Int, RedisError>) -> Void) {
        rounds(script, make, parse: { [weak self] reply throws(RedisError) in
            let (count, problems, needs) = try QueueCommands.parseCount(reply)
            self?.report(problems)
            return (count, needs)
        }, merge: +, completion: completion)
    }

    private func report(_ problems: [QueueKeyProblem]) {
        for problem in problems { onKeyProblem?(problem) }
    }

    /// Claims up to `max` jobs (also renews the heartbeat). An empty array means the queues are empty: back off
    /// with `ClaimBackoff`. Queue keys of the wrong type are skipped (and reported to `onKeyProblem`).
    public func claim(max: Int, completion: @escaping (Result<[Lease], RedisError>) -> Void) {
        let commands = self.commands
        let prefix = leasePrefixes.next()
        run(commands.claim(max: max, leasePrefix: prefix, order: rotation?.next())) { [weak self] result in
            if case .failure(let error) = result, error.outcomeUnknown {
                self?.releaseOrphans(prefix: prefix)
            }
            completion(result.flatMap { reply in
                Result { () throws(RedisError) in
                    let (leases, problems) = try commands.parseClaim(reply)
                    self?.report(problems)
                    return leases
                }
            })
        }
    }

    /// A claim may have run without its reply reaching us: put whatever it leased back, retrying until done.
    /// `.notReplicated` is done too: the release ran on the master, and asking again would only wait again for
    /// replicas that may not come back (one endless loop per lost claim).
    private func releaseOrphans(prefix: String) {
        let commands = self.commands
        runCount("releasePrefix", { commands.releasePrefix(prefix, learnt: $0) }) { [weak self] result in
            guard let self, case .failure(let error) = result, error != .closed else { return }
            if case .notReplicated = error { return }
            self.connection.loop.schedule(afterMilliseconds: 500) { [weak self] in self?.releaseOrphans(prefix: prefix) }
        }
    }

    /// Applies a batch of completions in one script call: lease release and result/retry/dead letter together.
    ///
    /// `isRepeat`: this batch was sent before and its reply was lost. Its leases may then be gone because the
    /// first call applied it, so the lease-lost recovery (which removes a byte-identical job from the queue) is
    /// skipped: such completions are reported as `unconfirmed`, never recorded twice, and never take a twin
    /// job out of the queue.
    public func complete(_ batch: [JobCompletion], isRepeat: Bool = false, completion: @escaping (Result<CompletionReport, RedisError>) -> Void) {
        guard !batch.isEmpty else {
            completion(.success(CompletionReport()))
            return
        }
        complete(batch, withJobs: false, recover: !isRepeat, completion: completion)
    }

    private func complete(_ batch: [JobCompletion], withJobs: Bool, recover: Bool, completion: @escaping (Result<CompletionReport, RedisError>) -> Void) {
        let commands = self.commands
        let call = commands.complete(batch, withJobs: withJobs)
        connection.evalScript(call.0, keys: call.1, arguments: call.2) { [weak self] result in
            let parsed = result.mapError { $0.refined() }.flatMap { reply in Result { () throws(RedisError) in try commands.parseComplete(reply, batch: batch) } }
            switch parsed {
            case .failure(let error):
                completion(.failure(error))
            case .success(let (report, again)):
                guard !again.isEmpty, !withJobs, recover, let self else {
                    var report = report
                    report.unconfirmed += again.count
                    completion(.success(report))
                    return
                }
                // Leases that were gone: the rare recovery, now with the job bytes (see QueueScripts.complete).
                // The first call was applied: a failed recovery must not make the whole batch look unapplied (a
                // retry would recover, and record twice, what the first call wrote). The recovery is only a way to
                // spare a duplicate; leases that are gone belong to the queue or another worker either way.
                self.complete(again, withJobs: true, recover: true) { second in
                    var merged = report
                    switch second {
                    case .success(let extra): merged.add(extra)
                    case .failure: merged.unconfirmed += again.count
                    }
                    completion(.success(merged))
                }
            }
        }
    }

    /// Idempotency for freshly claimed producer jobs (their lease and `id`): which copy sends, which is a
    /// duplicate (see `QueueScripts.claimOnce`). Safe to send again after a lost reply: a lease asking again for
    /// the key it holds is claimed again.
    public func claimOnce(_ jobs: [(lease: Lease, jobID: String)], windowMilliseconds: Int64,
                          completion: @escaping (Result<[OnceVerdict], RedisError>) -> Void) {
        guard !jobs.isEmpty else { return completion(.success([])) }
        let commands = self.commands
        rounds("claimOnce", { commands.claimOnce(jobs, windowMilliseconds: windowMilliseconds, learnt: $0) },
               parse: { [weak self] reply throws(RedisError) in
                   let (verdicts, problems, needs) = try commands.parseClaimOnce(reply, jobIDs: jobs.map(\.jobID))
                   self?.report(problems)
                   return (verdicts, needs)
               }, merge: { $1 }, completion: completion)
    }

    /// Pushes this worker's lease deadline out by `options.leaseMilliseconds`. One call covers every lease.
    public func renewHeartbeat(completion: @escaping (Result<Int64, RedisError>) -> Void = { _ in }) {
        run(commands.heartbeat()) { result in completion(result.flatMap { reply in reply.int.map { .success($0) } ?? .failure(.protocolError("heartbeat reply")) }) }
    }

    /// Renews the heartbeat now and then every `intervalMilliseconds` (default: a third of the lease) until
    /// `stopHeartbeats()`. Failures are left to the connection's reconnect; `onFailure` sees them (for logs).
    public func startHeartbeats(intervalMilliseconds: Int? = nil, onFailure: ((RedisError) -> Void)? = nil) {
        heartbeatTimer?.cancel()
        let interval = max(10, intervalMilliseconds ?? options.leaseMilliseconds / 3)
        renewHeartbeat { result in if case .failure(let error) = result { onFailure?(error) } }
        heartbeatTimer = connection.loop.schedule(afterMilliseconds: interval) { [weak self] in
            self?.startHeartbeats(intervalMilliseconds: interval, onFailure: onFailure)
        }
    }

    public func stopHeartbeats() {
        heartbeatTimer?.cancel()
        heartbeatTimer = nil
    }

    /// What the background maintenance did, for logs and metrics.
    public enum MaintenanceEvent: Sendable, Equatable {
        case reaped(jobs: Int)
        case movedRetries(Int)
        case failed(RedisError)
    }

    /// Runs the reaper every `reapIntervalMilliseconds` and the retry scheduler whenever entries fall due (it
    /// sleeps until the next due time, at most `schedulerMaxSleepMilliseconds`; at once after a full batch), on
    /// this queue's loop, until `stopMaintenance()`. After a failure each waits its full interval and tries again.
    /// `onEvent` hears only about non-zero work and failures.
    public func startMaintenance(reapIntervalMilliseconds: Int = 1_000, schedulerMaxSleepMilliseconds: Int = 1_000,
                                 onEvent: ((MaintenanceEvent) -> Void)? = nil) {
        stopMaintenance()
        let loop = connection.loop
        func reapPass() {
            reap { [weak self] result in
                guard let self, self.reapTimer != nil else { return }
                switch result {
                case .success(let jobs): if jobs > 0 { onEvent?(.reaped(jobs: jobs)) }
                case .failure(let error): onEvent?(.failed(error))
                }
                self.reapTimer = loop.schedule(afterMilliseconds: reapIntervalMilliseconds) { reapPass() }
            }
        }
        func schedulerPass() {
            moveDueRetries { [weak self] result in
                guard let self, self.schedulerTimer != nil else { return }
                var sleep = schedulerMaxSleepMilliseconds
                switch result {
                case .success(let move):
                    if move.moved > 0 { onEvent?(.movedRetries(move.moved)) }
                    sleep = move.sleepMilliseconds(batchLimit: self.options.retryMovesPerCall, cap: schedulerMaxSleepMilliseconds)
                case .failure(let error):
                    onEvent?(.failed(error))
                }
                self.schedulerTimer = loop.schedule(afterMilliseconds: sleep) { schedulerPass() }
            }
        }
        // Placeholders mark "running" until the first pass re-arms them.
        reapTimer = loop.schedule(afterMilliseconds: 0) { reapPass() }
        schedulerTimer = loop.schedule(afterMilliseconds: 0) { schedulerPass() }
    }

    public func stopMaintenance() {
        reapTimer?.cancel()
        schedulerTimer?.cancel()
        reapTimer = nil
        schedulerTimer = nil
    }

    /// Returns the jobs of workers presumed dead to their queues. Safe in any number of processes at once.
    /// A dead worker's lease whose queue key holds another type stays (reported to `onKeyProblem`); the rest go on.
    /// Two steps: a read-only scan names the dead workers, then the reap declares their lease hashes.
    public func reap(completion: @escaping (Result<Int, RedisError>) -> Void = { _ in }) {
        let commands = self.commands
        run(commands.reapScan()) { [weak self] result in
            switch result.flatMap({ reply in Result { () throws(RedisError) in try QueueCommands.parseReapScan(reply) } }) {
            case .failure(let error): completion(.failure(error))
            case .success(let dead) where dead.isEmpty: completion(.success(0))
            case .success(let dead):
                guard let self else { return completion(.failure(.closed)) }
                self.runCount("reap", { commands.reap(dead: dead, learnt: $0) }) { [weak self] result in
                    if case .success = result { self?.workersReaped += dead.count }
                    completion(result)
                }
            }
        }
    }

    /// Moves due retries to the head of their queues (one batch). Safe with many schedulers.
    public func moveDueRetries(completion: @escaping (Result<RetryMove, RedisError>) -> Void) {
        let commands = self.commands
        rounds("moveDue", { commands.moveDue(learnt: $0) }, parse: { [weak self] reply throws(RedisError) in
            let (move, problems, needs) = try QueueCommands.parseMoveDue(reply)
            self?.report(problems)
            return (move, needs)
        }, merge: QueueCommands.merge, completion: completion)
    }

    /// Puts unsent leases back at the head of their queues now (graceful shutdown, or a batch that cannot go out).
    public func release(leases leaseIDs: [String], completion: @escaping (Result<Int, RedisError>) -> Void = { _ in }) {
        guard !leaseIDs.isEmpty else { completion(.success(0)); return }
        let commands = self.commands
        runCount("release", { commands.release(leaseIDs, learnt: $0) }, completion)
    }

    /// Last call on shutdown: every lease still held goes back to its queue and the worker entry is removed. The
    /// heartbeats stop first: one sent after the retire would put the entry back, and the drained worker would
    /// look registered until its deadline passed and the reaper took it.
    public func retire(completion: @escaping (Result<Int, RedisError>) -> Void = { _ in }) {
        stopHeartbeats()
        let commands = self.commands
        runCount("retire", { commands.retire(learnt: $0) }, completion)
    }
}

/// The same operations on a `BlockingRedis`, for `herald scheduler`, CLI tools and tests. Not thread-safe
/// (like its connection): one per thread.
public final class BlockingJobQueue {
    public let redis: any BlockingRedisCommands
    public let keys: QueueKeys
    public let workerID: String
    let commands: QueueCommands
    private var leasePrefixes = LeasePrefixes()
    private var rotation: QueueRotation?
    /// See `JobQueue.onKeyProblem`.
    public var onKeyProblem: ((QueueKeyProblem) -> Void)?

    public init(redis: any BlockingRedisCommands, keys: QueueKeys, workerID: String, queueKeys: [String]? = nil,
                options: JobQueueOptions = JobQueueOptions()) throws(QueueKeys.InvalidKey) {
        self.commands = try QueueCommands(keys: keys, workerID: workerID, queueKeys: queueKeys, options: options)
        self.rotation = options.rotation(for: commands.queueKeys)
        self.redis = redis
        self.keys = keys
        self.workerID = workerID
    }

    private func run(_ call: (RedisScript, [[UInt8]], [[UInt8]])) throws(RedisError) -> RESPValue {
        do { return try redis.evalScript(call.0, keys: call.1, args: call.2) } catch { throw error.refined() }
    }

    private func report(_ problems: [QueueKeyProblem]) {
        for problem in problems { onKeyProblem?(problem) }
    }

    /// See `JobQueue.rounds`.
    private func rounds<T>(_ script: String, _ make: ([[UInt8]]) -> QueueCommands.Call,
                           parse: (RESPValue) throws(RedisError) -> (T, needs: [[UInt8]]), merge: (T, T) -> T) throws(RedisError) -> T {
        var state = KeyRounds(script: script)
        var total: T? = nil
        while true {
            let (value, needs) = try parse(run(make(state.learnt)))
            let sum = total.map { merge($0, value) } ?? value
            total = sum
            if try !state.again(needs: needs) { return sum }
        }
    }

    private func runCount(_ script: String, _ make: ([[UInt8]]) -> QueueCommands.Call) throws(RedisError) -> Int {
        try rounds(script, make, parse: { reply throws(RedisError) in
            let (count, problems, needs) = try QueueCommands.parseCount(reply)
            report(problems)
            return (count, needs)
        }, merge: +)
    }

    public func claim(max: Int) throws(RedisError) -> [Lease] {
        let (leases, problems) = try commands.parseClaim(run(commands.claim(max: max, leasePrefix: leasePrefixes.next(), order: rotation?.next())))
        report(problems)
        return leases
    }

    /// `isRepeat`: see `JobQueue.complete(_:isRepeat:completion:)`.
    public func complete(_ batch: [JobCompletion], isRepeat: Bool = false) throws(RedisError) -> CompletionReport {
        guard !batch.isEmpty else { return CompletionReport() }
        let call = commands.complete(batch)
        var (report, again) = try commands.parseComplete(run((call.0, call.1, call.2.decoded)), batch: batch)
        if isRepeat {
            report.unconfirmed += again.count
        } else if !again.isEmpty {
            let retry = commands.complete(again, withJobs: true)
            let (extra, _) = try commands.parseComplete(run((retry.0, retry.1, retry.2.decoded)), batch: again)
            report.add(extra)
        }
        return report
    }

    /// See `JobQueue.claimOnce`.
    public func claimOnce(_ jobs: [(lease: Lease, jobID: String)], windowMilliseconds: Int64) throws(RedisError) -> [OnceVerdict] {
        guard !jobs.isEmpty else { return [] }
        return try rounds("claimOnce", { commands.claimOnce(jobs, windowMilliseconds: windowMilliseconds, learnt: $0) },
                          parse: { reply throws(RedisError) in
                              let (verdicts, problems, needs) = try commands.parseClaimOnce(reply, jobIDs: jobs.map(\.jobID))
                              report(problems)
                              return (verdicts, needs)
                          }, merge: { $1 })
    }

    @discardableResult
    public func renewHeartbeat() throws(RedisError) -> Int64 {
        guard let now = try run(commands.heartbeat()).int else { throw .protocolError("heartbeat reply") }
        return now
    }

    @discardableResult
    public func reap() throws(RedisError) -> Int {
        let dead = try QueueCommands.parseReapScan(run(commands.reapScan()))
        guard !dead.isEmpty else { return 0 }
        return try runCount("reap") { commands.reap(dead: dead, learnt: $0) }
    }

    public func moveDueRetries() throws(RedisError) -> RetryMove {
        try rounds("moveDue", { commands.moveDue(learnt: $0) }, parse: { reply throws(RedisError) in
            let (move, problems, needs) = try QueueCommands.parseMoveDue(reply)
            report(problems)
            return (move, needs)
        }, merge: QueueCommands.merge)
    }

    @discardableResult
    public func release(leases leaseIDs: [String]) throws(RedisError) -> Int {
        guard !leaseIDs.isEmpty else { return 0 }
        return try runCount("release") { commands.release(leaseIDs, learnt: $0) }
    }

    @discardableResult
    public func retire() throws(RedisError) -> Int { try runCount("retire") { commands.retire(learnt: $0) } }
}

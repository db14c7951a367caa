import PushCore
import RedisQueue

/// What the core asks its driver to do. The driver (`DeliveryPipeline`) runs them in order against a
/// `JobSource` and a `PushSender` and reports back with the core's event methods.
public enum DeliveryAction {
    /// Claim up to this many jobs; answer with `claimed` or `claimFailed`.
    case claim(Int)
    /// Send these jobs in order; on the first `.refused` hand that job and the rest back with `refused`.
    case send([JobAttempt])
    /// Apply this batch; answer with `recorded` or `recordFailed`.
    case record(RecordBatch)
    /// Idempotency: ask which of these freshly claimed jobs may be sent; answer with `onceChecked`.
    case claimOnce(OnceBatch)
    /// Budgets (`budgets.*`): ask Redis which of these jobs may go now; answer with `budgetsChecked`.
    case checkBudgets(BudgetBatch)
    /// Re-read the app's credential; answer with `reloaded`.
    case reloadCredentials(app: Int)
    /// A probe goes to this destination next: cut any reconnect back-off of its transport short, so the probe
    /// meets a connection attempt at once (the core's pause already spaced the attempts).
    case connectNow(Destination)
    case log(LogLevel, String, [String: LogValue])
    /// Shutdown has drained: close the sender, write `final` if any, return every lease still held, stop.
    case drained(final: RecordBatch?)
}

/// A batch of completions on its way to Redis.
public struct RecordBatch: Sendable {
    public let id: Int
    public let completions: [JobCompletion]
    /// Sent before and its reply was lost: must not recover lost leases (see `JobQueue.complete`).
    public let isRepeat: Bool
}

/// Claimed producer jobs whose ids wait for the idempotency decision (still in flight).
public struct OnceBatch {
    public let jobs: [JobAttempt]
}

/// The numbers the core works with, for one event loop's share of the process.
public struct DeliverySettings: Sendable {
    public var workerID: String
    /// Jobs claimed and not yet recorded, at most.
    public var maxInFlight = 8000
    public var claimBatch = 512
    /// Results wait at most this long for a batch to fill.
    public var flushIntervalMilliseconds = 2
    /// A batch this full goes out at once.
    public var flushBatch = 512
    public var retry = RetrySettings()
    /// Retry policies of queues that override `retry`, by queue key (the job's origin queue picks).
    public var queueRetry: [String: RetrySettings] = [:]
    /// Certainly unprocessed resends of one job in a row, with no other job answered between them, before its
    /// destination counts as down.
    public var unprocessedResendsBeforeOutage = 3
    /// Resends of one job after the provider refused its credential unprocessed (each after a refresh) before the
    /// credential counts as refused and the app pauses: they spend no attempt, so they need a bound of their own.
    public var refreshResendsBeforePause = 3
    public var recordRetryMilliseconds = 250
    public var claimRetryMilliseconds = 500
    public var emptyClaimBackoff = ClaimBackoff(initialMilliseconds: 2, maxMilliseconds: 200)
    /// Idempotency window (`worker.idempotency_window_seconds`), 0 when off.
    public var idempotencyWindowMilliseconds: Int64 = 0
    /// How far ahead a job's `deliver_at` may lie (`worker.max_schedule_days`).
    public var maxScheduleMilliseconds: Int64 = 365 * 86_400_000
    /// Rate budgets; with none set the core checks nothing.
    public var budgets = Configuration.BudgetSettings()
    /// Prefix of the ids made for jobs that name none.
    public var idPrefix = String(UInt64.random(in: 0...UInt64.max) & 0xFFFF_FFFF_FFFF, radix: 36)
    /// The providers, in `Platform.allCases` order (the configuration's): intake, metrics and pauses ask them.
    public var providers: [any PushProvider.Type] = []

    public init(workerID: String) { self.workerID = workerID }

    /// `worker.max_in_flight` is per process: each of `loops` event loops gets an equal share of it (at
    /// least 1), and a claim never asks for more than that share.
    public init(configuration: Configuration, workerID: String, loops: Int = 1) {
        self.workerID = workerID
        let share = max(1, configuration.worker.maxInFlight / max(1, loops))
        maxInFlight = share
        claimBatch = max(1, min(configuration.worker.claimBatch, share))
        flushIntervalMilliseconds = configuration.worker.flushIntervalMs
        idempotencyWindowMilliseconds = Int64(configuration.worker.idempotencyWindowSeconds) * 1000
        maxScheduleMilliseconds = Int64(configuration.worker.maxScheduleDays) * 86_400_000
        retry = configuration.retry
        providers = configuration.providers
        queueRetry = configuration.shardQueueRetry
        budgets = configuration.budgets
    }
}

/// The worker's decisions, free of I/O: how many jobs to claim, what to send, what to record, when to pause a
/// destination and send one probe, resends and attempts, back-pressure from a full pool, and the shutdown
/// drain. It takes events (claimed jobs, answers, recorded batches, ticks of its clock) and returns actions
/// (`takeActions`); time comes from an injected clock, so tests run every path in process, in milliseconds.
///
/// Loop-confined like its driver: every call on one thread.
public final class DeliveryCore {
    public enum Phase: Equatable, Sendable { case idle, running, draining, stopped }

    public private(set) var phase = Phase.idle
    public private(set) var counters = PipelineCounters()
    /// Per app, outcome, status and reason, for `/metrics` (fixed arrays: no allocation per job).
    public let metrics: DeliveryMetrics
    /// Jobs claimed and not yet recorded (the bound), including a claim's reserved room.
    public private(set) var inFlight = 0

    let settings: DeliverySettings
    let clock: DeliveryClock
    let policy: OutcomePolicy
    /// The policies of queues with their own retry settings; every other queue's jobs follow `policy`.
    private let queuePolicies: [String: OutcomePolicy]
    private let intake: JobIntake
    private let builder: CompletionBuilder
    private let apps: [Configuration.AppSettings]

    private var actions: [DeliveryAction] = []
    private var outgoing: [JobAttempt] = []
    private var gates: [Destination: DestinationGate] = [:]
    /// Jobs a full pool pushed back, sent again as answers free room.
    private var backlog: [JobAttempt] = []
    private var claims: ClaimState
    private var records = RecordState()
    /// Jobs of this claim waiting to ask about their ids (idempotency), and asks that failed, due again.
    private var onceWaiting: [JobAttempt] = []
    private var onceAgain: [(at: UInt64, batch: OnceBatch)] = []
    private var onceWarnings = WarningThrottle(seconds: 10)
    /// A provider that keeps answering an absurd `Retry-After` is reported every 10 s, not on every answer.
    private var retryAfterWarnings = WarningThrottle(seconds: 10)
    /// Nil when every budget is off: then no job is looked at for budgets.
    private let budgets: Budgets?
    /// Jobs of this claim (or idempotency answer) waiting to ask about their budgets, and asks that failed, due again.
    private var budgetWaiting: (jobs: [JobAttempt], limits: [[BudgetLimit]], kinds: [[BudgetKind]]) = ([], [], [])
    private var budgetAgain: [(at: UInt64, batch: BudgetBatch)] = []
    /// Jobs a budget held for a slot at most `pacedInMemoryMilliseconds` away: they wait here (monotonic ns) rather
    /// than in the retry set, with no `retrying` entry, so a budget near or above what the worker can send costs
    /// nothing (issue 54: budgets of 50,000/s wrote 78-179 entries per job).
    private var pacedHere: [(at: UInt64, job: JobAttempt)] = []
    static let pacedInMemoryMilliseconds: Int64 = 50
    /// The latest time (wall ms) this core has parked a job for in its budget slot: until then an empty claim
    /// backs off at most `pacedClaimMilliseconds`, so jobs coming back in their slots are taken in them.
    private var pacedUntil: Int64 = 0
    static let pacedClaimMilliseconds = 5
    static let pacedGraceMilliseconds: Int64 = 20
    private var shutdownAt: UInt64?
    private var idCounter: UInt64 = 0
    private var claimWarnings = WarningThrottle(seconds: 30)
    private var recordWarnings = WarningThrottle(seconds: 10)

    /// Claiming: one claim at a time, with back-off after empty or failed ones.
    private struct ClaimState {
        var outstanding = false
        /// No claim before this monotonic time.
        var notBefore: UInt64?
        var backoff: ClaimBackoff
    }

    /// Recording: completions wait for a batch, batches in flight, failed batches waiting to go again.
    private struct RecordState {
        var pending: [JobCompletion] = []
        /// The result entries of `pending`: more than one per job for a many-token send.
        var pendingEntries = 0
        var flushAt: UInt64?
        /// Batches sent and not yet answered, plus failed ones waiting in `again`.
        var outstanding = 0
        var again: [(at: UInt64, batch: RecordBatch)] = []
        var nextID = 0
    }

    public init(settings: DeliverySettings, apps: [Configuration.AppSettings], clock: DeliveryClock,
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.settings = settings
        self.apps = apps
        self.clock = clock
        policy = OutcomePolicy(settings: settings.retry, random: random)
        queuePolicies = settings.queueRetry.mapValues { OutcomePolicy(settings: $0, random: random) }
        intake = JobIntake(directory: AppDirectory(apps), providers: settings.providers, maxScheduleMilliseconds: settings.maxScheduleMilliseconds)
        builder = CompletionBuilder(workerID: settings.workerID)
        claims = ClaimState(backoff: settings.emptyClaimBackoff)
        budgets = settings.budgets.anyOn ? Budgets(settings: settings.budgets, appCount: apps.count) : nil
        metrics = DeliveryMetrics(appNames: apps.map(\.name),
                                  appEnvironments: apps.map { settings.providers.provider(for: $0.platform).environments(of: $0) },
                                  appPlatforms: apps.map(\.platform),
                                  reasonNames: DeliveryMetrics.reasonNames(of: settings.providers))
    }

    /// Destinations paused now, for `/metrics` and the dashboard.
    public var pausedDestinations: [PausedDestination] {
        let now = clock.monotonicNanos
        return gates.values.compactMap { gate in
            // Between outage pauses, until an answer proves it reachable again, a destination still counts as down
            // (issue 52: with nothing to probe it, `HeraldAppPaused` cleared while the service was still down).
            let paused = gate.isPaused(at: now)
            let unreachable = !paused && gate.consecutiveOutages > 0
            guard paused || unreachable else { return nil }
            // A gate reloading its credential has no running pause; it paused for the credential.
            return PausedDestination(app: apps[gate.destination.app].name, environment: gate.destination.pauseLabel,
                                     kind: unreachable ? "\(DestinationGate.PauseKind.outage)" : gate.pause.map { "\($0.kind)" } ?? "credential")
        }
    }

    /// The actions produced since the last call, oldest first.
    public func takeActions() -> [DeliveryAction] {
        flushOutgoing()
        if actions.isEmpty { return [] }
        let taken = actions
        actions.removeAll(keepingCapacity: true)
        return taken
    }

    /// When the core next wants `tick()` (monotonic nanoseconds), or nil when only events can move it.
    public var nextWake: UInt64? {
        guard phase != .stopped else { return nil }
        var wake: UInt64? = nil
        func consider(_ time: UInt64?) { if let time, wake == nil || time < wake! { wake = time } }
        if phase == .running && !claims.outstanding { consider(claims.notBefore) }
        consider(records.flushAt)
        for entry in records.again { consider(entry.at) }
        for entry in onceAgain { consider(entry.at) }
        for entry in budgetAgain { consider(entry.at) }
        for entry in pacedHere { consider(entry.at) }
        for gate in gates.values { consider(gate.pause?.until) }
        consider(shutdownAt)
        return wake
    }

    /// Jobs waiting in memory for a pool with room (back-pressure), for tests and the progress line.
    public var backlogCount: Int { backlog.count }

    // MARK: life cycle

    public func start() {
        guard phase == .idle else { return }
        phase = .running
        settle()
    }

    /// Stops claiming; in-flight jobs finish until `deadlineSeconds`, then `drained` is emitted. `forReload`: the
    /// drain before a SIGHUP's new configuration takes over, which its log line says (not a shutdown's words).
    public func shutdown(deadlineSeconds: Int, forReload: Bool = false) {
        guard phase == .running || phase == .idle else { return }
        let wasIdle = phase == .idle
        phase = .draining
        claims.notBefore = nil
        if wasIdle { return finish() }
        log(.info, forReload ? "draining for a reload" : "draining", ["in_flight": .int(inFlight), "deadline_s": .int(deadlineSeconds)])
        shutdownAt = clock.monotonicNanos &+ UInt64(max(0, deadlineSeconds)) * 1_000_000_000
        settle()
    }

    /// Time passed: batches due, pauses ended, the claim back-off over, the shutdown deadline reached.
    public func tick() {
        let now = clock.monotonicNanos
        if phase == .draining, let deadline = shutdownAt, now >= deadline {
            log(.warning, "shutdown deadline reached; returning unfinished jobs to the queue", ["in_flight": .int(inFlight)])
            return finish()
        }
        guard phase != .stopped else { return }
        if let at = records.flushAt, now >= at { flush() }
        if !records.again.isEmpty {
            let due = records.again.filter { $0.at <= now }
            records.again.removeAll { $0.at <= now }
            for entry in due { actions.append(.record(entry.batch)) }
        }
        if !onceAgain.isEmpty {
            let due = onceAgain.filter { $0.at <= now }
            onceAgain.removeAll { $0.at <= now }
            for entry in due { actions.append(.claimOnce(entry.batch)) }
        }
        if !budgetAgain.isEmpty {
            let due = budgetAgain.filter { $0.at <= now }
            budgetAgain.removeAll { $0.at <= now }
            for entry in due { actions.append(.checkBudgets(entry.batch)) }
        }
        if !pacedHere.isEmpty {
            let due = pacedHere.filter { $0.at <= now }
            pacedHere.removeAll { $0.at <= now }
            for entry in due { dispatch(entry.job) }
        }
        for gate in gates.values { endPause(gate, now: now) }
        settle()
    }

    private func finish() {
        guard phase == .draining else { return }
        phase = .stopped
        shutdownAt = nil
        records.flushAt = nil
        outgoing.removeAll()
        backlog.removeAll()
        onceAgain.removeAll()
        budgetAgain.removeAll()
        pacedHere.removeAll()
        // Results waiting to be written again after a failure go out with the pending ones: dropping them would
        // return delivered jobs to the queue and send them twice. A repeat among them makes the batch a repeat
        // (which only turns off the lease-lost recovery).
        let retried = records.again.flatMap(\.batch.completions)
        let isRepeat = records.again.contains { $0.batch.isRepeat }
        records.again.removeAll()
        var final: RecordBatch? = nil
        if !records.pending.isEmpty || !retried.isEmpty {
            final = RecordBatch(id: nextBatchID(), completions: retried + records.pending, isRepeat: isRepeat)
            records.pending.removeAll()
        }
        actions.append(.drained(final: final))
    }

    private func checkDrained() {
        if phase == .draining, inFlight == 0, records.pending.isEmpty, records.outstanding == 0 { finish() }
    }

    /// After every event: queued sends become one action, claims go on if there is room.
    private func settle() {
        pump()
        checkDrained()
    }

    // MARK: claiming

    private var claimThreshold: Int { max(1, min(settings.claimBatch, settings.maxInFlight / 2)) }

    /// Claims more when there is room for a batch and some destination can take jobs; one claim at a time.
    private func pump() {
        guard phase == .running, !claims.outstanding else { return }
        let now = clock.monotonicNanos
        if let notBefore = claims.notBefore {
            guard now >= notBefore else { return }
            claims.notBefore = nil
        }
        // Every destination seen is paused (an outage, a refused key): leave the jobs in Redis until one resumes.
        if !gates.isEmpty, gates.values.allSatisfy({ $0.isPaused(at: now) }) { return }
        let room = settings.maxInFlight - inFlight
        guard room >= claimThreshold || (inFlight == 0 && room > 0) else { return }
        let count = min(room, settings.claimBatch)
        claims.outstanding = true
        inFlight += count
        actions.append(.claim(count))
    }

    public func claimed(_ leases: [Lease], requested: Int) {
        claims.outstanding = false
        inFlight -= requested - leases.count
        counters.claimed += leases.count
        let now = clock.monotonicNanos
        let handedBackBefore = counters.handedBack
        for lease in leases { admit(lease, now: now) }
        if !onceWaiting.isEmpty {
            actions.append(.claimOnce(OnceBatch(jobs: onceWaiting)))
            onceWaiting = []
        }
        askBudgets()
        // A claim whose every job went straight back (an outage pause here) counts as empty for the back-off: a
        // worker with another destination still up would otherwise take the same jobs again and again.
        var delay = claims.backoff.next(claimed: leases.count - (counters.handedBack - handedBackBefore))
        if budgets != nil, delay > Self.pacedClaimMilliseconds, clock.wallMillis < pacedUntil { delay = Self.pacedClaimMilliseconds }
        if delay > 0 { claims.notBefore = now &+ UInt64(delay) * 1_000_000 }
        settle()
    }

    public func claimFailed(_ failure: JobSourceFailure, requested: Int) {
        claims.outstanding = false
        inFlight -= requested
        let now = clock.monotonicNanos
        if !failure.closed {
            if claimWarnings.allow(now: now) { log(.warning, "claim failed; retrying", ["error": .string(failure.description)]) }
            claims.notBefore = now &+ UInt64(settings.claimRetryMilliseconds) * 1_000_000
        }
        settle()
    }

    private func admit(_ lease: Lease, now: UInt64) {
        switch intake.admit(lease, claimedAt: now, wallMillis: clock.wallMillis, makeID: nextJobID) {
        case .rejected(let id, let reason, let spec, let read, let app):
            counters.rejected += 1
            var fields: [String: LogValue] = ["id": .string(id), "reason": .string(reason)]
            let trace = spec?.traceparent ?? JobParser.readableTraceparent(lease.job)
            if let trace { fields["traceparent"] = .string(trace) }
            log(.info, "job rejected", fields)
            let completion = builder.rejected(lease, id: id, reason: reason, spec: spec, fields: read, app: app, traceparent: trace, wallMillis: clock.wallMillis)
            // Under the platform its result entry names; `unknown` when it names none (the job's cannot be told).
            metrics.job(completion.result?.platform.flatMap(Platform.init(rawValue:)), app: app.flatMap { name in apps.firstIndex { $0.name == name } }, .rejected)
            record(completion)
        case .accepted(let job):
            if settings.idempotencyWindowMilliseconds > 0 && job.hasProducerID {
                // The producer's own copy: Redis decides which copy of the id sends. A job back from the retry
                // set (a retry, a scheduled job, a multicast token) was decided before; it only ends the key.
                if lease.raw.count == lease.job.count { return onceWaiting.append(job) }
                job.onceExpect = .pending
            }
            proceed(job)
        }
    }

    /// An accepted job that may be sent: scheduled, fanned out, expired or sent.
    private func proceed(_ job: JobAttempt) {
        // Past its own deadline before it was ever sent (e.g. `expiration: 1000`): Apple would treat it as
        // "send once"; the producer said it is worthless by now.
        let wall = clock.wallMillis
        let expired = policy.wouldExpire(job.notification.expiration, atMilliseconds: max(wall, job.deliverAt ?? wall))
        // Scheduled delivery: the job waits in Redis (the retry set, moved back by the scheduler) until it is due.
        // A validate-only job is checked now, not at its time.
        if let deliverAt = job.deliverAt, deliverAt > wall, !expired, !job.validateOnly {
            counters.scheduled += 1
            metrics.scheduled()
            return record(builder.scheduled(job, at: deliverAt))
        }
        // Multicast: one job per token, made in Redis with this lease's release, claimed in ordinary batches; so
        // 10,000 tokens cost this worker one slot now and ordinary claims later. Each token then expires alone.
        if let multicast = job.multicast {
            counters.multicast += 1
            counters.fannedOut += multicast.tokens.count
            return record(builder.expanded(job, multicast))
        }
        if expired { return finishJob(job, .fail(reason: "Expired"), answer: nil) }
        // Validate only: every local check has passed; a platform with a dry run of its own (FCM) is asked it, the
        // others end here, never sent.
        if job.validateOnly && !job.platform.hasDryRun { return finishJob(job, .delivered, answer: nil) }
        if job.firstAttemptAt == nil { job.firstAttemptAt = wall }
        // A job its budgets already paced (back from the retry set at its reserved time) is not charged again,
        // unless it comes back later than `pacedGraceMilliseconds` after its slot: sent then, it would go in a
        // burst with the jobs of later slots, so it takes a new slot instead. Late by Redis's clock, which set the
        // slot: the worker's own may be off.
        if let budgets, job.lease.pacedAt.map({ (job.lease.claimedAtRedisMillis ?? wall) - $0 > Self.pacedGraceMilliseconds }) ?? true {
            let (limits, kinds) = budgets.limits(for: job)
            if !limits.isEmpty {
                budgetWaiting.jobs.append(job)
                budgetWaiting.limits.append(limits)
                budgetWaiting.kinds.append(kinds)
                return
            }
        }
        dispatch(job)
    }

    /// The jobs gathered from one claim (or one idempotency answer) ask about their budgets in one call.
    private func askBudgets() {
        guard !budgetWaiting.jobs.isEmpty else { return }
        actions.append(.checkBudgets(BudgetBatch(jobs: budgetWaiting.jobs, limits: budgetWaiting.limits, kinds: budgetWaiting.kinds)))
        budgetWaiting = ([], [], [])
    }

    /// Redis's word on a batch's budgets: a job allowed now is sent, one over budget waits in the retry set until
    /// the time its budgets reserved for it, with no attempt spent (`RateLimited:<budget>`).
    public func budgetsChecked(_ batch: BudgetBatch, _ result: Result<[BudgetVerdict], JobSourceFailure>) {
        guard phase != .stopped else { return }
        switch result {
        case .failure(let failure):
            if let at = againAfter(failure, "could not check budgets; will retry", jobs: batch.jobs.count) { budgetAgain.append((at, batch)) }
        case .success(let verdicts):
            for (index, (job, verdict)) in zip(batch.jobs, verdicts).enumerated() {
                switch verdict {
                case .allowed:
                    dispatch(job)
                case .held(let at, let limit):
                    counters.budgetHeld += 1
                    // Redis's clock now, from the claim's reading of it: the slot was set on that clock.
                    let now = clock.monotonicNanos
                    let redisNow = job.lease.claimedAtRedisMillis.map { $0 + Int64((now &- job.claimedAt) / 1_000_000) } ?? clock.wallMillis
                    if at - redisNow <= Self.pacedInMemoryMilliseconds {
                        pacedHere.append((now &+ UInt64(max(0, at - redisNow)) * 1_000_000, job))
                        continue
                    }
                    let kinds = batch.kinds[index]
                    let reason = "RateLimited:" + (limit < kinds.count ? kinds[limit] : .app).rawValue
                    if policy.wouldExpire(job.notification.expiration, atMilliseconds: at) {
                        finishJob(job, .fail(reason: "Expired (\(reason))"), answer: nil)
                        continue
                    }
                    pacedUntil = max(pacedUntil, at)
                    recordRetrying(job, builder.retry(job, dueAt: at, attempt: job.attempt, reason: reason, now: clock.monotonicNanos, paced: true))
                }
            }
        }
        settle()
    }

    /// Each app's per-second budget as it is now (0: none), for `herald_budget_app_per_second`.
    public var budgetAppPerSecond: [Int] { budgets?.appRates.map { Int($0.current.rounded()) } ?? [Int](repeating: 0, count: apps.count) }

    /// A check Redis did not answer (idempotency, budgets): logged (throttled) and due again after
    /// `recordRetryMilliseconds`. Nil for a source closed on purpose (shutdown): the jobs stay leased and go back
    /// with the rest.
    private func againAfter(_ failure: JobSourceFailure, _ message: String, jobs: Int) -> UInt64? {
        guard !failure.closed else { return nil }
        let now = clock.monotonicNanos
        if onceWarnings.allow(now: now) { log(.warning, message, ["error": .string(failure.description), "jobs": .int(jobs)]) }
        return now &+ UInt64(settings.recordRetryMilliseconds) * 1_000_000
    }

    /// Redis's word on a claim's job ids: the copy that holds its id goes on, a duplicate ends here.
    public func onceChecked(_ batch: OnceBatch, _ result: Result<[OnceVerdict], JobSourceFailure>) {
        guard phase != .stopped else { return }
        switch result {
        case .failure(let failure):
            if let at = againAfter(failure, "could not check job ids (idempotency); will retry", jobs: batch.jobs.count) { onceAgain.append((at, batch)) }
        case .success(let verdicts):
            for (job, verdict) in zip(batch.jobs, verdicts) {
                switch verdict {
                case .claimed:
                    job.onceExpect = .lease
                    proceed(job)
                case .unguarded:
                    // Named by the job source's log line (the key and its type); counted here.
                    metrics.unguarded()
                    proceed(job)
                case .duplicate:
                    counters.duplicates += 1
                    metrics.job(job.platform, app: job.destination.app, .duplicate)
                    record(builder.duplicate(job, now: clock.monotonicNanos))
                }
            }
            askBudgets()
        }
        settle()
    }

    private func nextJobID() -> String {
        idCounter &+= 1
        return "\(settings.idPrefix)-\(idCounter)"
    }

    // MARK: sending

    private func gate(for destination: Destination) -> DestinationGate {
        if let gate = gates[destination] { return gate }
        let gate = DestinationGate(destination)
        gates[destination] = gate
        return gate
    }

    /// Sends the job now, holds it behind its destination's probe, or parks it while the destination is paused.
    private func dispatch(_ job: JobAttempt) {
        guard phase != .stopped else { return }
        let gate = gate(for: job.destination)
        switch gate.admit(job, now: clock.monotonicNanos) {
        case .send:
            if gate.probe === job { actions.append(.connectNow(job.destination)) }
            job.sentAt = clock.monotonicNanos
            job.resendCause = nil
            outgoing.append(job)
        case .paused: park(job, gate, after: job.resendCause)
        case .waitForProbe: break
        }
    }

    private func flushOutgoing() {
        guard !outgoing.isEmpty else { return }
        actions.append(.send(outgoing))
        outgoing = []
    }

    /// The pool pushed back: these jobs wait in memory (still in flight) and go again as answers free room.
    public func refused(_ jobs: [JobAttempt]) {
        for job in jobs { gates[job.destination]?.withdraw(job) }
        backlog.append(contentsOf: jobs)
        settle()
    }

    /// No client could be set up for the job's destination: pause it like a refused credential.
    public func unavailable(_ job: JobAttempt, reason: String) {
        let gate = gate(for: job.destination)
        gate.withdraw(job)
        pause(gate, .setup, reason: "connection set-up failed: \(reason)", milliseconds: settings.retry.configurationPauseSeconds * 1000)
        park(job, gate)
        releaseWaiting(gate)
        settle()
    }

    /// Sends what the full pool pushed back; the first refusal hands the rest back, so a pool that stays full
    /// costs one refused send per answer, not one per waiting job.
    private func retryBacklog() {
        guard !backlog.isEmpty, phase != .stopped else { return }
        let jobs = backlog
        backlog.removeAll()
        for job in jobs { dispatch(job) }
    }

    // MARK: answers

    public func answered(_ job: JobAttempt, _ outcome: PushOutcome) {
        guard phase != .stopped else { return }
        let gate = gate(for: job.destination)
        metrics.answer(job.platform, outcome.result, afterNanoseconds: clock.monotonicNanos &- job.sentAt)
        let decision = policy(for: job).decide(outcome.result, attempt: job.attempt, expiration: job.notification.expiration,
                                               nowMilliseconds: clock.wallMillis, firstAttemptAtMilliseconds: job.firstAttemptAt)
        var answer: (any ProviderAnswer)? = nil
        if case .answer(let a) = outcome.result { answer = a }
        if outcome.result.isAnswer { job.unprocessedResends = 0 }
        if let budgets, let answer { budgets.answered(app: job.destination.app, status: answer.status, delivered: decision == .delivered) }
        let wasProbe = gate.answered(job, reachedAPNs: outcome.result.isAnswer) { !self.policy.refusesCredential(outcome.result) }
        // Only a retry can have waited a capped Retry-After: a delivered job's answer is not asked again.
        if case .retry = decision, let capped = policy.cappedRetryAfter(outcome.result), retryAfterWarnings.allow(now: clock.monotonicNanos) {
            log(.warning, "Retry-After beyond the retry policy's cap; the cap is waited instead", [
                "app": .string(job.appName), "platform": .string(job.platform.rawValue), "retry_after_ms": .int(Int(clamping: capped.asked)),
                "cap_ms": .int(Int(clamping: capped.cap)), "reason": .string(answer?.reasonName ?? ""),
            ])
        }
        // A provider's word to slow the whole app down (FCM's quota 429, Push Kit's flow control): hold the
        // destination back for the Retry-After, not just this job.
        if let milliseconds = policy.slowDownMilliseconds(outcome.result),
           pause(gate, .throttle, reason: answer?.reasonName ?? "Throttled", milliseconds: milliseconds) {
            counters.throttlePauses += 1
            log(.warning, "\(job.platform.displayName) throttled the app; it is slowed down, its jobs wait in Redis", [
                "app": .string(job.appName), "pause_ms": .int(Int(milliseconds)), "reason": .string(answer?.reasonName ?? "HTTP 429"),
            ])
        }
        // The provider's word that a dropped token may be another environment's (APNs' BadDeviceToken).
        let fallback: ServiceEnvironment? = if case .dropToken = decision, let answer { fallbackEnvironment(job, after: answer) } else { nil }
        switch decision {
        case .dropToken where fallback != nil:
            // Tried once in that environment before it is dropped.
            counters.fallbacks += 1
            metrics.resend(job.platform, .environmentFallback)
            job.attempt += 1
            job.fallBack(to: fallback!)
            dispatch(job)
        case .delivered, .dropToken, .dropChannel, .fail, .retry, .awaitReceipt:
            finishJob(job, decision, answer: answer)
        case .resendNow(_, true) where job.refreshResends + 1 >= settings.refreshResendsBeforePause:
            // The provider keeps refusing fresh credentials: a credential problem, not this job's.
            credentialRefused(job, gate, reason: policy.reasonText(outcome.result) + " after \(job.refreshResends + 1) credential refreshes")
        case .resendNow(let fresh, let refresh):
            counters.resent += 1
            metrics.resend(job.platform, DeliveryMetrics.resendCause(outcome.result))
            // A credential refused before processing sent nothing to the device: no attempt spent.
            if refresh { job.refreshResends += 1 } else { job.attempt += 1 }
            job.resendCause = policy.reasonText(outcome.result)
            if fresh { job.afterConnection = max(job.afterConnection, outcome.connectionID) }
            dispatch(job)
        case .resendUnprocessed:
            if job.processedAnswersAtLastUnprocessed != gate.processedAnswers { job.unprocessedResends = 0 }
            job.processedAnswersAtLastUnprocessed = gate.processedAnswers
            job.unprocessedResends += 1
            if job.unprocessedResends >= settings.unprocessedResendsBeforeOutage {
                outage(gate, job, reason: "NotProcessed: the server processed none of \(job.unprocessedResends) sends")
            } else {
                counters.resent += 1
                metrics.resend(job.platform, .notProcessed)
                job.resendCause = policy.reasonText(outcome.result)
                dispatch(job)
            }
        case .unavailable(let reason):
            outage(gate, job, reason: reason)
        case .deferForConfiguration(let reason):
            credentialRefused(job, gate, reason: reason)
        }
        // After the decision (a credential error or an outage has paused the destination by now).
        if wasProbe || gate.probe == nil { releaseWaiting(gate) }
        retryBacklog()
        settle()
    }

    /// The provider refused the app's credential: the app's destination pauses (no attempt spent) and the job waits.
    private func credentialRefused(_ job: JobAttempt, _ gate: DestinationGate, reason: String) {
        let started = pause(gate, .credential, reason: reason, milliseconds: settings.retry.configurationPauseSeconds * 1000)
        if started {
            log(.error, "app paused: credential rejected", [
                "app": .string(job.appName), "environment": .string(job.destination.environmentLabel),
                "reason": .string(reason), "pause_s": .int(Int(settings.retry.configurationPauseSeconds)),
                "hint": .string(settings.providers.provider(for: job.destination.platform).credentialHint(reason: reason)),
            ])
        }
        park(job, gate, after: started || gate.pause?.kind == .credential ? nil : reason)
    }

    /// The retry policy of the job's origin queue.
    private func policy(for job: JobAttempt) -> OutcomePolicy { queuePolicies[job.lease.queueKey] ?? policy }


    /// Environment fallback is opt-in per app and happens once per job; the provider says after which answers and
    /// to which of the app's environments.
    private func fallbackEnvironment(_ job: JobAttempt, after answer: any ProviderAnswer) -> ServiceEnvironment? {
        let app = apps[job.destination.app]
        guard app.environmentFallback && job.fallbackFrom == nil else { return nil }
        return settings.providers.provider(for: job.platform).fallbackEnvironment(after: answer, in: job.destination.environment, of: app)
    }

    private func finishJob(_ job: JobAttempt, _ decision: Decision, answer: (any ProviderAnswer)?) {
        let completion = builder.decided(job, decision, answer: answer, now: clock.monotonicNanos, wallMillis: clock.wallMillis)
        // A many-token send counts each token's outcome, as a fanned-out multicast's tokens count.
        let single: JobOutcome = switch decision {
        case .delivered: job.validateOnly ? .validated : .delivered
        case .dropToken: .tokenDropped
        case .dropChannel: .channelDropped
        case .fail: .failed
        case .awaitReceipt: .accepted
        default: .retrying
        }
        let outcomes = job.batchTokens.isEmpty ? [single] : completion.results.map(\.outcome)
        for outcome in outcomes {
            switch outcome {
            case .delivered: counters.delivered += 1
            case .tokenDropped: counters.tokensDropped += 1
            case .channelDropped: counters.channelsDropped += 1
            case .failed: counters.failed += 1
            case .retrying: counters.retrying += 1
            default: break
            }
            metrics.job(job.platform, app: job.destination.app, outcome)
        }
        let outcome = outcomes.first ?? .retrying
        if outcome != .retrying { metrics.jobFinished(job.platform, afterNanoseconds: clock.monotonicNanos &- job.claimedAt) }
        if job.fallbackFrom != nil && outcome != .retrying { metrics.fallbackEnded(app: job.destination.app, resolved: outcome == .delivered) }
        record(completion)
    }

    /// The probe's answer decides for the jobs that waited on it: sent (proven), parked (paused), or the next
    /// one becomes the probe (nothing proven either way).
    private func releaseWaiting(_ gate: DestinationGate) {
        guard gate.probe == nil else { return }
        for job in gate.takeWaiting() { dispatch(job) }
    }

    // MARK: pauses

    /// Starts a pause of `gate` unless one is running; returns whether it started.
    @discardableResult
    private func pause(_ gate: DestinationGate, _ kind: DestinationGate.PauseKind, reason: String, milliseconds: Int64) -> Bool {
        let started = gate.startPause(kind, reason: reason, milliseconds: milliseconds, now: clock.monotonicNanos)
        if started { metrics.destinationPaused() }
        return started
    }

    /// Nothing reaches APNs for this destination: not the job's fault. Pause with back-off; the job waits.
    private func outage(_ gate: DestinationGate, _ job: JobAttempt, reason: String) {
        let milliseconds = policy.outagePauseSeconds(consecutive: gate.consecutiveOutages + 1) * 1000
        let started = pause(gate, .outage, reason: reason, milliseconds: milliseconds)
        if started {
            counters.outagePauses += 1
            // The first pause of an outage at warning level; the longer ones after it at info, not one per job.
            let message = job.destination.platform.rawValue + " unreachable; destination paused, jobs wait in Redis"
            log(gate.consecutiveOutages == 1 ? .warning : .info, message, [
                "app": .string(job.appName), "environment": .string(job.destination.pauseLabel),
                "reason": .string(reason), "pause_ms": .int(Int(milliseconds)), "consecutive": .int(gate.consecutiveOutages),
            ])
        }
        // Met a running outage pause: the same thing happened to it, and the pause's reason says so already.
        park(job, gate, after: started || gate.pause?.kind == .outage ? nil : reason)
    }

    /// Keeps the job in the retry set until its destination's pause ends, with its attempt count unchanged, or
    /// hands it back to its queue at once (`mayHandBack`).
    /// `cause`: what happened to the job's own last send when a pause it did not start holds it (a timeout met
    /// by a quota pause is recorded as both, not as a quota alone).
    private func park(_ job: JobAttempt, _ gate: DestinationGate, after cause: String? = nil) {
        let now = clock.monotonicNanos
        let wall = clock.wallMillis
        var waitMilliseconds: Int64 = 1000
        var reason = "AppPaused: reloading credentials"
        if let pause = gate.pause {
            waitMilliseconds = max(1000, Int64((pause.until > now ? pause.until - now : 0) / 1_000_000))
            reason = (pause.kind == .outage ? "Unavailable: " : pause.kind == .throttle ? "Throttled: " : "AppPaused: ") + pause.reason
        }
        if let cause { reason += " (after \(cause))" }
        // Handed back once a pause; met again within it, the job waits quietly (its `retrying` entry was written
        // when it was handed back: one per job per pause), 1 s, then 2, 4... up to the pause's end.
        var quiet = false
        switch mayHandBack(job, gate) ? gate.handBack(job.id) : .park {
        case .handBack:
            counters.handedBack += 1
            return recordRetrying(job, builder.handedBack(job, reason: reason, now: now, wallMillis: wall))
        case .alreadyHandedBack(let returns):
            quiet = true
            waitMilliseconds = min(waitMilliseconds, 1000 << min(returns - 1, 20))
        case .park:
            break
        }
        let due = wall + waitMilliseconds
        if policy.wouldExpire(job.notification.expiration, atMilliseconds: due) {
            return finishJob(job, .fail(reason: "Expired"), answer: nil)
        }
        var completion = builder.retry(job, dueAt: due, attempt: job.attempt, reason: reason, now: now)
        if quiet {
            completion.results = []
            return record(completion)
        }
        recordRetrying(job, completion)
    }

    /// A job that waits (parked, held by a budget, handed back): counted once per `retrying` entry it writes, as
    /// many as its tokens for a many-token send.
    private func recordRetrying(_ job: JobAttempt, _ completion: JobCompletion) {
        for _ in completion.results {
            counters.retrying += 1
            metrics.job(job.platform, app: job.destination.app, .retrying)
        }
        record(completion)
    }

    /// Issue 30, item 14: an outage pause is this worker's view (its connections, its pool's back-off); another
    /// worker may well reach the destination now. Its jobs go back to the head of their queue instead of waiting
    /// out the pause, with no attempt spent on the hand-back (see `CompletionBuilder.handedBack`). A job sent to
    /// its app's other environment is parked as before (an envelope cannot say which environment it is on).
    /// Credential, set-up and quota pauses hold for every worker alike: their jobs are parked.
    private func mayHandBack(_ job: JobAttempt, _ gate: DestinationGate) -> Bool {
        gate.pause?.kind == .outage && job.fallbackFrom == nil
    }

    private func endPause(_ gate: DestinationGate, now: UInt64) {
        guard let kind = gate.endPauseIfDue(now: now) else { return }
        let app = apps[gate.destination.app].name
        switch kind {
        case .outage, .throttle:
            log(.info, "destination resumed; sending one probe", ["app": .string(app), "environment": .string(gate.destination.pauseLabel)])
        case .credential, .setup:
            // One reload per app even when both of its environments were paused.
            let alreadyAsked = gates.values.contains { $0 !== gate && $0.destination.app == gate.destination.app && $0.reloading }
            if !alreadyAsked { actions.append(.reloadCredentials(app: gate.destination.app)) }
        }
    }

    /// The driver re-read the app's credential: `error` nil when it loaded.
    public func reloaded(app: Int, error: String?) {
        let name = apps[app].name
        for gate in gates.values where gate.destination.app == app {
            let wasReloading = gate.reloading
            gate.reloaded()
            guard wasReloading else { continue }
            if let error {
                pause(gate, .credential, reason: "credential reload failed: \(error)", milliseconds: settings.retry.configurationPauseSeconds * 1000)
                log(.error, "app paused: credential reload failed", ["app": .string(name), "error": .string(error)])
            }
        }
        if error == nil { log(.info, "app resumed", ["app": .string(name)]) }
        settle()
    }

    // MARK: recording

    /// The most result entries one completion batch carries (about 25 script arguments each).
    static let maxEntriesPerBatch = 4096

    /// `consuming`: the completion moves into the batch (a copy retained every string of it and its entries).
    private func record(_ completion: consuming JobCompletion) {
        records.pendingEntries += completion.results.count
        records.pending.append(completion)
        // Bounded in entries too: a batch of 1,000-token sends would otherwise be one script of millions of arguments.
        if records.pending.count >= settings.flushBatch || records.pendingEntries >= Self.maxEntriesPerBatch {
            flush()
        } else if records.flushAt == nil {
            records.flushAt = clock.monotonicNanos &+ UInt64(max(0, settings.flushIntervalMilliseconds)) * 1_000_000
        }
    }

    private func flush() {
        records.flushAt = nil
        guard !records.pending.isEmpty, phase != .stopped else { return }
        let batch = RecordBatch(id: nextBatchID(), completions: records.pending, isRepeat: false)
        records.pending.removeAll(keepingCapacity: true)
        records.pendingEntries = 0
        records.outstanding += 1
        actions.append(.record(batch))
    }

    private func nextBatchID() -> Int {
        records.nextID += 1
        return records.nextID
    }

    public func recorded(_ batch: RecordBatch, _ report: CompletionReport) {
        records.outstanding -= 1
        guard phase != .stopped else { return }
        inFlight -= batch.completions.count
        account(report)
        retryBacklog()
        settle()
    }

    /// A batch failed: it goes again later. Only a lost reply (`maybeApplied`) may have left it applied.
    public func recordFailed(_ batch: RecordBatch, _ failure: JobSourceFailure) {
        guard phase != .stopped else {
            records.outstanding -= 1
            return
        }
        let now = clock.monotonicNanos
        if recordWarnings.allow(now: now) {
            log(.warning, "could not record results; will retry", ["error": .string(failure.description), "jobs": .int(batch.completions.count)])
        }
        let again = RecordBatch(id: batch.id, completions: batch.completions, isRepeat: batch.isRepeat || failure.maybeApplied)
        records.again.append((now &+ UInt64(settings.recordRetryMilliseconds) * 1_000_000, again))
        settle()
    }

    private func account(_ report: CompletionReport) {
        counters.recovered += report.recovered
        if report.forgotten > 0 {
            counters.forgotten += report.forgotten
            log(.warning, "redis lost its data (restarted without persistence?): these outcomes could not be recorded", [
                "jobs": .int(report.forgotten), "hint": .string("run Redis with appendonly yes to keep jobs and results across restarts"),
            ])
        }
        if report.unconfirmed > 0 {
            log(.info, "results re-sent after a lost reply were already recorded", ["jobs": .int(report.unconfirmed)])
        }
        if !report.leasesLost.isEmpty {
            counters.leasesLost += report.leasesLost.count
            log(.warning, "lease lost: jobs were handed to another worker; they may be sent twice", ["leases": .int(report.leasesLost.count)])
        }
    }

    private func log(_ level: LogLevel, _ message: String, _ fields: [String: LogValue]) {
        actions.append(.log(level, message, fields))
    }
}

import ProviderKit
import PushCore
import Reactor
import RedisQueue

/// The worker on one event loop: runs a `DeliveryCore`'s actions against a `JobSource` (Redis) and a
/// `PushSender` (the `ProviderRegistry`), feeds the answers back, and keeps one loop timer at the core's next wake-up.
/// It decides nothing itself; every rule lives in the core, which tests drive without I/O.
///
/// Loop-confined: build it and call it on `loop`'s thread (checked). Redis and APNs I/O share that thread, so a
/// job never hops threads and nothing here takes a lock.
public final class DeliveryPipeline {
    public let loop: EventLoop
    public let workerID: String
    public let core: DeliveryCore
    private let source: JobSource
    private let sender: PushSender
    private let logger: Logger
    private let redisSource: RedisJobSource?
    private var running = false
    private var timer: LoopTimer?
    private var timerDeadline: UInt64 = .max
    private var progressTimer: LoopTimer?
    private var shutdownDone: (() -> Void)?
    /// The drain under way is a reload's (its log lines say so), not a shutdown's.
    private var drainingForReload = false

    /// The production wiring: Redis as the source, every provider's sender behind the registry, the system clock. `loops`: how many
    /// event loops share the process's `worker.max_in_flight`.
    public convenience init(configuration: Configuration, credentials: [AppCredentials], loop: EventLoop, workerID: String,
                            logger: Logger, loops: Int = 1) throws {
        let source = try RedisJobSource(configuration: configuration, loop: loop, workerID: workerID, logger: logger)
        let sender = ProviderRegistry(credentials: credentials, loop: loop, configuration: configuration, logger: logger)
        let core = DeliveryCore(settings: DeliverySettings(configuration: configuration, workerID: workerID, loops: loops),
                                apps: credentials.map(\.app), clock: SystemDeliveryClock())
        self.init(core: core, source: source, sender: sender, loop: loop, logger: logger)
    }

    public init(core: DeliveryCore, source: JobSource, sender: PushSender, loop: EventLoop, logger: Logger) {
        self.core = core
        self.source = source
        self.sender = sender
        self.loop = loop
        self.logger = logger
        self.workerID = core.settings.workerID
        redisSource = source as? RedisJobSource
    }

    public var counters: PipelineCounters { core.counters }

    /// A copy of this loop's metrics with the gauges read now (pools, pauses, Redis), for a scrape.
    public func metricsSnapshot() -> MetricsSnapshot {
        loop.preconditionInLoop()
        var snapshot = core.metrics.values
        snapshot.inFlight = core.inFlight
        snapshot.backlog = core.backlogCount
        snapshot.paused = core.pausedDestinations
        snapshot.budgetAppPerSecond = core.budgetAppPerSecond
        sender.addMetrics(to: &snapshot.provider)
        if let redisSource {
            snapshot.redis = redisSource.redisStats
            snapshot.redisConnected = redisSource.isConnected ? 1 : 0
            snapshot.workersReaped = UInt64(redisSource.workersReaped)
        }
        snapshot.claimingLoops = core.phase == .running ? 1 : 0
        snapshot.drainingLoops = core.phase == .draining ? 1 : 0
        return snapshot
    }
    /// Jobs claimed and not yet recorded.
    public var jobsInFlight: Int { core.inFlight }

    /// Connects and starts; the first claim waits until any leases left under this worker id are returned.
    public func start() {
        loop.preconditionInLoop()
        guard core.phase == .idle else { return }
        redisSource?.open()
        progressTimer = loop.schedule(afterMilliseconds: 30_000) { [weak self] in self?.progress() }
        // A process restarted under the same worker id (systemd, compose) would otherwise leave its
        // predecessor's leases stranded: its own heartbeat keeps the reaper away from them. Return them first.
        source.returnAll { [weak self] result in
            guard let self else { return }
            if case .success(let n) = result, n > 0 {
                self.logger.warning("returned jobs left in flight by an earlier process with this worker id", ["jobs": .int(n)])
            }
            self.core.start()
            self.run()
        }
    }

    /// Stops claiming, lets in-flight requests finish until `deadlineSeconds`, writes their results, returns
    /// every lease still held to its queue, closes connections, then calls `done` (on the loop).
    /// `forReload`: a SIGHUP's drain before the new configuration's pipeline starts; its log lines say so.
    public func shutdown(deadlineSeconds: Int, forReload: Bool = false, done: @escaping () -> Void) {
        loop.preconditionInLoop()
        shutdownDone = done
        drainingForReload = forReload
        core.shutdown(deadlineSeconds: deadlineSeconds, forReload: forReload)
        run()
    }

    private func progress() {
        logger.info("progress", counters.logFields.merging(["in_flight": .int(core.inFlight), "backlog": .int(core.backlogCount)]) { a, _ in a })
        progressTimer = loop.schedule(afterMilliseconds: 30_000) { [weak self] in self?.progress() }
    }

    // MARK: running the core's actions

    /// Runs every action the core has, including those that running them produces. Re-entrant calls (a
    /// completion that runs inside a send) leave their actions to the outer call.
    private func run() {
        guard !running else { return }
        running = true
        while true {
            let actions = core.takeActions()
            if actions.isEmpty { break }
            for action in actions { execute(action) }
        }
        running = false
        armTimer()
    }

    private func execute(_ action: DeliveryAction) {
        switch action {
        case .claim(let count):
            source.claim(max: count) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let leases): self.core.claimed(leases, requested: count)
                case .failure(let failure): self.core.claimFailed(failure, requested: count)
                }
                self.run()
            }
        case .send(let jobs):
            send(jobs)
        case .record(let batch):
            source.record(batch.completions, isRepeat: batch.isRepeat) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let report): self.core.recorded(batch, report)
                case .failure(let failure): self.core.recordFailed(batch, failure)
                }
                self.run()
            }
        case .claimOnce(let batch):
            source.claimOnce(batch.jobs.map { ($0.lease, $0.id) }, windowMilliseconds: core.settings.idempotencyWindowMilliseconds) { [weak self] result in
                guard let self else { return }
                self.core.onceChecked(batch, result)
                self.run()
            }
        case .checkBudgets(let batch):
            source.checkBudgets(Array(zip(batch.jobs.map(\.lease), batch.limits))) { [weak self] result in
                guard let self else { return }
                self.core.budgetsChecked(batch, result)
                self.run()
            }
        case .reloadCredentials(let app):
            core.reloaded(app: app, error: sender.reloadCredentials(app: app))
        case .connectNow(let destination):
            sender.connectNow(to: destination)
        case .log(let level, let message, let fields):
            logger.log(level, message, fields)
        case .drained(let final):
            finish(final)
        }
    }

    private func send(_ jobs: [JobAttempt]) {
        for (index, job) in jobs.enumerated() {
            let admission = sender.send(job.notification, to: job.destination, afterConnection: job.afterConnection) { [weak self] outcome in
                guard let self else { return }
                self.core.answered(job, outcome)
                self.run()
            }
            switch admission {
            case .accepted:
                continue
            case .refused:
                core.refused(Array(jobs[index...]))
                return
            case .unavailable(let reason):
                core.unavailable(job, reason: reason)
            }
        }
    }

    /// One timer at the core's earliest wake-up; moved only when an earlier one is needed (a timer that fires
    /// early finds nothing due and re-arms), so the hot path does not re-arm per event.
    private func armTimer() {
        guard let wake = core.nextWake else { return }
        if timer != nil, wake >= timerDeadline { return }
        timer?.cancel()
        timerDeadline = wake
        let now = monotonicNanos()
        timer = loop.schedule(afterNanoseconds: wake > now ? wake - now : 0) { [weak self] in
            guard let self else { return }
            self.timer = nil
            self.timerDeadline = .max
            self.core.tick()
            self.run()
        }
    }

    /// Nothing more goes to APNs once leases are being returned: another worker will redo these jobs.
    private func finish(_ final: RecordBatch?) {
        timer?.cancel()
        progressTimer?.cancel()
        sender.closeAll()
        let returnLeases: () -> Void = { [weak self] in
            guard let self else { return }
            self.redisSource?.stopMaintenance()
            self.source.returnAll { result in
                if case .success(let n) = result, n > 0 { self.logger.info("returned unsent jobs to the queue", ["jobs": .int(n)]) }
                if case .failure(let error) = result {
                    self.logger.error("could not return leases (they expire and are reaped)", ["error": .string(error.description)])
                }
                self.redisSource?.close()
                self.logger.info(self.drainingForReload ? "drained for the reload; the new configuration takes over" : "stopped",
                                 self.counters.logFields)
                let done = self.shutdownDone
                self.shutdownDone = nil
                done?()
            }
        }
        guard let final else { return returnLeases() }
        source.record(final.completions, isRepeat: final.isRepeat) { [weak self] result in
            if case .success(let report) = result, report.leasesLost.count > 0 {
                self?.logger.warning("lease lost: jobs were handed to another worker; they may be sent twice", ["leases": .int(report.leasesLost.count)])
            }
            returnLeases()
        }
    }
}

/// The real clocks: CLOCK_MONOTONIC for deadlines, the wall clock for due times and expirations.
public final class SystemDeliveryClock: DeliveryClock {
    public init() {}
    public var monotonicNanos: UInt64 { Reactor.monotonicNanos() }
    public var wallMillis: Int64 { wallClockMillis() }
}

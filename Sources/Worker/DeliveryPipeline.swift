import APNs
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
public final class DeliveryPipeline {
    public let loop: EventLoop
    public let workerID: String
    public private(set) var counters = PipelineCounters()
    let configuration: Configuration
    let logger: Logger
    private let redis: RedisConnection
    private let queue: JobQueue
    private let directory: AppDirectory
    private var slots: [AppSlot]
    private let policy: OutcomePolicy
    private var backoff = ClaimBackoff()

    private enum Phase { case idle, running, draining, stopped }
    private var phase = Phase.idle
    /// Jobs claimed and not yet recorded in Redis (the bound), including reserved claim slots.
    private var inFlight = 0
    private var claiming = false
    private var claimTimer: LoopTimer?
    private var pending: [JobCompletion] = []
    private var flushTimer: LoopTimer?
    private var flushesOutstanding = 0
    /// Repeating timers (heartbeat, reaper, progress), each re-armed in its slot.
    private var timers: [LoopTimer] = []
    private var retryTimer: LoopTimer?
    /// Jobs the pool pushed back (its queue was full); sent again as answers free room.
    private var backlog: [JobAttempt] = []
    private var idPrefix: String
    private var idCounter: UInt64 = 0
    private var shutdownDone: (() -> Void)?
    private var shutdownDeadline: LoopTimer?

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
        var lastWarning: UInt64 = 0
        redis.onStateChange = { [weak self] state in
            guard let self else { return }
            switch state {
            case .connected:
                self.logger.info("redis connected", ["url": .string(self.redis.url.description), "failed_attempts": .int(failedAttempts)])
                connected = true
                failedAttempts = 0
            case .disconnected(let reason, let retry):
                failedAttempts += 1
                let now = monotonicNanos()
                if connected || failedAttempts == 1 || now &- lastWarning >= 30_000_000_000 {
                    self.logger.warning(connected ? "redis connection lost" : "redis unavailable; retrying", [
                        "reason": .string(reason), "retry_in_ms": .int(retry), "failed_attempts": .int(failedAttempts),
                        "url": .string(self.redis.url.description),
                    ])
                    lastWarning = now
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
        pump()
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

    private func checkDrained() {
        guard phase == .draining else { return }
        if inFlight == 0 && pending.isEmpty && flushesOutstanding == 0 { finishShutdown() }
    }

    private func finishShutdown() {
        guard phase == .draining else { return }
        phase = .stopped
        shutdownDeadline?.cancel()
        for timer in timers { timer.cancel() }
        retryTimer?.cancel()
        flushTimer?.cancel()
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

    private func repeatEvery(milliseconds: Int, _ body: @escaping () -> Void) {
        timers.append(loop.schedule(afterMilliseconds: 0) {})
        rearm(index: timers.count - 1, milliseconds: milliseconds, body)
    }

    private func rearm(index: Int, milliseconds: Int, _ body: @escaping () -> Void) {
        timers[index] = loop.schedule(afterMilliseconds: milliseconds) { [weak self] in
            guard let self, self.phase == .running || self.phase == .draining else { return }
            body()
            self.rearm(index: index, milliseconds: milliseconds, body)
        }
    }

    private func scheduleRetryPass(after ms: Int) {
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

    private var claimThreshold: Int { max(1, min(configuration.worker.claimBatch, configuration.worker.maxInFlight / 2)) }

    /// Claims more when there is room for a batch; one claim at a time.
    private func pump() {
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
                if error != .closed { self.claimLater(500) }
                self.checkDrained()
            }
        }
    }

    private func claimLater(_ ms: Int) {
        claimTimer = loop.schedule(afterMilliseconds: ms) { [weak self] in
            self?.claimTimer = nil
            self?.pump()
        }
    }

    private func nextJobID() -> String {
        idCounter &+= 1
        return "\(idPrefix)-\(idCounter)"
    }

    // MARK: per job

    private func process(_ lease: Lease, claimedAt: UInt64) {
        let spec: JobSpec
        do {
            spec = try JobParser.parse(lease.job)
        } catch {
            reject(lease, id: lease.jobID ?? nextJobID(), reason: "\(error.code): \(error.description)", spec: nil, app: nil)
            return
        }
        let id = spec.id ?? lease.jobID ?? nextJobID()
        let index: Int
        do {
            index = try directory.index(app: spec.app, topic: spec.topic)
        } catch {
            reject(lease, id: id, reason: "UnknownApp: \(error.description)", spec: spec, app: spec.app)
            return
        }
        let slot = slots[index]
        let app = slot.settings
        let environment = spec.environment ?? APNsEnvironment(rawValue: app.defaultEnvironment) ?? .production
        guard app.environments.contains(environment.rawValue) else {
            reject(lease, id: id, reason: "BadEnvironment: app '\(app.name)' is not configured for \(environment.rawValue)", spec: spec, app: app.name)
            return
        }
        let topic: String
        if let given = spec.topic {
            topic = given
        } else if let derived = spec.pushType.topic(forBundleID: app.bundleID) {
            topic = derived
        } else {
            reject(lease, id: id, reason: "MissingTopic: push type \(spec.pushType.rawValue) needs an explicit topic", spec: spec, app: app.name)
            return
        }
        let notification = spec.notification(topic: topic, environment: environment)
        if let failure = NotificationValidator.validate(notification, bundleID: spec.pushType == .mdm ? nil : app.bundleID) {
            reject(lease, id: id, reason: "\(failure.reason.rawValue): \(failure.message)", spec: spec, app: app.name)
            return
        }
        let job = JobAttempt(lease: lease, id: id, appIndex: index, notification: notification, claimedAt: claimedAt)
        send(job)
    }

    private func send(_ job: JobAttempt, gated: Bool = true) {
        let slot = slots[job.appIndex]
        if slot.isPaused {
            deferJob(job, reason: slot.pauseReason, until: slot.pausedUntil)
            return
        }
        if gated, !slot.credentialProven, let probe = slot.probe, probe !== job {
            slot.waitingForProbe.append(job)
            return
        }
        let client: APNsClient
        do {
            client = try slot.client(for: job.notification.environment, loop: loop, apns: configuration.apns) { [weak self] event in
                self?.logPoolEvent(event, app: slot.settings.name)
            }
        } catch {
            pauseApp(slot, reason: "connection set-up failed: \(error)")
            deferJob(job, reason: slot.pauseReason, until: slot.pausedUntil)
            return
        }
        if gated, !slot.credentialProven, slot.probe == nil { slot.probe = job }
        let accepted = client.send(job.notification, afterConnection: job.afterConnection) { [weak self] outcome in
            self?.handle(job, outcome: outcome, client: client)
        }
        if !accepted {
            if slot.probe === job { slot.probe = nil }
            backlog.append(job)
        }
    }

    /// The probe's answer decides for the jobs that waited on it: sent (credential works), deferred (the app
    /// is now paused), or the next one becomes the probe (no answer from APNs).
    private func releaseWaiting(_ slot: AppSlot, gated: Bool) {
        let jobs = slot.waitingForProbe
        slot.waitingForProbe.removeAll()
        for job in jobs { send(job, gated: gated) }
    }

    private func handle(_ job: JobAttempt, outcome: APNsClient.Outcome, client: APNsClient) {
        client.handleConnectionAdvice(outcome, advice: policy.connectionAdvice(outcome.result))
        let now = wallClockMillis()
        let decision = policy.decide(outcome.result, attempt: job.attempt, expiration: job.notification.expiration, nowSeconds: now / 1000)
        let slot = slots[job.appIndex]
        var answeredProbe: Bool? = nil
        if slot.probe === job {
            slot.probe = nil
            if case .response = outcome.result {
                answeredProbe = true
                if case .deferForConfiguration = decision {} else { slot.credentialProven = true }
            } else {
                answeredProbe = false
            }
        }
        defer {
            // After the decision (a credential error has paused the app by now). Without an answer the probe
            // proved nothing: the waiting jobs then go on their own rather than queue behind each other's
            // connection failures.
            if let answeredProbe, slot.probe == nil, !slot.waitingForProbe.isEmpty { releaseWaiting(slot, gated: answeredProbe) }
        }
        var status = 0
        var apnsID: String? = nil
        var uniqueID: String? = nil
        if case .response(let response) = outcome.result {
            status = response.status
            apnsID = response.apnsID
            uniqueID = response.apnsUniqueID
        }
        var entry = ResultEntry(
            id: job.id, outcome: .delivered, status: status, token: job.notification.deviceToken, topic: job.notification.topic,
            environment: job.notification.environment.rawValue, app: slots[job.appIndex].settings.name, apnsID: apnsID,
            apnsUniqueID: uniqueID, attempt: job.attempt, latencyMilliseconds: job.latencyMilliseconds, worker: workerID)
        var completion = JobCompletion(lease: job.lease)
        switch decision {
        case .delivered:
            counters.delivered += 1
        case .dropToken(let invalidSince, let reason):
            entry.outcome = .tokenDropped
            entry.reason = reason
            entry.invalidSince = invalidSince
            completion.droppedToken = DroppedToken(
                token: job.notification.deviceToken, topic: job.notification.topic,
                environment: job.notification.environment.rawValue, reason: reason, invalidSince: invalidSince)
            counters.tokensDropped += 1
        case .fail(let reason):
            entry.outcome = .failed
            entry.reason = reason
            counters.failed += 1
        case .retry(let ms, let reason):
            entry.outcome = .retrying
            entry.reason = reason
            entry.retryAt = now + ms
            completion.retry = (now + ms, JobEnvelope.wrap(job: job.lease.job, attempt: job.attempt + 1, id: job.id, queue: job.lease.queueKey))
            counters.retrying += 1
        case .resendNow(let fresh, _):
            counters.resent += 1
            job.attempt += 1
            if fresh { job.afterConnection = max(job.afterConnection, outcome.connectionID) }
            send(job)
            return
        case .deferForConfiguration(let reason):
            let slot = slots[job.appIndex]
            pauseApp(slot, reason: reason)
            deferJob(job, reason: reason, until: slot.pausedUntil)
            return
        }
        if case .response(let response) = outcome.result, decision != .delivered, entry.reason == nil {
            entry.reason = response.reason?.rawValue
        }
        record(completion, entry: entry)
    }

    /// Keeps the job for later without spending an attempt: the job is not at fault.
    private func deferJob(_ job: JobAttempt, reason: String, until monotonicDeadline: UInt64) {
        let now = wallClockMillis()
        let waitMs = Int64(max(0, Int64(bitPattern: monotonicDeadline &- monotonicNanos()) / 1_000_000))
        let due = now + max(waitMs, 1000)
        var entry = ResultEntry(
            id: job.id, outcome: .retrying, status: 0, reason: "AppPaused: " + reason, token: job.notification.deviceToken,
            topic: job.notification.topic, environment: job.notification.environment.rawValue,
            app: slots[job.appIndex].settings.name, attempt: job.attempt, retryAt: due,
            latencyMilliseconds: job.latencyMilliseconds, worker: workerID)
        entry.status = 0
        var completion = JobCompletion(lease: job.lease)
        completion.retry = (due, JobEnvelope.wrap(job: job.lease.job, attempt: job.attempt, id: job.id, queue: job.lease.queueKey))
        counters.retrying += 1
        record(completion, entry: entry)
    }

    private func pauseApp(_ slot: AppSlot, reason: String) {
        if slot.isPaused { return }
        let seconds = max(1, Int(configuration.retry.configurationPauseSeconds))
        slot.pausedUntil = monotonicNanos() &+ UInt64(seconds) * 1_000_000_000
        slot.pauseReason = reason
        logger.error("app paused: credential rejected", [
            "app": .string(slot.settings.name), "reason": .string(reason), "pause_s": .int(seconds),
            "hint": "check key_id, team_id, key_file, bundle_id and environment (herald check-config)",
        ])
        loop.schedule(afterMilliseconds: seconds * 1000) { [weak self, weak slot] in
            guard let self, let slot, self.phase == .running else { return }
            do {
                try slot.reloadCredentials(apns: self.configuration.apns)
                slot.pausedUntil = 0
                self.logger.info("app resumed", ["app": .string(slot.settings.name)])
            } catch {
                slot.pausedUntil = 0
                self.pauseApp(slot, reason: "credential reload failed: \(error)")
            }
        }
    }

    private func reject(_ lease: Lease, id: String, reason: String, spec: JobSpec?, app: String?) {
        var completion = JobCompletion(lease: lease)
        completion.deadLetter(reason: reason, at: wallClockMillis())
        let entry = ResultEntry(
            id: id, outcome: .rejected, status: 0, reason: reason, token: spec?.token, topic: spec?.topic,
            environment: spec?.environment?.rawValue, app: app, attempt: lease.attempt, latencyMilliseconds: 0, worker: workerID)
        counters.rejected += 1
        logger.info("job rejected", ["id": .string(id), "reason": .string(reason)])
        record(completion, entry: entry)
    }

    // MARK: recording

    private func record(_ completion: JobCompletion, entry: ResultEntry) {
        var completion = completion
        completion.result = entry
        pending.append(completion)
        if pending.count >= 512 {
            flush()
        } else if flushTimer == nil {
            flushTimer = loop.schedule(afterMilliseconds: configuration.worker.flushIntervalMs) { [weak self] in
                self?.flushTimer = nil
                self?.flush()
            }
        }
        retryBacklog()
    }

    private func flush() {
        guard !pending.isEmpty, phase != .stopped else { return }
        let batch = pending
        pending.removeAll(keepingCapacity: true)
        write(batch)
    }

    /// Writes a batch; on a Redis failure writes it again (the lease-lost rule makes a repeat harmless).
    private func write(_ batch: [JobCompletion]) {
        flushesOutstanding += 1
        queue.complete(batch) { [weak self] result in
            guard let self else { return }
            self.flushesOutstanding -= 1
            switch result {
            case .success(let report):
                self.inFlight -= batch.count
                self.account(report)
                self.pump()
                self.checkDrained()
            case .failure(let error):
                guard self.phase != .stopped else { return }
                self.logger.warning("could not record results; will retry", ["error": .string(error.description), "jobs": .int(batch.count)])
                self.flushesOutstanding += 1
                self.loop.schedule(afterMilliseconds: 250) { [weak self] in
                    self?.flushesOutstanding -= 1
                    self?.write(batch)
                }
            }
        }
    }

    private func account(_ report: CompletionReport) {
        counters.recovered += report.recovered
        if !report.leasesLost.isEmpty {
            counters.leasesLost += report.leasesLost.count
            logger.warning("lease lost: jobs were handed to another worker; they may be sent twice", ["leases": .int(report.leasesLost.count)])
        }
    }

    private func retryBacklog() {
        guard !backlog.isEmpty else { return }
        let jobs = backlog
        backlog.removeAll()
        for job in jobs { send(job) }
    }

    private func logPoolEvent(_ event: HTTP2PoolEvent, app: String) {
        switch event {
        case .connection(.connected(let id, let streams)):
            logger.info("apns connected", ["app": .string(app), "connection": .int(id), "max_streams": .int(streams)])
        case .connection(.goaway(let id, let last, let code, let reason)):
            logger.warning("apns goaway", ["app": .string(app), "connection": .int(id), "last_stream": .int(Int(last)),
                                            "error_code": .int(Int(code)), "reason": .string(reason ?? "")])
        case .connection(.closed(let id, let error?)):
            let level: LogLevel = if case .tlsFailed = error { .error } else { .warning }
            logger.log(level, level == .error ? "tls failed" : "apns connection lost", ["app": .string(app), "connection": .int(id), "error": .string(error.description)])
        case .reconnectScheduled(let delay, let failures):
            logger.warning("apns reconnect scheduled", ["app": .string(app), "delay_ms": .int(delay), "failures": .int(failures)])
        default:
            break
        }
    }

    /// Jobs claimed and not yet recorded.
    public var jobsInFlight: Int { inFlight }
}


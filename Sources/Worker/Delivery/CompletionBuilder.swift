import APNs
import PushCore
import RedisQueue

/// Builds what one finished (or parked) job writes to Redis: the result entry plus the retry envelope,
/// dropped token or dead letter that goes with it. The one place that shapes results, so every path
/// (answer, pause, outage, rejection, expiry) writes the same fields. Pure.
struct CompletionBuilder {
    let workerID: String

    private func entry(_ job: JobAttempt, _ outcome: ResultEntry.Outcome, now: UInt64, answer: (any ProviderAnswer)? = nil, reason: String? = nil) -> ResultEntry {
        let n = job.notification
        // Without environments (FCM) the entry names none, and its token and topic only when given.
        let environmentless = !n.platform.hasEnvironments
        let fields = answer?.resultFields
        var result = ResultEntry(
            id: job.id, outcome: outcome, status: answer?.status ?? 0, reason: reason,
            token: (environmentless && n.deviceToken.isEmpty) || n.isBroadcast ? nil : n.deviceToken,
            topic: environmentless && n.topic.isEmpty ? nil : n.topic,
            environment: environmentless ? nil : n.environment.rawValue, app: job.appName,
            apnsID: fields?.apnsID, apnsUniqueID: fields?.apnsUniqueID, attempt: job.attempt,
            latencyMilliseconds: job.latencyMilliseconds(now: now), worker: workerID)
        result.fallbackFrom = job.fallbackFrom?.rawValue
        result.platform = n.platform.rawValue
        if outcome == .delivered { result.fcmName = fields?.messageName }
        result.channel = n.channelID
        result.traceparent = job.traceparent
        return result
    }

    /// A completion for `job`'s lease that leaves its idempotency key (if it took part) in `state`.
    private func completion(_ job: JobAttempt, once state: OnceUpdate.State) -> JobCompletion {
        var completion = JobCompletion(lease: job.lease)
        if let expect = job.onceExpect { completion.once = OnceUpdate(jobID: job.id, expect: expect, state: state) }
        return completion
    }

    /// A terminal or retry decision on an answer (or a transport failure: `answer` nil).
    func decided(_ job: JobAttempt, _ decision: Decision, answer: (any ProviderAnswer)?, now: UInt64,
                 wallMillis: Int64) -> JobCompletion {
        var completion = completion(job, once: .done)
        var result: ResultEntry
        switch decision {
        case .delivered:
            // A validate-only job's success is its check's (FCM's dry run names no real message).
            result = entry(job, job.validateOnly ? .validated : .delivered, now: now, answer: answer)
        case .dropToken(let invalidSince, let reason):
            result = entry(job, .tokenDropped, now: now, answer: answer, reason: reason)
            result.invalidSince = invalidSince
            let n = job.notification
            completion.droppedToken = DroppedToken(
                token: n.deviceToken, topic: n.topic, environment: n.platform.hasEnvironments ? n.environment.rawValue : "", reason: reason,
                invalidSince: invalidSince, platform: n.platform.rawValue, app: job.appName, hasEnvironments: n.platform.hasEnvironments)
        case .dropChannel(let reason):
            result = entry(job, .channelDropped, now: now, answer: answer, reason: reason)
            if case .channel(let id, let bundleID) = job.notification.target {
                completion.droppedChannel = DroppedChannel(
                    channel: id, bundleID: bundleID, environment: job.notification.environment.rawValue, reason: reason)
            }
        case .fail(let reason):
            result = entry(job, .failed, now: now, answer: answer, reason: reason)
        case .retry(let ms, let reason):
            return retry(job, dueAt: wallMillis + ms, attempt: job.attempt + 1, reason: reason, answer: answer, now: now)
        case .resendNow, .resendUnprocessed, .unavailable, .deferForConfiguration:
            preconditionFailure("\(decision) is not recorded; the core resends or parks the job")
        }
        completion.result = result
        if ArchivedJob.archives(result.outcome) && job.lease.job.count <= ArchivedJob.maxJobBytes {
            completion.archived = ArchivedJob(id: job.id, outcome: result.outcome, reason: result.reason ?? "", queue: job.lease.queueKey,
                                              app: job.appName, token: job.notification.deviceToken, attempt: job.attempt, job: job.lease.job)
        }
        return completion
    }

    /// Puts the job in the retry set, due at `dueAt` (ms since the epoch), as attempt `attempt`: the same
    /// number for a parked job (the job is not at fault), the next one after a retryable answer.
    /// `paced`: its budgets reserved `dueAt` for it (it goes then without a new check).
    func retry(_ job: JobAttempt, dueAt: Int64, attempt: Int, reason: String, answer: (any ProviderAnswer)? = nil,
               now: UInt64, paced: Bool = false) -> JobCompletion {
        var completion = completion(job, once: .pending)
        var result = entry(job, .retrying, now: now, answer: answer, reason: reason)
        result.retryAt = dueAt
        completion.result = result
        completion.scheduleRetry(at: dueAt, attempt: attempt, id: job.id, since: job.firstAttemptAt, paced: paced)
        return completion
    }

    /// A job this worker cannot send now (its destination's outage pause holds it): back to the head of its queue,
    /// for another worker to take at once; its `retrying` entry says why and that it is due now. One this worker
    /// spent nothing on goes as claimed, its idempotency key left as it is (a `<worker>\n<lease>` holder whose lease
    /// is gone lets the copy claimed next send; `pending` stays pending for an envelope). One it spent an attempt
    /// on (a resend after a lost answer) goes as its retry envelope with that attempt, the key left `pending` as
    /// for any retry.
    func handedBack(_ job: JobAttempt, reason: String, now: UInt64, wallMillis: Int64) -> JobCompletion {
        let asClaimed = job.attempt == job.lease.attempt
        var completion = asClaimed ? JobCompletion(lease: job.lease) : completion(job, once: .pending)
        var result = entry(job, .retrying, now: now, reason: reason)
        result.retryAt = wallMillis
        completion.result = result
        completion.handBack(id: job.id, since: job.firstAttemptAt, attempt: job.attempt)
        return completion
    }

    /// A job whose `deliver_at` lies ahead: into the retry set until then, attempt unchanged, and no result entry
    /// (nothing happened to it yet; its one terminal entry comes when it is sent).
    func scheduled(_ job: JobAttempt, at dueAt: Int64) -> JobCompletion {
        var completion = completion(job, once: .pending)
        completion.scheduleRetry(at: dueAt, attempt: job.attempt, id: job.id)
        return completion
    }

    /// A multicast job fans out: its lease released with one child job per token pushed to its queue, and no
    /// result entry (each token's own entries follow; the job's terminal outcomes are theirs).
    func expanded(_ job: JobAttempt, _ multicast: JobAttempt.Multicast) -> JobCompletion {
        var completion = completion(job, once: .done)
        completion.expansion = Expansion(jobID: job.id, tokens: multicast.tokens, jobPrefix: multicast.jobPrefix, jobSuffix: multicast.jobSuffix)
        return completion
    }

    /// A second copy of a job id within the idempotency window: its one terminal entry says so, nothing is sent.
    func duplicate(_ job: JobAttempt, now: UInt64) -> JobCompletion {
        var completion = JobCompletion(lease: job.lease)
        var result = entry(job, .duplicate, now: now)
        if job.multicast != nil { result.token = nil }
        completion.result = result
        return completion
    }

    /// A job that cannot be sent as written: a `rejected` result and a dead letter with its bytes and reason.
    func rejected(_ lease: Lease, id: String, reason: String, spec: JobSpec?, app: String?, traceparent: String? = nil, wallMillis: Int64) -> JobCompletion {
        var completion = JobCompletion(lease: lease)
        completion.deadLetter(reason: reason, at: wallMillis, id: id)
        completion.result = ResultEntry(
            id: id, outcome: .rejected, status: 0, reason: reason, token: spec?.token, topic: spec?.topic,
            environment: spec?.environment?.rawValue, app: app, attempt: lease.attempt, latencyMilliseconds: 0, worker: workerID)
        completion.result?.platform = spec?.platform.rawValue
        completion.result?.channel = spec?.channel
        completion.result?.traceparent = traceparent
        return completion
    }
}

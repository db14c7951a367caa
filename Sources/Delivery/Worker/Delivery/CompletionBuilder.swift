import PushCore
import ProviderKit
import RedisQueue

/// Builds what one finished (or parked) job writes to Redis: the result entry plus the retry envelope,
/// dropped token or dead letter that goes with it. The one place that shapes results, so every path
/// (answer, pause, outage, rejection, expiry) writes the same fields. Pure.
struct CompletionBuilder {
    let workerID: String

    /// `token`: one of a many-token send's tokens, the entry's instead of the notification's. Reads the notification's
    /// fields one by one, never a copy of it (which retained each of its strings, per entry).
    private func entry(_ job: JobAttempt, _ outcome: ResultEntry.Outcome, now: UInt64, answer: (any ProviderAnswer)? = nil, reason: String? = nil,
                       token: String? = nil) -> ResultEntry {
        let platform = job.notification.platform
        let deviceToken = token ?? job.notification.deviceToken
        let channelID = token == nil ? job.notification.channelID : nil
        // Without environments (FCM) the entry names none, and its token and topic only when given.
        let environmentless = !platform.hasEnvironments
        let topic = job.notification.topic
        let fields = answer?.resultFields
        var result = ResultEntry(
            id: job.id, outcome: outcome, status: answer?.status ?? 0, reason: reason,
            token: (environmentless && deviceToken.isEmpty) || channelID != nil ? nil : deviceToken,
            topic: environmentless && topic.isEmpty ? nil : topic,
            environment: environmentless ? nil : job.notification.environment.rawValue, app: job.appName,
            apnsID: fields?.apnsID, apnsUniqueID: fields?.apnsUniqueID, attempt: job.attempt,
            latencyMilliseconds: job.latencyMilliseconds(now: now), worker: workerID)
        result.fallbackFrom = job.fallbackFrom?.rawValue
        result.platform = platform.rawValue
        if outcome == .delivered { result.fcmName = fields?.messageName }
        // Every entry an answer that names the message decided, but a validate-only job's: nothing was delivered.
        if outcome != .validated { result.messageID = fields?.messageID }
        result.channel = channelID
        result.traceparent = job.traceparent
        return result
    }

    /// The job's entries: one, or one per token of a many-token send, each naming its token.
    private func entries(_ job: JobAttempt, _ outcome: ResultEntry.Outcome, now: UInt64, answer: (any ProviderAnswer)? = nil,
                         reason: String? = nil) -> [ResultEntry] {
        guard !job.batchTokens.isEmpty else { return [entry(job, outcome, now: now, answer: answer, reason: reason)] }
        return job.batchTokens.map { entry(job, outcome, now: now, answer: answer, reason: reason, token: $0) }
    }

    private func dropped(_ job: JobAttempt, token: String, reason: String, invalidSince: Int64?) -> DroppedToken {
        let n = job.notification
        return DroppedToken(token: token, topic: n.topic, environment: n.platform.hasEnvironments ? n.environment.rawValue : "", reason: reason,
                            invalidSince: invalidSince, platform: n.platform.rawValue, app: job.appName, hasEnvironments: n.platform.hasEnvironments)
    }

    /// A many-token send's answer, token by token: those the answer names as gone are dropped, those it names as
    /// refused for another reason failed; the others are
    /// delivered when the request was (a partial success), else dropped too when it names none (all invalid), else
    /// failed with the answer's reason (it refused them without saying why: kept, not dropped on a guess).
    private func perToken(_ job: JobAttempt, _ decision: Decision, answer: (any ProviderAnswer)?, now: UInt64,
                          into completion: inout JobCompletion) {
        let named = answer?.resultFields.goneTokens ?? []
        let gone = Set(named)
        let refused = Set(answer?.resultFields.failedTokens ?? [])
        let goneReason = answer?.reasonName ?? "token gone"
        for token in job.batchTokens {
            var result: ResultEntry
            switch decision {
            // Names none at all: every token is gone (80300007). Names others only: this one is kept, failed.
            case .dropToken(let invalidSince, let reason) where named.isEmpty || gone.contains(token):
                result = entry(job, .tokenDropped, now: now, answer: answer, reason: reason, token: token)
                result.invalidSince = invalidSince
                completion.droppedTokens.append(dropped(job, token: token, reason: reason, invalidSince: invalidSince))
            case .dropToken(_, let reason):
                result = entry(job, .failed, now: now, answer: answer, reason: reason, token: token)
            default:
                if refused.contains(token) {
                    result = entry(job, .failed, now: now, answer: answer, reason: goneReason, token: token)
                    break
                }
                guard gone.contains(token) else {
                    result = entry(job, job.validateOnly ? .validated : .delivered, now: now, answer: answer, token: token)
                    break
                }
                result = entry(job, .tokenDropped, now: now, answer: answer, reason: goneReason, token: token)
                completion.droppedTokens.append(dropped(job, token: token, reason: goneReason, invalidSince: nil))
            }
            completion.results.append(result)
        }
        // Archived once for the job (its bytes are all the tokens'), when any token ended in an archived outcome.
        if let ended = completion.results.first(where: { ArchivedJob.archives($0.outcome) }) {
            archive(job, outcome: ended.outcome, reason: ended.reason ?? "", into: &completion)
        }
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
        case .delivered where !job.batchTokens.isEmpty, .dropToken where !job.batchTokens.isEmpty:
            perToken(job, decision, answer: answer, now: now, into: &completion)
            return completion
        case .fail(let reason) where !job.batchTokens.isEmpty:
            completion.results = entries(job, .failed, now: now, answer: answer, reason: reason)
            archive(job, outcome: .failed, reason: reason, into: &completion)
            return completion
        case .delivered:
            // A validate-only job's success is its check's (FCM's dry run names no real message).
            result = entry(job, job.validateOnly ? .validated : .delivered, now: now, answer: answer)
        case .dropToken(let invalidSince, let reason):
            result = entry(job, .tokenDropped, now: now, answer: answer, reason: reason)
            result.invalidSince = invalidSince
            completion.droppedToken = dropped(job, token: job.notification.deviceToken, reason: reason, invalidSince: invalidSince)
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
        case .awaitReceipt(let ticket, let ms):
            // Off the worker's lease: the job waits in the receipts set, its `accepted` entry naming the ticket.
            result = entry(job, .accepted, now: now, answer: answer)
            completion.receipt = PendingReceipt(platform: job.notification.platform.rawValue, ticket: ticket, dueAt: wallMillis + ms,
                                                sentAt: wallMillis, entry: result, queue: job.lease.queueKey)
            completion.results = [result]
            return completion
        case .resendNow, .resendUnprocessed, .unavailable, .deferForConfiguration:
            preconditionFailure("\(decision) is not recorded; the core resends or parks the job")
        }
        archive(job, outcome: result.outcome, reason: result.reason ?? "", into: &completion)
        // Moved in as the last use (the `result` setter's Optional map copied the entry).
        completion.results = [result]
        return completion
    }

    /// A copy of a failed job for the archive (one per job, a many-token send's too).
    private func archive(_ job: JobAttempt, outcome: ResultEntry.Outcome, reason: String, into completion: inout JobCompletion) {
        guard ArchivedJob.archives(outcome) && job.lease.job.count <= ArchivedJob.maxJobBytes else { return }
        completion.archived = ArchivedJob(id: job.id, outcome: outcome, reason: reason, queue: job.lease.queueKey,
                                          app: job.appName, token: job.notification.deviceToken, attempt: job.attempt, job: job.lease.job)
    }

    /// Puts the job in the retry set, due at `dueAt` (ms since the epoch), as attempt `attempt`: the same
    /// number for a parked job (the job is not at fault), the next one after a retryable answer.
    /// `paced`: its budgets reserved `dueAt` for it (it goes then without a new check).
    func retry(_ job: JobAttempt, dueAt: Int64, attempt: Int, reason: String, answer: (any ProviderAnswer)? = nil,
               now: UInt64, paced: Bool = false) -> JobCompletion {
        var completion = completion(job, once: .pending)
        completion.results = entries(job, .retrying, now: now, answer: answer, reason: reason).map { var result = $0; result.retryAt = dueAt; return result }
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
        completion.results = entries(job, .retrying, now: now, reason: reason).map { var result = $0; result.retryAt = wallMillis; return result }
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
        if job.multicast != nil || !job.batchTokens.isEmpty { result.token = nil }
        completion.result = result
        return completion
    }

    /// A job that cannot be sent as written: a `rejected` result and a dead letter with its bytes and reason.
    func rejected(_ lease: Lease, id: String, reason: String, spec: JobSpec?, fields: RejectedJobFields? = nil, app: String?, traceparent: String? = nil,
                  wallMillis: Int64) -> JobCompletion {
        var completion = JobCompletion(lease: lease)
        completion.deadLetter(reason: reason, at: wallMillis, id: id)
        completion.result = ResultEntry(
            id: id, outcome: .rejected, status: 0, reason: reason, token: spec?.token, topic: spec?.topic,
            environment: fields?.environment, app: app, attempt: lease.attempt, latencyMilliseconds: 0, worker: workerID)
        // The platform it parsed to, else the one a job that does not parse still names; none when it cannot be told.
        completion.result?.platform = (spec?.platform ?? JobParser.readablePlatform(lease.job))?.rawValue
        completion.result?.channel = fields?.channel
        completion.result?.traceparent = traceparent
        return completion
    }
}

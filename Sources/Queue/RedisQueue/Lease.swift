/// A claimed job held by this worker until its completion is applied.
public struct Lease: Sendable, Equatable {
    /// Unique within the worker (chosen by it: "<claim sequence>.<n>").
    public let id: String
    /// The queue the job was taken from (and goes back to if this worker dies).
    public let queueKey: String
    /// The element exactly as it sat in the queue (an envelope for a retry); needed by the lease-lost rule.
    public let raw: [UInt8]
    /// The producer's job bytes, unwrapped.
    public let job: [UInt8]
    /// 1 for a producer's job, N for its N-th attempt. Read from a retry envelope only when Herald's scheduler
    /// marked it in this dataset's epoch; any other envelope (a producer's look-alike) counts as attempt 1.
    public let attempt: Int
    /// Herald's job id carried by a retry envelope (nil for a producer's job: use its `id` or make one).
    public let jobID: String?
    /// The dataset epoch the claim ran in (see `QueueKeys.epoch`); sent with the completion so that a lease gone
    /// because Redis lost its data is reported as `CompletionReport.forgotten`. Empty: not known.
    public let epoch: String
    /// The attempt an envelope claimed that Herald's scheduler had not marked (a producer pushed it, or it was
    /// queued before the epoch changed): ignored, `attempt` is 1. Nil for every job Herald wrapped itself and
    /// for plain jobs. Worth a log line: the producer is pushing Herald's envelope format.
    public let unmarkedEnvelopeAttempt: Int?
    /// When the job's first attempt was made (ms since the epoch), carried by Herald's retry envelopes for a
    /// queue's give-up limit; nil for a fresh job (and an envelope whose attempt is not believed).
    public let firstAttemptAt: Int64?
    /// Its budgets already reserved this time for it (ms since the epoch; see `BudgetCheck`): sent without a new
    /// check. Believed, like `attempt`, only from an envelope Herald's scheduler marked.
    public let pacedAt: Int64?
    /// Redis's clock when the claim took it (ms since the epoch): how late a paced job came back is measured on
    /// the clock that set its slot, so a worker's clock off by some milliseconds does not make every paced job
    /// late (and check its budgets again, for ever). Nil for a lease not claimed from Redis.
    public let claimedAtRedisMillis: Int64?

    public init(id: String, queueKey: String, raw: [UInt8], epoch: String = "", claimedAtRedisMillis: Int64? = nil) {
        self.id = id
        self.claimedAtRedisMillis = claimedAtRedisMillis
        self.queueKey = queueKey
        self.raw = raw
        self.epoch = epoch
        let unwrapped = JobEnvelope.unwrap(raw)
        self.job = unwrapped.job
        self.jobID = unwrapped.id
        let isEnvelope = unwrapped.job.count != raw.count
        if isEnvelope && (epoch.isEmpty || unwrapped.epoch != epoch) {
            self.attempt = 1
            self.unmarkedEnvelopeAttempt = unwrapped.attempt
            self.firstAttemptAt = nil
            self.pacedAt = nil
        } else {
            self.attempt = unwrapped.attempt
            self.unmarkedEnvelopeAttempt = nil
            self.firstAttemptAt = unwrapped.since
            self.pacedAt = unwrapped.paced
        }
    }
}

/// What to record for one finished lease, applied atomically with the lease's release.
public struct JobCompletion: Sendable {
    public var lease: Lease
    /// The job's result entries: one, or one per token for a many-token send (Push Kit's).
    public var results: [ResultEntry] = []
    /// Envelope to put on `<prefix>:retry` and its due time (ms since the epoch).
    public var retry: (dueAt: Int64, envelope: [UInt8])?
    /// The tokens the answer said are gone: one, or several for a many-token send.
    public var droppedTokens: [DroppedToken] = []
    public var droppedChannel: DroppedChannel?
    /// Dead-letter element bytes (see `DeadLetterEntry.encode`).
    public var deadLetter: [UInt8]?
    /// A multicast job: one child job per token, pushed in the same script that releases this lease.
    public var expansion: Expansion?
    /// The idempotency state to leave for the job's id (when idempotency is on and it took part).
    public var once: OnceUpdate?
    /// A copy for the failed-job archive (`<prefix>:archive`), written with the result when archiving is on.
    public var archived: ArchivedJob?
    /// A ticket whose receipt decides the job (a provider's second phase): into the receipts set.
    public var receipt: PendingReceipt?
    /// The job goes back to the head of its queue (`handBack`), not to the retry set.
    public private(set) var handedBack = false
    /// It goes back byte for byte as claimed (no attempt spent since); else as its retry envelope.
    public private(set) var handedBackAsClaimed = false

    public init(lease: Lease, result: ResultEntry? = nil, droppedToken: DroppedToken? = nil) {
        self.lease = lease
        self.result = result
        self.droppedToken = droppedToken
    }

    /// The job's entry, for every job but a many-token send (setting it replaces them all).
    public var result: ResultEntry? {
        get { results.first }
        set { results = newValue.map { [$0] } ?? [] }
    }

    /// The job's dropped token, for every job but a many-token send (setting it replaces them all).
    public var droppedToken: DroppedToken? {
        get { droppedTokens.first }
        set { droppedTokens = newValue.map { [$0] } ?? [] }
    }

    /// Schedules attempt `attempt` (default: the next one) of the same job bytes under Herald's job `id` at
    /// `dueAt` (ms), back to the queue it came from. The one place a retry envelope is built.
    /// `since`: the first attempt's time (ms), kept for the queue's give-up limit. `paced`: see `Lease.pacedAt`.
    public mutating func scheduleRetry(at dueAt: Int64, attempt: Int? = nil, id: String, since: Int64? = nil, paced: Bool = false) {
        retry = (dueAt, JobEnvelope.wrap(job: lease.job, attempt: attempt ?? lease.attempt + 1, id: id, queue: lease.queueKey, since: since,
                                         paced: paced ? dueAt : nil))
    }

    /// Returns the job to the head of the queue it came from in the script that releases the lease, for another
    /// worker to take at once (issue 30, item 14). With `attempt` nil or the claimed one it goes byte for byte as
    /// claimed (its attempt, id and first-attempt time those it had); with a later attempt (one was spent on it
    /// since) as its retry envelope for that attempt, marked with the dataset's epoch as the scheduler marks it.
    /// Should the queue key hold another type by then, the envelope goes to the retry set due at once instead.
    public mutating func handBack(id: String, since: Int64? = nil, attempt: Int? = nil) {
        let attempt = attempt ?? lease.attempt
        scheduleRetry(at: 0, attempt: attempt, id: id, since: since)
        handedBack = true
        handedBackAsClaimed = attempt == lease.attempt
    }

    /// Sends the job's raw bytes to the dead-letter list with `reason` and the job's `id` (as its result gives it).
    public mutating func deadLetter(reason: String, at: Int64, id: String? = nil, maxJobBytes: Int = DeadLetterEntry.defaultMaxJobBytes) {
        deadLetter = DeadLetterEntry.encode(reason: reason, at: at, id: id, job: lease.job, maxJobBytes: maxJobBytes)
    }
}

/// Lease-id prefixes for one process's claims: "<nonce>.<claim sequence>." The nonce keeps them unique even
/// when a restarted worker keeps its id; otherwise its first claims would overwrite the leases its crashed
/// predecessor left in the same hash. `tag` (a shard's, say) keeps one process's queues apart for certain.
struct LeasePrefixes {
    private let nonce: String
    private var sequence: UInt64 = 0

    init(tag: String = "") {
        nonce = String(UInt32.random(in: 0...UInt32.max), radix: 36) + tag
    }

    mutating func next() -> String {
        sequence &+= 1
        return "\(nonce).\(sequence)."
    }
}

/// What a completion batch did.
public struct CompletionReport: Sendable, Equatable {
    /// Applied normally.
    public var applied = 0
    /// Lease had been reaped but the job was still waiting in its queue: taken back and applied.
    public var recovered = 0
    /// Lease lost: the job is held by another worker (or this batch was applied before); nothing written.
    /// The notification may have gone out twice: log or count it.
    public var leasesLost: [String] = []
    /// A repeated batch (its first reply was lost) whose leases were already gone: most likely applied by the
    /// first call; not recovered, so nothing is recorded twice. See `JobQueue.complete(_:isRepeat:completion:)`.
    /// Also a hand-back whose lease was gone (the job is queued or taken already: nothing to hand back).
    public var unconfirmed = 0
    /// Leases gone because Redis lost its data since they were claimed (restarted without persistence,
    /// FLUSHALL: the dataset epoch changed); nothing written. Not another worker's doing and not a repeat:
    /// the outcomes (and the jobs) are simply gone with the rest of the data.
    public var forgotten = 0
    public init() {}

    /// Adds the counts of a follow-up call (the lease-lost recovery, another shard's part) to this one's.
    public mutating func add(_ other: CompletionReport) {
        applied += other.applied
        recovered += other.recovered
        leasesLost += other.leasesLost
        unconfirmed += other.unconfirmed
        forgotten += other.forgotten
    }
}

/// Result of a scheduler pass.
public struct RetryMove: Sendable, Equatable {
    public var moved: Int
    /// Earliest remaining due time (ms, Redis clock) or nil when the retry set is empty.
    public var nextDueAt: Int64?
    /// Redis's clock when the pass ran.
    public var now: Int64

    /// How long to sleep before the next pass: until the next due time, at most `cap` ms, 0 if a full batch moved.
    public func sleepMilliseconds(batchLimit: Int, cap: Int = 1_000) -> Int {
        if moved >= batchLimit { return 0 }
        guard let nextDueAt else { return cap }
        return Int(max(0, min(Int64(cap), nextDueAt - now)))
    }
}

/// Back-off for empty claims: 2 ms doubling to 200 ms, reset as soon as a claim returns jobs. An idle worker
/// costs Redis about five tiny script calls per second.
public struct ClaimBackoff: Sendable {
    public var initialMilliseconds = 2
    public var maxMilliseconds = 200
    private var current = 0

    public init(initialMilliseconds: Int = 2, maxMilliseconds: Int = 200) {
        self.initialMilliseconds = initialMilliseconds
        self.maxMilliseconds = maxMilliseconds
    }

    /// Delay before the next claim: 0 after a non-empty claim.
    public mutating func next(claimed: Int) -> Int {
        if claimed > 0 {
            current = 0
            return 0
        }
        current = current == 0 ? initialMilliseconds : min(maxMilliseconds, current * 2)
        return current
    }
}

/// Builds the script calls and reads their replies, shared by the loop-confined `JobQueue` and the blocking
/// `BlockingJobQueue`, so both speak exactly the same protocol.
struct QueueCommands: Sendable {
    /// A script call: the script, its KEYS, its ARGV.
    typealias Call = (RedisScript, [[UInt8]], [[UInt8]])

    let keys: QueueKeys
    let workerID: String
    let queueKeys: [String]
    let options: JobQueueOptions

    /// Checks the worker id and queue keys (`queueKeys` nil: the default queue) for both queue front ends.
    init(keys: QueueKeys, workerID: String, queueKeys: [String]?, options: JobQueueOptions) throws(QueueKeys.InvalidKey) {
        guard QueueKeys.isValid(workerID) else { throw QueueKeys.InvalidKey(key: workerID) }
        let queues = queueKeys ?? [keys.queue]
        for queue in queues where !QueueKeys.isValid(queue) { throw QueueKeys.InvalidKey(key: queue) }
        self.keys = keys
        self.workerID = workerID
        self.queueKeys = queues
        self.options = options
    }

    private func b(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A fresh random epoch for the scripts that make the dataset epoch when it is missing: fresh per call, so
    /// a dataset made again after a loss never gets the epoch of the one before.
    private func epochCandidate() -> [UInt8] { b(String(UInt64.random(in: 0...UInt64.max), radix: 36)) }

    /// `order`: the queue keys in the order this claim visits them (fair share); nil is `queueKeys` (priority).
    func claim(max: Int, leasePrefix: String, order: [String]? = nil) -> (RedisScript, [[UInt8]], [[UInt8]]) {
        (QueueScripts.claim, [b(keys.workers), b(keys.leases(worker: workerID)), b(keys.epoch), b(keys.paused)] + (order ?? queueKeys).map(b),
         [b(workerID), b(String(options.leaseMilliseconds)), b(String(max)), b(leasePrefix), epochCandidate()])
    }

    func parseClaim(_ reply: RESPValue) throws(RedisError) -> (leases: [Lease], problems: [QueueKeyProblem]) {
        guard let parts = reply.array, parts.count == 4, let epoch = parts[0].string, let items = parts[1].array, items.count % 3 == 0,
              let claimedAt = parts[3].int else {
            throw .protocolError("claim reply: \(reply)")
        }
        var leases: [Lease] = []
        leases.reserveCapacity(items.count / 3)
        var index = 0
        while index < items.count {
            guard let id = items[index].string, let queue = items[index + 1].string, let raw = items[index + 2].bytes else {
                throw .protocolError("claim reply element")
            }
            leases.append(Lease(id: id, queueKey: queue, raw: raw, epoch: epoch, claimedAtRedisMillis: claimedAt))
            index += 3
        }
        return (leases, try QueueKeyProblem.parse(parts[2]))
    }

    /// `withJobs`: send each job's bytes (and queue) for the lease-lost recovery. The first call leaves them out
    /// (about 300 bytes a job that Redis would parse for nothing); completions answered 3 go again with them.
    func complete(_ batch: [JobCompletion], withJobs: Bool = false) -> (RedisScript, [[UInt8]], RESPArguments) {
        var declared = DeclaredKeys([keys.leases(worker: workerID), keys.results, keys.droppedTokens, keys.retry, keys.dead, keys.epoch,
                                     keys.droppedChannels, keys.archive, keys.deadIDs, keys.deadSeq])
        var args = RESPArguments(capacity: batch.reduce(64) { $0 + $1.lease.raw.count + 400 })
        args.append(options.resultsMaxLength)
        args.append(options.deadMaxLength)
        args.append(batch.count)
        for item in batch {
            args.append(item.lease.id)
            args.append(item.lease.epoch)
            // A fan-out needs the queue its children go to, a hand-back the queue (and the job bytes when it goes
            // as claimed); otherwise the job bytes travel only for the recovery. The queue goes in KEYS (once per
            // batch), ARGV says where.
            if withJobs || item.expansion != nil || item.handedBack {
                args.append(declared.index(of: item.lease.queueKey))
            } else {
                args.append([])
            }
            args.append(withJobs || item.handedBackAsClaimed ? item.lease.raw : [])
            args.append(item.results.count)
            for result in item.results {
                args.append(result.fieldCount * 2)
                result.appendFields(to: &args)
            }
            if let retry = item.retry {
                if item.handedBack { args.append(QueueCommands.handBackDue) } else { args.append(retry.dueAt) }
                args.append(retry.envelope)
            } else {
                args.append([])
                args.append([])
            }
            args.append(item.deadLetter ?? [])
            args.append(item.droppedTokens.count)
            for dropped in item.droppedTokens {
                let fields = dropped.fields
                args.append(fields.count * 2)
                for (field, value) in fields {
                    args.append(field)
                    args.append(value)
                }
            }
            if let once = item.once {
                args.append(3)
                args.append(declared.index(of: keys.once(jobID: once.jobID)))
                args.append(once.expect == .lease ? onceHolder(item.lease.id) : OnceUpdate.State.pending.rawValue)
                args.append(once.state.rawValue)
            } else {
                args.append(0)
            }
            if let expansion = item.expansion, !expansion.tokens.isEmpty {
                args.append(expansion.tokens.count)
                args.append(expansion.headerPrefix(queue: item.lease.queueKey))
                args.append(expansion.jobPrefix)
                args.append(expansion.jobSuffix)
                for token in expansion.tokens { args.append(token) }
            } else {
                args.append(0)
            }
            let channel = item.droppedChannel?.fields ?? []
            args.append(channel.count * 2)
            for (field, value) in channel {
                args.append(field)
                args.append(value)
            }
        }
        appendArchive(batch, to: &args)
        appendResultIndex(batch, declared: &declared, to: &args)
        appendReceipts(batch, declared: &declared, to: &args)
        return (QueueScripts.complete, declared.keys, args)
    }

    /// The receipts section after the result index: a count, then per ticket the 1-based index of its completion,
    /// the KEYS index of `<p>:receipts` and of `<p>:receipts:jobs`, the member, its due time and its record. A batch
    /// without one (every provider without a second phase) adds one argument and declares no key.
    private func appendReceipts(_ batch: [JobCompletion], declared: inout DeclaredKeys, to args: inout RESPArguments) {
        var count = 0
        for item in batch where item.receipt != nil { count += 1 }
        args.append(count)
        guard count > 0 else { return }
        for (c, item) in batch.enumerated() {
            guard let receipt = item.receipt else { continue }
            args.append(c + 1)
            args.append(declared.index(of: keys.receipts))
            args.append(declared.index(of: keys.receiptJobs))
            args.append(receipt.member)
            args.append(receipt.dueAt)
            args.append(receipt.record)
        }
    }

    /// The result index section after the archive: its TTL in seconds, a count, then per indexed entry the 1-based
    /// index of its completion in the batch and of the entry in the completion, the KEYS index of `<prefix>:result:<id>`, the hash field (the token, else the
    /// channel, else "") and the entry as a JSON object of strings with its queue key (Lua adds the stream id).
    /// `duplicate` entries are left out: they are about another copy, and would hide the job's own outcome.
    private func appendResultIndex(_ batch: [JobCompletion], declared: inout DeclaredKeys, to args: inout RESPArguments) {
        args.append(options.resultIndexTTLSeconds)
        guard options.resultIndexTTLSeconds > 0 else { return args.append(0) }
        let indexed = batch.indices.flatMap { c in
            batch[c].results.indices.filter { batch[c].results[$0].outcome != .duplicate && !batch[c].results[$0].id.isEmpty }.map { (c, $0) }
        }
        args.append(indexed.count)
        for (c, e) in indexed {
            let result = batch[c].results[e]
            args.append(c + 1)
            args.append(e + 1)
            args.append(declared.index(of: keys.resultIndex(jobID: result.id)))
            args.append(result.indexField)
            args.append(result.indexJSON(queue: batch[c].lease.queueKey))
        }
    }

    /// The retry due time that says "back to the head of the queue" (`JobCompletion.handBack`).
    static let handBackDue = Array("head".utf8)

    /// The archive section after the completions: its length cap, the count, then per archived completion its
    /// 1-based index in the batch, 2n and n field/value pairs. Nothing when archiving is off (length 0).
    private func appendArchive(_ batch: [JobCompletion], to args: inout RESPArguments) {
        args.append(options.archiveMaxLength)
        guard options.archiveMaxLength > 0 else { return args.append(0) }
        let archived = batch.indices.filter { batch[$0].archived != nil }
        args.append(archived.count)
        for index in archived {
            let fields = batch[index].archived!.fields
            args.append(index + 1)
            args.append(fields.count * 2)
            for (field, value) in fields {
                args.append(field)
                args.append(value)
            }
        }
    }

    /// The report, and the completions whose lease was gone (code 3): to send again with their job bytes.
    func parseComplete(_ reply: RESPValue, batch: [JobCompletion]) throws(RedisError) -> (CompletionReport, [JobCompletion]) {
        guard let codes = reply.array, codes.count == batch.count else { throw .protocolError("complete reply: \(reply)") }
        var report = CompletionReport()
        var again: [JobCompletion] = []
        for (code, item) in zip(codes, batch) {
            switch code.int {
            case 1: report.applied += 1
            case 2: report.recovered += 1
            case 3: again.append(item)
            case 4: report.forgotten += 1
            // A hand-back whose lease was gone: a repeat, or the reaper returned the job; either way it is queued
            // or taken, once.
            case 5: report.unconfirmed += 1
            default: report.leasesLost.append(item.lease.id)
            }
        }
        return (report, again)
    }

    /// What an idempotency key holds while this worker's lease sends the job.
    func onceHolder(_ leaseID: String) -> String { "\(workerID)\n\(leaseID)" }

    /// `jobs`: each claimed lease with its producer's job id. `learnt`: holders' lease hashes an earlier reply
    /// asked for (this worker's own is always declared).
    func claimOnce(_ jobs: [(lease: Lease, jobID: String)], windowMilliseconds: Int64, learnt: [[UInt8]] = []) -> (RedisScript, [[UInt8]], [[UInt8]]) {
        (QueueScripts.claimOnce, jobs.map { b(keys.once(jobID: $0.jobID)) } + [b(keys.leases(worker: workerID))] + learnt,
         [b(String(windowMilliseconds)), b(keys.leasesPrefix), b(workerID)] + jobs.map { b($0.lease.id) })
    }

    /// The verdicts (none when the call must go again), the idempotency keys of another type, and the keys it needs.
    func parseClaimOnce(_ reply: RESPValue, jobIDs: [String]) throws(RedisError) -> ([OnceVerdict], [QueueKeyProblem], needs: [[UInt8]]) {
        guard let parts = reply.array, parts.count == 2, let codes = parts[0].array else { throw .protocolError("claimOnce reply: \(reply)") }
        let needs = try KeyRounds.parse(parts[1])
        guard needs.isEmpty else { return ([], [], needs) }
        guard codes.count == jobIDs.count else { throw .protocolError("claimOnce reply: \(reply)") }
        var problems: [QueueKeyProblem] = []
        let verdicts = zip(codes, jobIDs).map { code, jobID -> OnceVerdict in
            if case .integer(let n) = code { return n == 1 ? .claimed : .duplicate }
            problems.append(QueueKeyProblem(key: keys.once(jobID: jobID), found: code.string ?? "\(code)", expected: "string", sentUnchecked: true))
            return .unguarded
        }
        return (verdicts, problems, needs)
    }

    func heartbeat() -> (RedisScript, [[UInt8]], [[UInt8]]) {
        (QueueScripts.heartbeat, [b(keys.workers)], [b(workerID), b(String(options.leaseMilliseconds))])
    }

    /// The queue keys this worker's leases come from, then those an earlier reply asked for.
    private func queues(_ learnt: [[UInt8]]) -> [[UInt8]] { queueKeys.map(b) + learnt }

    func reapScan() -> (RedisScript, [[UInt8]], [[UInt8]]) {
        (QueueScripts.reapScan, [b(keys.workers)], [b(String(options.reapWorkersPerCall))])
    }

    /// The dead workers' ids (`reapScan`'s reply).
    static func parseReapScan(_ reply: RESPValue) throws(RedisError) -> [[UInt8]] {
        guard let items = reply.array else { throw .protocolError("reap scan reply: \(reply)") }
        return try items.map { item throws(RedisError) in
            guard let id = item.bytes else { throw .protocolError("reap scan element: \(item)") }
            return id
        }
    }

    /// `dead`: from `reapScan`; their lease hashes are declared, and this worker's queues.
    func reap(dead: [[UInt8]], learnt: [[UInt8]] = []) -> (RedisScript, [[UInt8]], [[UInt8]]) {
        (QueueScripts.reap, [b(keys.workers)] + dead.map { b(keys.leasesPrefix) + $0 } + queues(learnt),
         [b(String(options.reapWorkersPerCall)), b(String(dead.count))] + dead)
    }

    func release(_ leaseIDs: [String], learnt: [[UInt8]] = []) -> (RedisScript, [[UInt8]], [[UInt8]]) {
        (QueueScripts.release, [b(keys.leases(worker: workerID))] + queues(learnt), leaseIDs.map(b))
    }

    func releasePrefix(_ prefix: String, learnt: [[UInt8]] = []) -> (RedisScript, [[UInt8]], [[UInt8]]) {
        (QueueScripts.releasePrefix, [b(keys.leases(worker: workerID))] + queues(learnt), [b(prefix)])
    }

    func retire(learnt: [[UInt8]] = []) -> (RedisScript, [[UInt8]], [[UInt8]]) {
        (QueueScripts.retire, [b(keys.workers), b(keys.leases(worker: workerID))] + queues(learnt), [b(workerID)])
    }

    /// KEYS[3] is the default queue (for envelopes that name none), then the other queue keys.
    func moveDue(learnt: [[UInt8]] = []) -> (RedisScript, [[UInt8]], [[UInt8]]) {
        let first = queueKeys.first ?? keys.queue
        return (QueueScripts.moveDue, [b(keys.retry), b(keys.epoch), b(first)] + queueKeys.dropFirst().map(b) + learnt,
                [b(String(options.retryMovesPerCall)), epochCandidate()])
    }

    static func parseMoveDue(_ reply: RESPValue) throws(RedisError) -> (RetryMove, [QueueKeyProblem], needs: [[UInt8]]) {
        guard let items = reply.array, items.count == 5, let moved = items[0].int, let next = items[1].int, let now = items[2].int else {
            throw .protocolError("scheduler reply: \(reply)")
        }
        return (RetryMove(moved: Int(moved), nextDueAt: next < 0 ? nil : next, now: now), try QueueKeyProblem.parse(items[3]),
                try KeyRounds.parse(items[4]))
    }

    /// Two scheduler passes as one: the moves add up, the later pass knows the next due time.
    static func merge(_ first: RetryMove, _ second: RetryMove) -> RetryMove {
        RetryMove(moved: first.moved + second.moved, nextDueAt: second.nextDueAt, now: second.now)
    }

    /// The reply of reap, release, releasePrefix and retire: {count, ..., problems, needs}.
    static func parseCount(_ reply: RESPValue) throws(RedisError) -> (Int, [QueueKeyProblem], needs: [[UInt8]]) {
        guard let items = reply.array, items.count >= 3, let count = items[0].int else {
            throw .protocolError("expected a count, got \(reply)")
        }
        return (Int(count), try QueueKeyProblem.parse(items[items.count - 2]), try KeyRounds.parse(items[items.count - 1]))
    }
}

/// Settings of a worker's queue use.
public struct JobQueueOptions: Sendable {
    /// A worker whose heartbeat is older than this is presumed dead and its leases are reaped.
    /// Renew at a third of it or more often.
    public var leaseMilliseconds = 30_000
    /// Approximate length cap of the results and dropped-tokens streams (XADD MAXLEN ~).
    public var resultsMaxLength = 1_000_000
    /// Length cap of the dead-letter list.
    public var deadMaxLength = 100_000
    /// Approximate length cap of the failed-job archive stream; 0 archives nothing.
    public var archiveMaxLength = 100_000
    /// Life of the per-job result index (`QueueKeys.resultIndex`), refreshed by each entry; 0 keeps none.
    public var resultIndexTTLSeconds = 0
    public var reapWorkersPerCall = 100
    public var retryMovesPerCall = 1_000
    /// Fair share: one weight per queue key (in `queueKeys` order); claims visit the queues in a weighted round
    /// robin (`QueueRotation`). Nil: strict priority, the first non-empty queue first, always.
    public var queueWeights: [Int]? = nil
    public init() {}

    /// The claim order state for one claimant, or nil for strict priority.
    func rotation(for queueKeys: [String]) -> QueueRotation? {
        queueWeights.map { QueueRotation(keys: queueKeys, weights: $0) }
    }
}

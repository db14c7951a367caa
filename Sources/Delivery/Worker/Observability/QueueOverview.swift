import RedisQueue

/// What no single worker owns: queue depths, the retry set, dead letters, live workers with their heartbeats
/// and leases, the results and dropped-token streams. Read from Redis with one pipeline (plus one per
/// worker for lease counts) each time the dashboard is scraped or polled.
public struct QueueOverview: Sendable {
    public struct WorkerState: Sendable, Equatable {
        public var id: String
        /// Milliseconds until the heartbeat runs out (negative: expired, the reaper will take its jobs).
        public var heartbeatDeadlineInMilliseconds: Int64
        /// Estimated from the lease length: a heartbeat sets the deadline `leaseMilliseconds` ahead.
        public var heartbeatAgeMilliseconds: Int64
        /// Jobs it holds (its lease hash).
        public var inFlight: Int
    }

    public var nowMilliseconds: Int64 = 0
    public var queueLengths: [(String, Int)] = []
    /// Whether each queue of `queueLengths` is paused (`herald queue pause`; in any shard).
    public var queuePaused: [Bool] = []
    public var retrySize = 0
    public var retryDue = 0
    /// When the earliest retry falls due (ms since the epoch); nil when the set is empty.
    public var retryNextDueMilliseconds: Int64?
    public var deadLetters = 0
    /// Tickets waiting for their receipt (a provider's second phase, `<p>:receipts`), those whose ask is due, and
    /// when the earliest ask fell or falls due (ms since the epoch; nil when none waits).
    public var receiptsWaiting = 0, receiptsDue = 0
    public var receiptsNextDueMilliseconds: Int64?
    public var resultsLength = 0
    public var droppedTokensLength = 0
    public var workers: [WorkerState] = []
    /// Keys that answered an error (shown as 0), each named.
    public var keyErrors: [KeyReplyError] = []

    public init() {}

    public var liveWorkers: [WorkerState] { workers.filter { $0.heartbeatDeadlineInMilliseconds > 0 } }

    public static func read(redis: any BlockingRedisCommands, keys: QueueKeys, queues: [String], leaseMilliseconds: Int64) throws(RedisError) -> QueueOverview {
        guard let time = try redis.command(["TIME"]).array, time.count == 2, let seconds = time[0].int, let micros = time[1].int else {
            throw .protocolError("TIME reply")
        }
        var overview = QueueOverview()
        let now = Int64(seconds) * 1000 + Int64(micros) / 1000
        overview.nowMilliseconds = now
        var commands: [[String]] = queues.map { ["LLEN", $0] }
        commands += [
            ["ZCARD", keys.retry], ["ZCOUNT", keys.retry, "-inf", "\(now)"], ["ZRANGE", keys.retry, "0", "0", "WITHSCORES"],
            ["LLEN", keys.dead], ["LLEN", keys.deadSweep], ["XLEN", keys.results], ["XLEN", keys.droppedTokens], ["ZRANGE", keys.workers, "0", "-1", "WITHSCORES"],
            ["SMEMBERS", keys.paused],
            ["ZCARD", keys.receipts], ["ZCOUNT", keys.receipts, "-inf", "\(now)"], ["ZRANGE", keys.receipts, "0", "0", "WITHSCORES"],
        ]
        let replies = try redis.pipeline(commands)
        // A wrong-typed key answers an error: shown as 0 and named rather than failing the whole page.
        overview.keyErrors = KeyReplyError.collect(commands, replies)
        func int(_ value: RESPValue) -> Int { Int(value.int ?? 0) }
        overview.queueLengths = queues.enumerated().map { ($0.element, int(replies[$0.offset])) }
        var i = queues.count
        overview.retrySize = int(replies[i]); i += 1
        overview.retryDue = int(replies[i]); i += 1
        if let first = replies[i].array, first.count == 2, let score = first[1].string.flatMap({ Double($0) }) {
            overview.retryNextDueMilliseconds = Int64(score)
        }
        i += 1
        // With a purge or requeue pass under way, the letters it has not looked at yet are in `dead:sweep`.
        overview.deadLetters = int(replies[i]) + int(replies[i + 1]); i += 2
        overview.resultsLength = int(replies[i]); i += 1
        overview.droppedTokensLength = int(replies[i]); i += 1
        let pairs = replies[i].array ?? []
        var workers: [WorkerState] = []
        var index = 0
        while index + 1 < pairs.count {
            if let id = pairs[index].string, let score = pairs[index + 1].string.flatMap({ Double($0) }) {
                let deadline = Int64(score) - now
                workers.append(WorkerState(id: id, heartbeatDeadlineInMilliseconds: deadline,
                                           heartbeatAgeMilliseconds: max(0, leaseMilliseconds - deadline), inFlight: 0))
            }
            index += 2
        }
        if !workers.isEmpty {
            let hlen = workers.map { ["HLEN", keys.leases(worker: $0.id)] }
            let lengths = try redis.pipeline(hlen)
            overview.keyErrors += KeyReplyError.collect(hlen, lengths)
            for (n, reply) in lengths.enumerated() { workers[n].inFlight = int(reply) }
        }
        overview.workers = workers
        i += 1
        let paused = Set((replies[i].array ?? []).compactMap(\.string))
        overview.queuePaused = queues.map(paused.contains)
        i += 1
        overview.receiptsWaiting = int(replies[i])
        overview.receiptsDue = int(replies[i + 1])
        if let first = replies[i + 2].array, first.count == 2, let score = first[1].string.flatMap({ Double($0) }) {
            overview.receiptsNextDueMilliseconds = Int64(score)
        }
        return overview
    }

    /// Every shard's overview summed: queue lengths under the configured keys, the retry sets, dead letters and
    /// streams added up, each worker once with the leases it holds in all shards.
    public static func read(redis: any BlockingRedisCommands, shards: QueueShards, leaseMilliseconds: Int64) throws(RedisError) -> QueueOverview {
        if shards.count == 1, let only = shards.shards.first {
            return try read(redis: redis, keys: only.keys, queues: only.queues, leaseMilliseconds: leaseMilliseconds)
        }
        var total = QueueOverview()
        total.queueLengths = shards.configuredQueues.map { ($0, 0) }
        total.queuePaused = shards.configuredQueues.map { _ in false }
        var workers: [String: WorkerState] = [:]
        for shard in shards.shards {
            let part = try read(redis: redis, keys: shard.keys, queues: shard.queues, leaseMilliseconds: leaseMilliseconds)
            total.nowMilliseconds = max(total.nowMilliseconds, part.nowMilliseconds)
            for (index, (_, length)) in part.queueLengths.enumerated() { total.queueLengths[index].1 += length }
            for (index, paused) in part.queuePaused.enumerated() where paused { total.queuePaused[index] = true }
            total.retrySize += part.retrySize
            total.retryDue += part.retryDue
            if let due = part.retryNextDueMilliseconds { total.retryNextDueMilliseconds = min(total.retryNextDueMilliseconds ?? due, due) }
            total.deadLetters += part.deadLetters
            total.receiptsWaiting += part.receiptsWaiting
            total.receiptsDue += part.receiptsDue
            if let due = part.receiptsNextDueMilliseconds { total.receiptsNextDueMilliseconds = min(total.receiptsNextDueMilliseconds ?? due, due) }
            total.resultsLength += part.resultsLength
            total.droppedTokensLength += part.droppedTokensLength
            total.keyErrors += part.keyErrors
            for worker in part.workers {
                if var seen = workers[worker.id] {
                    seen.inFlight += worker.inFlight
                    // The freshest heartbeat: a worker renews every shard in turn.
                    if worker.heartbeatDeadlineInMilliseconds > seen.heartbeatDeadlineInMilliseconds {
                        seen.heartbeatDeadlineInMilliseconds = worker.heartbeatDeadlineInMilliseconds
                        seen.heartbeatAgeMilliseconds = worker.heartbeatAgeMilliseconds
                    }
                    workers[worker.id] = seen
                } else {
                    workers[worker.id] = worker
                }
            }
        }
        total.workers = workers.values.sorted { $0.id < $1.id }
        return total
    }

    /// The dashboard's `/metrics`: queue-wide families, served once for the whole deployment.
    public func write(to out: inout PrometheusText) {
        out.family("herald_queue_length", .gauge, "Jobs waiting in each queue list.")
        for (queue, length) in queueLengths { out.sample("herald_queue_length", [("queue", queue)], length) }
        out.family("herald_queue_paused", .gauge, "1 while an operator has the queue paused (herald queue pause): no worker claims from it.")
        for (index, (queue, _)) in queueLengths.enumerated() { out.sample("herald_queue_paused", [("queue", queue)], index < queuePaused.count && queuePaused[index] ? 1 : 0) }
        out.single("herald_retry_set_size", .gauge, "Jobs in the retry set (retries, parked jobs, scheduled jobs).", Double(retrySize))
        out.single("herald_retry_due", .gauge, "Jobs in the retry set whose due time has passed.", Double(retryDue))
        if let next = retryNextDueMilliseconds {
            out.single("herald_retry_next_due_timestamp_seconds", .gauge, "When the earliest job of the retry set falls due, in seconds since the epoch (Redis's clock).",
                       Double(next) / 1000)
        }
        out.single("herald_dead_letters", .gauge, "Jobs in the dead-letter list.", Double(deadLetters))
        out.single("herald_receipts_waiting", .gauge, "Tickets waiting for their receipt (Expo's second phase).", Double(receiptsWaiting))
        out.single("herald_receipts_due", .gauge, "Of those, the ones whose receipt is due to be asked for.", Double(receiptsDue))
        out.single("herald_receipts_overdue_seconds", .gauge,
                   "How long the earliest due receipt has waited for its ask (0 when none is due): the receipts poller's lag.",
                   Double(max(0, nowMilliseconds - (receiptsNextDueMilliseconds ?? nowMilliseconds))) / 1000)
        out.single("herald_results_stream_length", .gauge, "Entries in the results stream.", Double(resultsLength))
        out.single("herald_dropped_tokens_stream_length", .gauge, "Entries in the dropped-tokens stream.", Double(droppedTokensLength))
        out.single("herald_workers_live", .gauge, "Workers with a live heartbeat.", Double(liveWorkers.count))
        out.single("herald_workers_expired", .gauge, "Workers whose heartbeat ran out (their jobs wait for the reaper).",
                   Double(workers.count - liveWorkers.count))
        out.family("herald_worker_heartbeat_age_seconds", .gauge, "Seconds since each worker's last heartbeat (estimated from the lease length).")
        for worker in workers { out.sample("herald_worker_heartbeat_age_seconds", [("worker", worker.id)], Double(worker.heartbeatAgeMilliseconds) / 1000) }
        out.family("herald_worker_leases", .gauge, "Jobs each worker holds (claimed, not yet recorded).")
        for worker in workers { out.sample("herald_worker_leases", [("worker", worker.id)], worker.inFlight) }
        out.family("herald_redis_key_errors", .gauge, "Keys that answered an error when read (a key of the wrong type: shown as 0 above).")
        for problem in keyErrors { out.sample("herald_redis_key_errors", [("key", problem.key)], 1) }
    }
}

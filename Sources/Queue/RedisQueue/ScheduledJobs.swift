import Foundation

/// Which jobs of the retry set `herald scheduled` lists or cancels. Every given criterion must hold; within one
/// (several ids, apps, queues) any value may match.
public struct ScheduledFilter: Sendable {
    /// The job's id: the producer's `id`, or the one Herald gave it (its result entries carry it).
    public var ids: Set<String> = []
    /// The `app` the job names.
    public var apps: Set<String> = []
    /// The queue it goes back to (as configured: `herald:queue`, ...).
    public var queues: Set<String> = []
    /// Due at or after / at or before, ms since the epoch.
    public var dueAfter: Int64?
    public var dueBefore: Int64?

    public init() {}

    public var isEmpty: Bool { ids.isEmpty && apps.isEmpty && queues.isEmpty && dueAfter == nil && dueBefore == nil }

    public func matches(_ job: ScheduledJob) -> Bool {
        (ids.isEmpty || job.id.map(ids.contains) == true)
            && (apps.isEmpty || job.app.map(apps.contains) == true)
            && (queues.isEmpty || job.queue.map(queues.contains) == true)
            && (dueAfter.map { job.due >= $0 } ?? true)
            && (dueBefore.map { job.due <= $0 } ?? true)
    }
}

/// One member of `<prefix>:retry` as read: a `deliver_at` job waiting for its time, a retry waiting for its next
/// attempt, or a job of a paused destination. Its exact bytes are what ZREM matches.
public struct ScheduledJob: Sendable {
    public let member: [UInt8]
    /// When the scheduler moves it back to its queue, ms since the epoch.
    public let due: Int64
    public let job: [UInt8]
    /// The attempt it will be (1: not sent yet, a `deliver_at` job or a parked first attempt).
    public let attempt: Int
    public let id: String?
    public let queue: String?
    public let app: String?
    public let token: String?

    public init(member: [UInt8], due: Int64) {
        self.member = member
        self.due = due
        let unwrapped = JobEnvelope.unwrap(member)
        job = unwrapped.job
        attempt = unwrapped.attempt
        queue = unwrapped.queue
        let object = try? JSONSerialization.jsonObject(with: Data(unwrapped.job)) as? [String: Any]
        id = unwrapped.id ?? object?["id"] as? String
        app = object?["app"] as? String
        token = object?["token"] as? String
    }
}

/// What a cancel did.
public struct CancelReport: Sendable, Equatable {
    public var cancelled = 0
    /// No longer in the retry set when the script ran: moved to its queue (it is being sent) or cancelled already.
    public var gone = 0
    public var problems: [QueueKeyProblem] = []
    public init() {}
}

/// Reads the retry set and cancels chosen jobs (`QueueScripts.cancelScheduled`), for `herald scheduled` and
/// tests. Blocking.
public enum ScheduledJobs {
    /// The jobs that match, soonest due first, at most `limit`. Reads in pages of 500.
    public static func select(redis: any BlockingRedisCommands, keys: QueueKeys, filter: ScheduledFilter, limit: Int = .max) throws(RedisError) -> [ScheduledJob] {
        var found: [ScheduledJob] = []
        var start = 0
        let low = filter.dueAfter.map(String.init) ?? "-inf"
        let high = filter.dueBefore.map(String.init) ?? "+inf"
        while found.count < limit {
            let page = try redis.command(["ZRANGE", keys.retry, low, high, "BYSCORE", "LIMIT", String(start), "500", "WITHSCORES"])
            guard let items = page.array, !items.isEmpty else { break }
            var index = 0
            while index + 1 < items.count {
                if let member = items[index].bytes, let score = items[index + 1].string.flatMap(Double.init) {
                    let job = ScheduledJob(member: member, due: Int64(score))
                    if filter.matches(job) { found.append(job) }
                    if found.count >= limit { break }
                }
                index += 2
            }
            if items.count < 1000 { break }
            start += 500
        }
        return found
    }

    /// Takes each job out of the retry set and writes its terminal `cancelled` entry (by `worker`), in one script
    /// per batch: a job the scheduler moves meanwhile is sent, not cancelled, and never both. `indexTTLSeconds`
    /// (`results.index_ttl_seconds`) > 0: the entry goes into the job's result index too, as a worker's would.
    public static func cancel(_ jobs: [ScheduledJob], redis: any BlockingRedisCommands, keys: QueueKeys, worker: String,
                              resultsMaxLength: Int = 1_000_000, indexTTLSeconds: Int = 0) throws(RedisError) -> CancelReport {
        var report = CancelReport()
        let problems = try BatchedScript.run(QueueScripts.cancelScheduled, jobs, redis: redis, what: "cancel", build: { batch in
            var args: [[UInt8]] = [Array(String(resultsMaxLength).utf8), Array(String(batch.count).utf8), Array(String(indexTTLSeconds).utf8)]
            var declared = DeclaredKeys([keys.retry, keys.results])
            for job in batch {
                let entry = ResultEntry(id: job.id ?? "", outcome: .cancelled, reason: "Cancelled: herald scheduled cancel", token: job.token,
                                        app: job.app, attempt: job.attempt, worker: worker)
                let fields = entry.fields
                let once = job.id.map { declared.index(of: keys.once(jobID: $0)) } ?? 0
                args += [job.member, Array(String(once).utf8), Array(String(fields.count * 2).utf8)]
                for (field, value) in fields { args += [Array(field.utf8), Array(value.utf8)] }
                if indexTTLSeconds > 0, let id = job.id, !id.isEmpty {
                    args += [Array(String(declared.index(of: keys.resultIndex(jobID: id))).utf8), Array(entry.indexField.utf8),
                             Array(entry.indexJSON(queue: job.queue ?? "").utf8)]
                } else {
                    args.append(Array("0".utf8))
                }
            }
            return (declared.keys, args)
        }, count: { code in
            if code == 1 { report.cancelled += 1 } else { report.gone += 1 }
        })
        report.problems = problems
        return report
    }
}

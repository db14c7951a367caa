/// Which archived jobs `herald replay` takes. Every given criterion must hold; within one (several reasons,
/// apps, ids) any value may match.
public struct ReplayFilter: Sendable {
    /// Reason prefixes: `MaxAttempts` matches `MaxAttempts:InternalServerError`.
    public var reasons: [String] = []
    public var apps: Set<String> = []
    public var ids: Set<String> = []
    public var outcomes: Set<ResultEntry.Outcome> = []
    /// Archived at or after / at or before, ms since the epoch (the stream id's time).
    public var since: Int64?
    public var until: Int64?

    public init() {}

    public var isEmpty: Bool { reasons.isEmpty && apps.isEmpty && ids.isEmpty && outcomes.isEmpty && since == nil && until == nil }

    public func matches(_ job: ArchivedJob) -> Bool {
        (reasons.isEmpty || reasons.contains { job.reason.hasPrefix($0) })
            && (apps.isEmpty || job.app.map(apps.contains) == true)
            && (ids.isEmpty || ids.contains(job.id))
            && (outcomes.isEmpty || outcomes.contains(job.outcome))
    }
}

/// What a replay did.
public struct ReplayReport: Sendable, Equatable {
    public var replayed = 0
    /// No longer in the archive when the script ran (replayed meanwhile by someone else, or trimmed).
    public var gone = 0
    /// Their queue key holds another type: they stay archived.
    public var stuck = 0
    public var problems: [QueueKeyProblem] = []
    public init() {}
}

/// Reads the failed-job archive and puts chosen jobs back on their queues (`QueueScripts.replay`), for `herald
/// replay` and tests. Blocking.
public enum ArchiveReplay {
    /// The archived jobs that match, oldest first, at most `limit`. Reads in pages of 500 within the time range.
    public static func select(redis: any BlockingRedisCommands, keys: QueueKeys, filter: ReplayFilter, limit: Int = .max) throws(RedisError) -> [(streamID: String, job: ArchivedJob)] {
        var found: [(streamID: String, job: ArchivedJob)] = []
        var start = filter.since.map { String($0) } ?? "-"
        let end = filter.until.map { String($0) } ?? "+"
        while found.count < limit {
            let page = try redis.command(["XRANGE", keys.archive, start, end, "COUNT", "500"])
            guard let items = page.array, !items.isEmpty else { break }
            for item in items {
                guard let (id, job) = ArchivedJob.decode(item) else { continue }
                if filter.matches(job) { found.append((id, job)) }
                if found.count >= limit { break }
            }
            guard items.count == 500, let last = items.last?.array?.first?.string else { break }
            start = "(" + last
        }
        return found
    }

    /// Puts `jobs` back on their queues, in batches of 200 script calls: each with attempt 1 and its id, and a
    /// `replayed` result entry (written by `worker`). A job replayed twice at once goes back once.
    public static func replay(_ jobs: [(streamID: String, job: ArchivedJob)], redis: any BlockingRedisCommands, keys: QueueKeys,
                              worker: String, resultsMaxLength: Int = 1_000_000) throws(RedisError) -> ReplayReport {
        var report = ReplayReport()
        let problems = try BatchedScript.run(QueueScripts.replay, jobs, redis: redis, what: "replay", build: { batch in
            var args: [[UInt8]] = [Array(String(resultsMaxLength).utf8), Array(String(UInt64.random(in: 0...UInt64.max), radix: 36).utf8),
                                   Array(String(batch.count).utf8)]
            // Each job's queue goes in KEYS once per batch; ARGV says where.
            var declared = DeclaredKeys([keys.archive, keys.results, keys.epoch])
            for (streamID, job) in batch {
                let envelope = JobEnvelope.wrap(job: job.job, attempt: 1, id: job.id, queue: job.queue)
                let entry = ResultEntry(id: job.id, outcome: .replayed, reason: "Replayed: " + job.reason, token: job.token, app: job.app,
                                        attempt: 1, worker: worker)
                let fields = entry.fields
                args += [Array(streamID.utf8), Array(String(declared.index(of: job.queue)).utf8), envelope, Array(String(fields.count * 2).utf8)]
                for (field, value) in fields { args += [Array(field.utf8), Array(value.utf8)] }
            }
            return (declared.keys, args)
        }, count: { code in
            switch code {
            case 1: report.replayed += 1
            case -1: report.stuck += 1
            default: report.gone += 1
            }
        })
        report.problems = problems
        return report
    }
}

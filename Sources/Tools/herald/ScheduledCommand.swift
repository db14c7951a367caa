import Basics
import Foundation
import HeraldProviders
import RedisQueue
import Worker

/// `herald scheduled list|show|cancel`: the retry set (`<prefix>:retry` of every shard): `deliver_at` jobs
/// waiting for their time, retries waiting for their next attempt, jobs of paused destinations.
enum ScheduledCommand {
    static let command = Command(
        CommandSpec(
            usageName: "herald scheduled", abstract: "List, show or cancel jobs waiting in the retry set (deliver_at jobs and retries).",
            discussion: """
            The retry set holds jobs whose deliver_at lies ahead, retries waiting for their next attempt and the \
            jobs of paused destinations; herald scheduler moves each back to its queue when it falls due. list \
            prints one line per job (soonest due first); show adds the job's bytes; cancel takes each chosen job \
            out and writes its terminal `cancelled` result entry in the same step, so a job is either sent or \
            cancelled, never both (one the scheduler moved meanwhile counts as no longer scheduled). cancel needs a \
            filter or --all; with --dry-run it lists what it would cancel and changes nothing. Every shard is read \
            (redis.shards). Times: ISO 8601, milliseconds since the epoch, or an age (90s, 30m, 2h, 1d) counted \
            back from now; --due-within takes a duration ahead of now.
            Exits 0, 64 on usage errors.

            Examples:
              herald scheduled list --app shop
              herald scheduled cancel --id promo-2026-12-24 --dry-run
              herald scheduled cancel --app shop --due-within 1h
            """,
            positionals: "list|show|cancel",
            options: redisOptions + [
                .value("id", "id", "Only the job with this id (the producer's id, or the one in its result entries).", repeatable: true),
                .value("app", "name", "Only jobs that name this app.", repeatable: true),
                .value("queue", "key", "Only jobs that go back to this configured queue.", repeatable: true),
                .value("due-after", "time", "Only jobs due at or after this time."),
                .value("due-before", "time", "Only jobs due at or before this time."),
                .value("due-within", "duration", "Only jobs due between now and this far ahead (30m, 2h, 1d)."),
                .value("limit", "n", "At most this many (the soonest due that match)."),
                .flag("all", "cancel: every job of the retry set (when no filter is given)."),
                .flag("dry-run", "cancel: list what would be cancelled; change nothing."),
                .flag("json", "One JSON object per job."),
            ]),
        run: run)

    enum Verb: String { case list, show, cancel }

    static func run(_ args: ParsedArguments) throws -> Int32 {
        guard args.positionals.count == 1, let raw = args.positionals.first else { throw UsageError("give one of list, show, cancel") }
        guard let verb = Verb(rawValue: raw) else { throw UsageError("unknown scheduled command '\(raw)'; expected list, show or cancel") }
        let settings = try redisSettings(args)
        var filter = ScheduledFilter()
        filter.ids = Set(args.all("id"))
        if filter.ids.contains("") { throw UsageError("--id '' names no job") }
        filter.apps = Set(args.all("app"))
        let queues = args.all("queue")
        for queue in queues where !settings.shards.configuredQueues.contains(queue) {
            throw UsageError("--queue \(queue) is not one of the configured queues (\(settings.shards.configuredQueues.joined(separator: ", ")))")
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        filter.dueAfter = try args.value("due-after").map { try ReplayCommand.parseTime($0, now: now, option: "due-after") }
        filter.dueBefore = try args.value("due-before").map { try ReplayCommand.parseTime($0, now: now, option: "due-before") }
        if let within = args.value("due-within") {
            let ahead = try ReplayCommand.parseDuration(within, option: "due-within")
            filter.dueBefore = min(filter.dueBefore ?? .max, now.addingReportingOverflow(ahead).overflow ? .max : now + ahead)
        }
        let limit = try args.int("limit") ?? .max
        if limit < 1 { throw UsageError("--limit must be at least 1") }
        if verb == .cancel && filter.isEmpty && queues.isEmpty && !args.flag("all") {
            throw UsageError("give a filter (--id, --app, --queue, --due-after, --due-before, --due-within) or --all")
        }
        let redis = try settings.connect()
        var chosen: [(keys: QueueKeys, jobs: [ScheduledJob])] = []
        var total = 0
        for shard in settings.shards.shards where total < limit {
            var shardFilter = filter
            // A job's envelope names its queue as this shard spells it.
            shardFilter.queues = Set(queues.map { settings.shards.key($0, inShard: shard.index) ?? $0 })
            let jobs = try ScheduledJobs.select(redis: redis, keys: shard.keys, filter: shardFilter, limit: limit - total)
            chosen.append((shard.keys, jobs))
            total += jobs.count
        }
        let all = chosen.flatMap(\.jobs)
        if verb != .cancel || args.flag("dry-run") {
            for job in all { print(args.flag("json") ? jsonLine(job) : verb == .show ? humanLine(job) + "\n" + String(decoding: job.job, as: UTF8.self) + "\n" : humanLine(job)) }
            if verb == .cancel { printError("\(total) job(s) would be cancelled (dry run: nothing changed)") }
            return ExitCode.success
        }
        let worker = "herald-scheduled@" + defaultWorkerID()
        // The cancelled entry goes into the job's result index too while workers keep one (results.index_ttl_seconds).
        let indexTTLSeconds = try (args.value("config") ?? ProcessInfo.processInfo.environment["HERALD_CONFIG"])
            .map { try ConfigurationLoader.loadSections(["results"], path: $0).results.indexTTLSeconds } ?? 0
        var report = CancelReport()
        for (keys, jobs) in chosen where !jobs.isEmpty {
            let part = try ScheduledJobs.cancel(jobs, redis: redis, keys: keys, worker: worker, indexTTLSeconds: indexTTLSeconds)
            report.cancelled += part.cancelled
            report.gone += part.gone
            report.problems += part.problems
        }
        var summary = "\(report.cancelled) job(s) cancelled"
        if report.gone > 0 { summary += ", \(report.gone) no longer scheduled (moved to their queue meanwhile, or cancelled already)" }
        for problem in report.problems { summary += "\n  \(problem.key) is a \(problem.found), not a \(problem.expected)" }
        print(summary)
        return ExitCode.success
    }

    static func humanLine(_ job: ScheduledJob) -> String {
        var text = "due " + DeadCommand.time(job.due)
        if let id = job.id { text += "  id=\(id)" }
        if let app = job.app { text += " app=\(app)" }
        if let queue = job.queue { text += " queue=\(queue)" }
        return text + " attempt=\(job.attempt) bytes=\(job.job.count)"
    }

    static func jsonLine(_ job: ScheduledJob) -> String {
        var object: [String: Any] = ["due_ms": job.due, "attempt": job.attempt]
        if let id = job.id { object["id"] = id }
        if let app = job.app { object["app"] = app }
        if let queue = job.queue { object["queue"] = queue }
        if let text = String(validating: job.job, as: UTF8.self) { object["job"] = text } else { object["job_base64"] = Data(job.job).base64EncodedString() }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

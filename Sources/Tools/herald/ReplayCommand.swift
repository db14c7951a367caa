import APNs
import Basics
import PushCore
import Foundation
import RedisQueue

/// `herald replay`: puts jobs from the failed-job archive back on their queues.
enum ReplayCommand {
    static let command = Command(
        name: "replay", abstract: "Put archived failed or token_dropped jobs back on their queues.",
        discussion: """
        Jobs that ended failed or token_dropped are archived with their bytes and reason in <prefix>:archive (the \
        newest worker.archive_max_length of them). A replayed job goes to the back of the queue it came from with a \
        fresh attempt count and its id, leaves the archive, and gets a result entry with outcome "replayed"; its new \
        outcomes follow. A job whose queue is not one of the configured queues (redis.queues, or the default queue) \
        is not replayed, since no worker would read it: nothing is replayed until the filter leaves it out or the \
        queue is configured. Give at least one filter, or --all. Times: RFC 3339 (2026-12-01T10:00:00Z), \
        milliseconds since the epoch, or an age such as 90s, 30m, 2h, 1d.

        Examples:
          herald replay --reason MaxAttempts --since 2h --dry-run
          herald replay --app shop --outcome failed --since 2026-12-01T09:00:00Z --until 2026-12-01T10:00:00Z
          herald replay --id order-1234 --id order-1235
        """,
        options: redisOptions + [
            .value("reason", "prefix", "Only jobs whose reason starts with this (MaxAttempts, Expired, BadDeviceToken, ...).", repeatable: true),
            .value("app", "name", "Only jobs of this app.", repeatable: true),
            .value("id", "id", "Only the job with this id.", repeatable: true),
            .value("outcome", "name", "Only failed or token_dropped jobs.", repeatable: true),
            .value("since", "time", "Only jobs archived at or after this time."),
            .value("until", "time", "Only jobs archived at or before this time."),
            .value("limit", "n", "At most this many jobs (oldest first)."),
            .flag("all", "Every archived job (when no filter is given)."),
            .flag("dry-run", "List the jobs that would be replayed; change nothing."),
            .flag("json", "List as JSON lines."),
        ],
        run: run)

    static func run(_ args: ParsedArguments) throws -> Int32 {
        let settings = try redisSettings(args)
        var filter = ReplayFilter()
        filter.reasons = args.all("reason")
        // An empty prefix matches every job: it would stand in for --all without saying so.
        if filter.reasons.contains("") { throw UsageError("--reason needs a reason prefix (MaxAttempts, Expired, ...); use --all for every job") }
        filter.apps = Set(args.all("app"))
        filter.ids = Set(args.all("id"))
        for name in args.all("outcome") {
            guard let outcome = ResultEntry.Outcome(rawValue: name), ArchivedJob.archives(outcome) else {
                throw UsageError("--outcome takes failed or token_dropped, got '\(name)'")
            }
            filter.outcomes.insert(outcome)
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        filter.since = try args.value("since").map { try parseTime($0, now: now, option: "since") }
        filter.until = try args.value("until").map { try parseTime($0, now: now, option: "until") }
        let limit = try args.int("limit") ?? .max
        if limit < 1 { throw UsageError("--limit must be at least 1") }
        if filter.isEmpty && !args.flag("all") { throw UsageError("give a filter (--reason, --app, --id, --outcome, --since, --until) or --all") }
        let redis = try settings.connect()
        // Each shard's archive goes back to that shard's queues; --limit counts over all shards.
        var chosen: [(keys: QueueKeys, jobs: [(streamID: String, job: ArchivedJob)])] = []
        var total = 0
        for shard in settings.shards.shards where total < limit {
            let jobs = try ArchiveReplay.select(redis: redis, keys: shard.keys, filter: filter, limit: limit - total)
            chosen.append((shard.keys, jobs))
            total += jobs.count
        }
        // No worker reads a queue that is not configured: a job pushed there would wait with no outcome.
        var unread: [String: Int] = [:]
        for (shard, part) in zip(settings.shards.shards, chosen) {
            for (_, job) in part.jobs where !shard.queues.contains(job.queue) { unread[job.queue, default: 0] += 1 }
        }
        let unreadText = unread.sorted { $0.key < $1.key }.map { "\($0.key) (\($0.value) job(s))" }.joined(separator: ", ")
        if args.flag("dry-run") {
            for (streamID, job) in chosen.flatMap(\.jobs) { print(args.flag("json") ? jsonLine(streamID, job) : humanLine(streamID, job)) }
            printError("\(total) job(s) would be replayed (dry run: nothing changed)")
            if !unread.isEmpty { printError("but not onto a queue no worker is configured to read: \(unreadText)") }
            return ExitCode.success
        }
        if !unread.isEmpty {
            printError("nothing replayed: no worker is configured to read these queues (redis.queues): \(unreadText); "
                       + "configure them (--config), or narrow the filter to leave those jobs out")
            return ExitCode.failure
        }
        let worker = "herald-replay@" + defaultWorkerID()
        var report = ReplayReport()
        for (keys, jobs) in chosen where !jobs.isEmpty {
            let part = try ArchiveReplay.replay(jobs, redis: redis, keys: keys, worker: worker)
            report.replayed += part.replayed
            report.gone += part.gone
            report.stuck += part.stuck
            report.problems += part.problems
        }
        var summary = "\(report.replayed) job(s) replayed"
        if report.gone > 0 { summary += ", \(report.gone) no longer archived (replayed meanwhile or trimmed)" }
        if report.stuck > 0 { summary += ", \(report.stuck) kept in the archive: their queue key holds another type" }
        for problem in report.problems { summary += "\n  \(problem.key) is a \(problem.found), not a \(problem.expected)" }
        print(summary)
        return report.stuck > 0 ? ExitCode.failure : ExitCode.success
    }

    /// RFC 3339 (the strict reader of jobs' `deliver_at`: no February 30, no +25:00), milliseconds since the
    /// epoch, or an age (`90s`, `30m`, `2h`, `1d`) before `now`; never before the epoch, where no archive entry is.
    static func parseTime(_ text: String, now: Int64, option: String) throws -> Int64 {
        let ms: Int64
        if let given = Int64(text) {
            ms = given
        } else if let unit = text.last.flatMap(ageUnitMilliseconds), let amount = Int64(text.dropLast()), amount >= 0 {
            let (age, overflow) = amount.multipliedReportingOverflow(by: unit)
            ms = overflow ? -1 : now - age
        } else if let time = Timestamp.rfc3339Milliseconds(text) {
            ms = time
        } else {
            throw UsageError("--\(option): '\(text)' is not an RFC 3339 time (2026-12-01T10:00:00Z), milliseconds since the epoch or an age like 30m")
        }
        guard ms >= 0 else { throw UsageError("--\(option): '\(text)' lies before 1970 (the epoch); the archive holds nothing older") }
        return ms
    }

    /// A duration (`90s`, `30m`, `2h`, `1d`) in milliseconds.
    static func parseDuration(_ text: String, option: String) throws -> Int64 {
        guard let unit = text.last.flatMap(ageUnitMilliseconds), let amount = Int64(text.dropLast()), amount >= 0 else {
            throw UsageError("--\(option): '\(text)' is not a duration such as 90s, 30m, 2h or 1d")
        }
        let (ms, overflow) = amount.multipliedReportingOverflow(by: unit)
        guard !overflow else { throw UsageError("--\(option): '\(text)' is too long") }
        return ms
    }

    private static func ageUnitMilliseconds(_ unit: Character) -> Int64? {
        switch unit { case "s": 1000; case "m": 60_000; case "h": 3_600_000; case "d": 86_400_000; default: nil }
    }

    static func humanLine(_ streamID: String, _ job: ArchivedJob) -> String {
        let millis = Int64(streamID.prefix { $0 != "-" }) ?? 0
        let formatter = ISO8601DateFormatter()
        var text = formatter.string(from: Date(timeIntervalSince1970: Double(millis) / 1000)) + "  " + job.outcome.rawValue
        text += "  id=\(job.id) queue=\(job.queue)"
        if let app = job.app { text += " app=\(app)" }
        text += " attempt=\(job.attempt) reason=\(job.reason)"
        return text
    }

    static func jsonLine(_ streamID: String, _ job: ArchivedJob) -> String {
        var object: [String: Any] = ["archive_id": streamID, "id": job.id, "outcome": job.outcome.rawValue, "reason": job.reason,
                                     "queue": job.queue, "attempt": job.attempt, "job": String(decoding: job.job, as: UTF8.self)]
        if let app = job.app { object["app"] = app }
        if let token = job.token { object["token"] = token }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

import Basics
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
        outcomes follow. Give at least one filter, or --all. Times: ISO 8601 (2026-12-01T10:00:00Z), milliseconds \
        since the epoch, or an age such as 90s, 30m, 2h, 1d.

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
        if args.flag("dry-run") {
            for (streamID, job) in chosen.flatMap(\.jobs) { print(args.flag("json") ? jsonLine(streamID, job) : humanLine(streamID, job)) }
            printError("\(total) job(s) would be replayed (dry run: nothing changed)")
            return ExitCode.success
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

    /// ISO 8601, milliseconds since the epoch, or an age (`90s`, `30m`, `2h`, `1d`) before `now`.
    static func parseTime(_ text: String, now: Int64, option: String) throws -> Int64 {
        if let ms = Int64(text) { return ms }
        if let unit = text.last, let amount = Int64(text.dropLast()), amount >= 0 {
            let seconds: Int64? = switch unit { case "s": 1; case "m": 60; case "h": 3600; case "d": 86400; default: nil }
            if let seconds { return now - amount * seconds * 1000 }
        }
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime]] {
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        }
        throw UsageError("--\(option): '\(text)' is not an ISO 8601 time, milliseconds since the epoch or an age like 30m")
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

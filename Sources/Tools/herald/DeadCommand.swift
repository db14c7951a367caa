import Basics
import Foundation
import RedisQueue

/// `herald dead list|show|requeue|purge`: the dead-letter list (`<prefix>:dead` of every shard), without redis-cli.
enum DeadCommand {
    static let command = Command(
        CommandSpec(
            usageName: "herald dead", abstract: "List, show, requeue or purge dead letters (jobs that could not be read).",
            discussion: """
            Jobs that cannot be parsed or validated go to <prefix>:dead with the reason and the producer's bytes (see \
            docs/results.md). list prints one line per dead letter (oldest first); show prints each whole, job \
            included; requeue pushes each job, exactly as the producer wrote it, onto a queue (as a producer does) and \
            takes it off the list in the same step, so a fixed producer's mistake (an app added since, a worker \
            upgraded) can be sent; purge removes them. requeue and purge need a filter or --all; with --dry-run they \
            list what they would do and change nothing. Every shard is read (redis.shards); a requeued job goes to its \
            own shard's copy of the queue. Times: ISO 8601, milliseconds since the epoch, or an age (90s, 30m, 2h, 1d).
            Exits 0, 1 when some letters were kept (a queue key of another type, a truncated job), 64 on usage errors.

            Examples:
              herald dead list --reason unknown_app --since 1h
              herald dead requeue --app shop --dry-run
              herald dead purge --until 7d
            """,
            positionals: "list|show|requeue|purge",
            options: redisOptions + [
                .value("reason", "prefix", "Only dead letters whose reason starts with this (bad_token, unknown_app, ...).", repeatable: true),
                .value("app", "name", "Only jobs that name this app.", repeatable: true),
                .value("id", "id", "Only the job with this id.", repeatable: true),
                .value("since", "time", "Only dead letters written at or after this time."),
                .value("until", "time", "Only dead letters written at or before this time (an age: older than it)."),
                .value("limit", "n", "At most this many (the newest that match)."),
                .value("queue", "key", "requeue: the configured queue to push onto (default the first of redis.queues)."),
                .flag("all", "requeue, purge: every dead letter (when no filter is given)."),
                .flag("dry-run", "requeue, purge: list what would change; change nothing."),
                .flag("json", "One JSON object per dead letter."),
            ]),
        run: run)

    enum Verb: String { case list, show, requeue, purge }

    static func run(_ args: ParsedArguments) throws -> Int32 {
        guard args.positionals.count == 1, let raw = args.positionals.first else { throw UsageError("give one of list, show, requeue, purge") }
        guard let verb = Verb(rawValue: raw) else { throw UsageError("unknown dead command '\(raw)'; expected list, show, requeue or purge") }
        let settings = try redisSettings(args)
        var filter = DeadLetterFilter()
        filter.reasons = args.all("reason")
        if filter.reasons.contains("") { throw UsageError("--reason '' would match every dead letter; give --all for that") }
        filter.apps = Set(args.all("app"))
        filter.ids = Set(args.all("id"))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        filter.since = try args.value("since").map { try ReplayCommand.parseTime($0, now: now, option: "since") }
        filter.until = try args.value("until").map { try ReplayCommand.parseTime($0, now: now, option: "until") }
        let limit = try args.int("limit") ?? .max
        if limit < 1 { throw UsageError("--limit must be at least 1") }
        let changes = verb == .requeue || verb == .purge
        if changes && filter.isEmpty && !args.flag("all") { throw UsageError("give a filter (--reason, --app, --id, --since, --until) or --all") }
        // The queue as configured; each shard has its own copy of it.
        let queue = args.value("queue") ?? settings.shards.configuredQueues.first ?? settings.keys.queue
        if verb == .requeue && !settings.shards.configuredQueues.contains(queue) {
            throw UsageError("--queue \(queue) is not one of the configured queues (\(settings.shards.configuredQueues.joined(separator: ", "))): no worker would read it")
        }
        let redis = try settings.connect()
        var chosen: [(shard: QueueShards.Shard, letters: [DeadLetter])] = []
        var total = 0
        for shard in settings.shards.shards where total < limit {
            let letters = try DeadLetters.select(redis: redis, keys: shard.keys, filter: filter, limit: limit - total)
            chosen.append((shard, letters))
            total += letters.count
        }
        let all = chosen.flatMap(\.letters)
        if !changes || args.flag("dry-run") {
            for letter in all { print(args.flag("json") ? jsonLine(letter) : verb == .show ? showText(letter) : humanLine(letter)) }
            if changes { printError("\(total) dead letter(s) would be \(verb == .requeue ? "requeued onto \(queue)" : "purged") (dry run: nothing changed)") }
            return ExitCode.success
        }
        var report = DeadLetterReport()
        var truncated = 0
        for (shard, letters) in chosen where !letters.isEmpty {
            let part: DeadLetterReport
            if verb == .requeue {
                let sendable = letters.filter(\.requeueable)
                truncated += letters.count - sendable.count
                let shardQueue = settings.shards.key(queue, inShard: shard.index) ?? queue
                part = try DeadLetters.requeue(sendable, redis: redis, keys: shard.keys, queue: shardQueue)
            } else {
                part = try DeadLetters.purge(letters, redis: redis, keys: shard.keys)
            }
            report.done += part.done
            report.gone += part.gone
            report.kept += part.kept
            report.problems += part.problems
        }
        var summary = "\(report.done) dead letter(s) \(verb == .requeue ? "requeued onto \(queue)" : "purged")"
        if report.gone > 0 { summary += ", \(report.gone) no longer listed (requeued or purged meanwhile, or trimmed)" }
        if truncated > 0 { summary += ", \(truncated) kept: their job was truncated when it was dead-lettered" }
        if report.kept > 0 { summary += ", \(report.kept) kept: the queue key holds another type" }
        for problem in report.problems { summary += "\n  \(problem.key) is a \(problem.found), not a \(problem.expected)" }
        print(summary)
        return report.kept > 0 || truncated > 0 ? ExitCode.failure : ExitCode.success
    }

    static func time(_ millis: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
    }

    static func humanLine(_ letter: DeadLetter) -> String {
        var text = time(letter.entry.at)
        if let id = letter.entry.id { text += "  id=\(id)" }
        if let app = letter.app { text += " app=\(app)" }
        text += " bytes=\(letter.entry.originalLength)" + (letter.entry.truncated ? " (truncated)" : "")
        return text + " reason=\(letter.entry.reason)"
    }

    static func showText(_ letter: DeadLetter) -> String {
        humanLine(letter) + "\n" + String(decoding: letter.entry.job, as: UTF8.self) + "\n"
    }

    static func jsonLine(_ letter: DeadLetter) -> String {
        var object: [String: Any] = ["at": letter.entry.at, "reason": letter.entry.reason, "job_bytes": letter.entry.originalLength,
                                     "truncated": letter.entry.truncated]
        if let id = letter.entry.id { object["id"] = id }
        if let app = letter.app { object["app"] = app }
        if let text = String(validating: letter.entry.job, as: UTF8.self) { object["job"] = text } else { object["job_base64"] = Data(letter.entry.job).base64EncodedString() }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

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
            own shard's copy of the queue. Times: ISO 8601, milliseconds since the epoch, or an age (90s, 30m, 2h, 1d). \
            A purge or requeue is one pass over the list, a page at a time (one pass per shard at a time); with \
            --id it and list and show use the index instead. SIGINT or SIGTERM stops after the page in progress: what was done is reported, the rest is \
            still listed; exit 130 or 143.
            Exits 0, 1 when some letters were kept (a queue key of another type, a truncated job) or another pass was \
            running, 64 on usage errors.

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
        // SIGINT/SIGTERM: stop after the page or step in progress, put back what a pass has not looked at, report
        // what was done, exit 130/143; a second one exits at once.
        let stop = StopRequest()
        let watcher = SignalWatcher(onSignal: { stop.request(signal: $0) }, onSecond: { exit(128 + $0) })
        defer { withExtendedLifetime(watcher) {} }
        let stopped = { stop.signal != nil }
        let json = args.flag("json")
        let printLetter = { (letter: DeadLetter) in print(json ? jsonLine(letter) : verb == .show ? showText(letter) : humanLine(letter)) }
        if !changes || args.flag("dry-run") {
            // Oldest first, a page at a time; with --limit the newest that match (held, then printed).
            var total = 0
            if limit == .max {
                for shard in settings.shards.shards where !stopped() {
                    total += try DeadLetters.each(redis: redis, keys: shard.keys, filter: filter, stop: stopped, printLetter)
                }
            } else {
                for shard in settings.shards.shards where total < limit && !stopped() {
                    let letters = try DeadLetters.select(redis: redis, keys: shard.keys, filter: filter, limit: limit - total)
                    letters.forEach(printLetter)
                    total += letters.count
                }
            }
            if changes { printError("\(total) dead letter(s) would be \(verb == .requeue ? "requeued onto \(queue)" : "purged") (dry run: nothing changed)") }
            if let signal = stop.signal {
                printError("herald dead \(verb.rawValue): stopped by \(signalName(signal)) after \(total) dead letter(s)")
                return 128 + signal
            }
            return ExitCode.success
        }
        var report = DeadLetterReport()
        // With --id, the letters of those ids found through the index and each taken off the list where it is (one
        // LREM from the nearer end: about 5 ms for the middle of 200,000 letters, measured), nothing else read or
        // moved (issue 54: --id made a pass over the whole list). Otherwise one pass per shard, a page a step.
        for shard in settings.shards.shards where !stopped() {
            let left = limit == .max ? .max : limit - report.done - report.truncated - report.kept
            if left <= 0 { break }
            let shardQueue = settings.shards.key(queue, inShard: shard.index) ?? queue
            let part: DeadLetterReport
            if !filter.ids.isEmpty {
                let letters = Array(try DeadLetters.find(redis: redis, keys: shard.keys, ids: filter.ids).filter(filter.matches).suffix(left))
                part = verb == .requeue ? try DeadLetters.requeue(letters, redis: redis, keys: shard.keys, queue: shardQueue)
                                        : try DeadLetters.purge(letters, redis: redis, keys: shard.keys)
            } else {
                let action: DeadLetterAction = verb == .requeue ? .requeue(queue: shardQueue) : .purge
                part = try DeadLetters.sweep(redis: redis, keys: shard.keys, filter: filter, limit: left, action: action, stop: stopped)
            }
            if part.busy {
                printError("herald dead \(verb.rawValue): another purge or requeue is running on \(shard.keys.dead) (\(shard.keys.deadLock)); try again when it ends")
            }
            report.add(part)
        }
        var summary = "\(report.done) dead letter(s) \(verb == .requeue ? "requeued onto \(queue)" : "purged")"
        if report.gone > 0 { summary += ", \(report.gone) no longer listed (requeued or purged meanwhile, or trimmed)" }
        if report.truncated > 0 { summary += ", \(report.truncated) kept: their job was truncated when it was dead-lettered" }
        if report.kept > 0 { summary += ", \(report.kept) kept: the queue key holds another type" }
        if let signal = stop.signal { summary += "; stopped by \(signalName(signal)): the letters not yet looked at are still listed" }
        for problem in report.problems { summary += "\n  \(problem.key) is a \(problem.found), not a \(problem.expected)" }
        print(summary)
        if let signal = stop.signal { return 128 + signal }
        return report.kept > 0 || report.truncated > 0 || report.busy ? ExitCode.failure : ExitCode.success
    }

    static func signalName(_ signal: Int32) -> String { signal == SIGINT ? "SIGINT" : "SIGTERM" }

    /// One formatter for every line: making one costs more than the rest of a line.
    nonisolated(unsafe) static let formatter = ISO8601DateFormatter()

    static func time(_ millis: Int64) -> String {
        formatter.string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
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

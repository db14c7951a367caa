import Basics
import Foundation
import RedisQueue

/// `herald stats`: one look at the queue's state.
enum StatsCommand {
    static let command = Command(
        name: "stats", abstract: "Show queue lengths, leases, retries, recent outcomes, dead letters and the failed-job archive.",
        options: redisOptions + [.flag("json", "Print one JSON object instead of a table.")],
        run: run)

    static func run(_ args: ParsedArguments) throws -> Int32 {
        let settings = try redisSettings(args)
        let redis = try settings.connect()
        let (stats, perShard) = try QueueStats.read(redis: redis, shards: settings.shards)
        // A key of the wrong type is named and counted as 0; the rest is reported all the same. Exit 0 still:
        // readiness probes run this command, and a stray key does not make the queue unusable.
        for problem in stats.keyErrors { printError("herald stats: \(problem) (counted as 0)") }
        if args.flag("json") {
            var object: [String: Any] = [
                "queues": stats.queueLengths, "live_workers": stats.liveWorkers, "expired_workers": stats.expiredWorkers,
                "leases_in_flight": stats.leasesInFlight,
                "retry": ["due_now": stats.retryDueNow, "next_minute": stats.retryDueNextMinute,
                          "next_hour": stats.retryDueNextHour, "later": stats.retryDueLater],
                "dead_letters": stats.deadLetters, "results_length": stats.resultsLength,
                "dropped_tokens_length": stats.droppedTokensLength, "dropped_channels_length": stats.droppedChannelsLength,
                "archive_length": stats.archiveLength,
                "outcomes_last_minute": stats.outcomesLastMinute, "outcomes_last_hour": stats.outcomesLastHour,
                "outcomes_truncated": stats.outcomesTruncated,
                "key_errors": stats.keyErrors.map { ["key": $0.key, "error": $0.message] },
            ]
            if perShard.count > 1 {
                object["shards"] = zip(settings.shards.shards, perShard).map { shard, stats -> [String: Any] in
                    ["prefix": shard.keys.prefix, "queues": stats.queueLengths, "leases_in_flight": stats.leasesInFlight,
                     "retry": stats.retryDueNow + stats.retryDueNextMinute + stats.retryDueNextHour + stats.retryDueLater,
                     "dead_letters": stats.deadLetters, "results_length": stats.resultsLength,
                     "outcomes_last_minute": stats.outcomesLastMinute]
                }
            }
            printJSON(object)
            return ExitCode.success
        }
        var lines: [String] = []
        for key in settings.shards.configuredQueues { lines.append(row("queue \(key)", stats.queueLengths[key] ?? 0)) }
        lines.append(row("workers alive", stats.liveWorkers))
        if stats.expiredWorkers > 0 { lines.append(row("workers presumed dead", stats.expiredWorkers)) }
        lines.append(row("leases in flight", stats.leasesInFlight))
        lines.append(row("retries due now", stats.retryDueNow))
        lines.append(row("retries due < 1 min", stats.retryDueNextMinute))
        lines.append(row("retries due < 1 hour", stats.retryDueNextHour))
        lines.append(row("retries due later", stats.retryDueLater))
        lines.append(row("dead letters", stats.deadLetters))
        lines.append(row("results stream length", stats.resultsLength))
        lines.append(row("dropped tokens stream length", stats.droppedTokensLength))
        lines.append(row("dropped channels stream length", stats.droppedChannelsLength))
        lines.append(row("failed-job archive length", stats.archiveLength))
        let outcomes = ResultEntry.Outcome.allCases.map(\.rawValue)
        lines.append("")
        lines.append("outcome".padding(toLength: 16, withPad: " ", startingAt: 0) + "last minute".leftPad(12) + "last hour".leftPad(12))
        for outcome in outcomes {
            lines.append(outcome.padding(toLength: 16, withPad: " ", startingAt: 0)
                + String(stats.outcomesLastMinute[outcome] ?? 0).leftPad(12) + String(stats.outcomesLastHour[outcome] ?? 0).leftPad(12))
        }
        if stats.outcomesTruncated { lines.append("(outcome counts cover only the newest entries of a busy stream)") }
        if perShard.count > 1 { lines += shardTable(settings.shards, perShard) }
        print(lines.joined(separator: "\n"))
        return ExitCode.success
    }

    /// Per shard: what is queued, leased, waiting to retry, dead, and finished in the last minute.
    private static func shardTable(_ shards: QueueShards, _ perShard: [QueueStats]) -> [String] {
        var lines = ["", "shard".padding(toLength: 20, withPad: " ", startingAt: 0) + "queued".leftPad(10) + "leased".leftPad(10)
            + "retries".leftPad(10) + "dead".leftPad(10) + "done/min".leftPad(10)]
        for (shard, stats) in zip(shards.shards, perShard) {
            let retries = stats.retryDueNow + stats.retryDueNextMinute + stats.retryDueNextHour + stats.retryDueLater
            lines.append(shard.keys.prefix.padding(toLength: 20, withPad: " ", startingAt: 0)
                + String(stats.queueLengths.values.reduce(0, +)).leftPad(10) + String(stats.leasesInFlight).leftPad(10)
                + String(retries).leftPad(10) + String(stats.deadLetters).leftPad(10)
                + String(stats.outcomesLastMinute.values.reduce(0, +)).leftPad(10))
        }
        return lines
    }

    private static func row(_ label: String, _ value: Int) -> String {
        label.padding(toLength: 32, withPad: " ", startingAt: 0) + String(value).leftPad(10)
    }
}

extension String {
    func leftPad(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}

import Basics
import Foundation
import Reactor
import RedisQueue

/// The fair-share measurement: while a worker drains a backlog from one queue, pushes `--count` jobs to another
/// (paced at `--rate`), and reports how long each took from its push to its result, and how much of the backlog
/// was still queued when the last of them finished (it must not have waited for the backlog).
enum FairShareCommand {
    static let command = Command(
        bench: "fair-share", abstract: "Push jobs to a second queue behind a backlog; report push-to-result latency.",
        options: [
            .value("redis", "url", "Redis URL (required)."),
            .value("queue", "key", "Queue key to push the measured jobs onto (required)."),
            .value("backlog-queue", "key", "The backlogged queue, for its length (required)."),
            .value("results", "key", "Results stream (default herald:results)."),
            .value("count", "n", "Measured jobs (default 1000)."),
            .value("rate", "per-second", "Their pace (default 200)."),
            .value("timeout", "seconds", "Give up after this long (default 120)."),
        ],
        run: run)

    static func run(_ flags: ParsedArguments) throws {
        let url = try RedisURL(parsing: try flags.required("redis"))
        let queue = try flags.required("queue")
        let backlogQueue = try flags.required("backlog-queue")
        let results = flags.value("results") ?? "herald:results"
        let count = try flags.int("count", default: 1000)
        let rate = max(1, try flags.double("rate", default: 200))
        let timeout = try flags.double("timeout", default: 120)
        let started = monotonicNanos()
        let deadline = started &+ UInt64(timeout * 1e9)
        // Rides out Redis restarting (scripts/bench-campaign's faults run).
        let redis = ReconnectingRedis(url: url, deadline: deadline)
        defer { redis.close() }
        let first = 50_000_000
        let backlogAtStart = Int(try redis.command(["LLEN", backlogQueue]).int ?? 0)
        var lastID = StreamEntry.entries(try redis.command(["XREVRANGE", results, "+", "-", "COUNT", "1"])).first?.id ?? "0-0"
        var pushedAt: [String: Int64] = [:]
        var pushed = 0
        var pushToResult: [Int64] = []
        var claimToResult: [Int64] = []
        var delivered = 0
        var backlogLeft = -1
        while pushToResult.count < count && monotonicNanos() < deadline {
            let due = min(count, Int(Double(monotonicNanos() &- started) / 1e9 * rate) + 1)
            if due > pushed {
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                var args = [Array("LPUSH".utf8), Array(queue.utf8)]
                for i in pushed..<due {
                    args.append(Array(BenchJobs.job(first + i).utf8))
                    pushedAt["b\(first + i)"] = now
                }
                _ = try redis.command(args)
                pushed = due
            }
            let reply = try redis.command(["XREAD", "COUNT", "20000", "STREAMS", results, lastID])
            let entries = StreamEntry.entries(readReply: reply)
            for entry in entries {
                lastID = entry.id
                guard let id = entry["id"], let at = pushedAt[id], entry["outcome"] != "retrying" else { continue }
                pushedAt[id] = nil
                pushToResult.append(entry.milliseconds - at)
                claimToResult.append(Int64(entry["latency_ms"] ?? "0") ?? 0)
                if entry["outcome"] == "delivered" { delivered += 1 }
                if pushToResult.count == count { backlogLeft = Int(try redis.command(["LLEN", backlogQueue]).int ?? 0) }
            }
            if entries.isEmpty { usleep(2000) }
        }
        func percentile(_ values: [Int64], _ p: Double) -> Int64 {
            let sorted = values.sorted()
            guard !sorted.isEmpty else { return 0 }
            return sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)]
        }
        printJSONLine([
            "count": count, "finished": pushToResult.count, "delivered": delivered, "timed_out": pushToResult.count < count,
            "backlog_at_start": backlogAtStart, "backlog_left": backlogLeft,
            "push_to_result_p50_ms": percentile(pushToResult, 0.5), "push_to_result_p99_ms": percentile(pushToResult, 0.99),
            "push_to_result_max_ms": pushToResult.max() ?? 0, "claim_to_result_p99_ms": percentile(claimToResult, 0.99),
        ])
    }
}

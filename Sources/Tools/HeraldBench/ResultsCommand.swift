import Basics
import Foundation
import Reactor
import RedisQueue

/// Reads the results stream once `--expect` entries are there: throughput from the first claim (first
/// entry's time minus its latency) to the last result (last entry's id time), and claim-to-result latency
/// percentiles over every entry.
enum ResultsCommand {
    static let command = Command(
        bench: "results", abstract: "Wait for N result entries, then report rate and latency.",
        options: [
            .value("redis", "url", "Redis URL (required)."),
            .value("key", "key", "Results stream key (required)."),
            .value("expect", "n", "Entries to wait for (default 0)."),
            .value("timeout", "seconds", "Give up after this long (default 300)."),
        ],
        run: run)

    static func run(_ flags: ParsedArguments) throws {
        let url = try RedisURL(parsing: try flags.required("redis"))
        let key = try flags.required("key")
        let expect = try flags.int("expect", default: 0)
        let timeout = try flags.double("timeout", default: 300)
        let redis = try BlockingRedis(url: url)
        defer { redis.close() }

        let deadline = monotonicNanos() &+ UInt64(timeout * 1e9)
        var length = 0
        var timedOut = false
        while true {
            length = Int(try redis.command(["XLEN", key]).int ?? 0)
            if length >= expect { break }
            if monotonicNanos() > deadline { timedOut = true; break }
            usleep(20_000)
        }

        var latencies: [Int] = []
        latencies.reserveCapacity(length)
        var outcomes: [String: Int] = [:]
        var firstClaimMs = Int64.max
        var lastResultMs = Int64.min
        var start = "-"
        var entries = 0
        while true {
            let page = try redis.command(["XRANGE", key, start, "+", "COUNT", "10000"])
            if let message = page.errorMessage { throw BenchError("XRANGE failed: \(message)") }
            let items = StreamEntry.entries(page)
            guard !items.isEmpty else { break }
            for item in items {
                entries += 1
                let latency = item["latency_ms"].flatMap { Int($0) } ?? 0
                if let outcome = item["outcome"] { outcomes[outcome, default: 0] += 1 }
                latencies.append(latency)
                firstClaimMs = min(firstClaimMs, item.milliseconds - Int64(latency))
                lastResultMs = max(lastResultMs, item.milliseconds)
                start = "(" + item.id
            }
            if items.count < 10000 { break }
        }
        latencies.sort()
        func percentile(_ p: Double) -> Int {
            guard !latencies.isEmpty else { return 0 }
            return latencies[min(latencies.count - 1, Int((p * Double(latencies.count)).rounded(.up)) - 1)]
        }
        let spanMs = entries > 0 ? max(1, lastResultMs - firstClaimMs) : 0
        printJSONLine([
            "entries": entries, "expected": expect, "timed_out": timedOut, "outcomes": outcomes,
            "delivered": outcomes["delivered"] ?? 0, "span_ms": spanMs,
            "per_s": spanMs > 0 ? (Double(entries) * 1000 / Double(spanMs)).rounded() : 0,
            "p50_ms": percentile(0.50), "p90_ms": percentile(0.90), "p99_ms": percentile(0.99),
            "max_ms": latencies.last ?? 0,
            // Absolute times, so runs over several streams (shards) can be combined into one span.
            "first_claim_ms": entries > 0 ? firstClaimMs : 0, "last_result_ms": entries > 0 ? lastResultMs : 0,
        ])
    }
}

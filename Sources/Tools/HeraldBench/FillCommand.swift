import Basics
import Foundation
import PushCore
import Reactor
import RedisQueue

/// LPUSHes benchmark jobs: as fast as Redis takes them (the queue is full before the worker starts), or
/// paced at `--rate` jobs per second for the latency-at-half-rate run.
enum FillCommand {
    static let command = Command(
        bench: "fill", abstract: "LPUSH benchmark jobs (paced at --rate per second when given).",
        options: [
            .value("redis", "url", "Redis URL (required)."),
            .value("queue", "key", "Queue key to push onto (required)."),
            .value("count", "n", "How many jobs (default 0)."),
            .value("first", "i", "Index of the first job (default 0)."),
            .value("rate", "per-second", "Pace the pushes at this rate (default 0: as fast as Redis takes them)."),
            .value("platform", Platform.allCases.map(\.rawValue).joined(separator: "|"), "Job kind (default apns)."),
            .value("subscriptions", "file", "webpush: the subscriptions to cycle through (herald mock-webpush --subscriptions-file)."),
            .value("tokens-per-job", "n", "hms: device tokens in each job's message.token list, 1...1000 (default 1)."),
        ],
        run: run)

    static func run(_ flags: ParsedArguments) throws {
        let url = try RedisURL(parsing: try flags.required("redis"))
        let queue = try flags.required("queue")
        let count = try flags.int("count", default: 0)
        let first = try flags.int("first", default: 0)
        let rate = try flags.double("rate", default: 0)
        let makeJob = try BenchJobs.maker(try flags.choice("platform", Platform.allCases) ?? .apns, flags)
        let redis = try BlockingRedis(url: url)
        defer { redis.close() }
        let key = Array(queue.utf8)
        let started = monotonicNanos()
        var pushed = 0

        /// One LPUSH of jobs first+pushed ..< first+pushed+n.
        func command(_ n: Int) -> [[UInt8]] {
            var args: [[UInt8]] = [Array("LPUSH".utf8), key]
            args.reserveCapacity(n + 2)
            for i in 0..<n { args.append(Array(makeJob(first + pushed + i).utf8)) }
            pushed += n
            return args
        }

        if rate == 0 {
            while pushed < count {
                var commands: [[[UInt8]]] = []
                for _ in 0..<8 where pushed < count { commands.append(command(min(1000, count - pushed))) }
                for reply in try redis.pipeline(rawCommands: commands) {
                    if let message = reply.errorMessage { throw BenchError("LPUSH failed: \(message)") }
                }
            }
        } else {
            // Every 2 ms push what the schedule says is due by now: smooth at any rate, no drift.
            while pushed < count {
                let elapsed = Double(monotonicNanos() &- started) / 1e9
                let due = min(count, Int(elapsed * rate) + 1)
                if due > pushed {
                    let reply = try redis.command(command(due - pushed))
                    if let message = reply.errorMessage { throw BenchError("LPUSH failed: \(message)") }
                }
                usleep(2000)
            }
        }
        let seconds = Double(monotonicNanos() &- started) / 1e9
        printJSONLine(["pushed": pushed, "seconds": seconds, "per_s": seconds > 0 ? Double(pushed) / seconds : 0])
    }
}

import APNs
import Basics
import Foundation
import PushCore
import Reactor
import RedisQueue

/// One multicast job of `--tokens` tokens. `--push` only LPUSHes it (a worker then fans it out and sends every
/// token: scripts/bench times that). Without it, the fan-out alone: claim the job and complete it with its
/// expansion in one script call, timed, then delete what it made (the Redis side of the fan-out rate).
enum MulticastCommand {
    static let command = Command(
        bench: "multicast", abstract: "One multicast job: push it for a worker, or time its fan-out script alone.",
        options: [
            .value("redis", "url", "Redis URL (required)."),
            .value("tokens", "n", "Tokens in the job (default 10000)."),
            .value("prefix", "prefix", "Key prefix (default herald)."),
            .flag("push", "Only push the job onto <prefix>:queue."),
        ],
        run: run)

    static func job(tokens: Int) -> [UInt8] {
        let list = (0..<tokens).map { "\"\(BenchJobs.token($0))\"" }.joined(separator: ",")
        return Array("{\"id\":\"multicast-bench\",\"tokens\":[\(list)],\"topic\":\"\(BenchJobs.topic)\",\"payload\":\(BenchJobs.payload(0))}".utf8)
    }

    static func run(_ flags: ParsedArguments) throws {
        let url = try RedisURL(parsing: try flags.required("redis"))
        let count = try flags.int("tokens", default: 10_000)
        guard (1...JobParser.maxTokens).contains(count) else { fail("--tokens must be 1...\(JobParser.maxTokens)", status: 64) }
        let keys = try QueueKeys(prefix: flags.value("prefix") ?? "herald")
        let redis = try BlockingRedis(url: url)
        defer { redis.close() }
        let bytes = job(tokens: count)
        if flags.flag("push") {
            _ = try redis.command([Array("LPUSH".utf8), Array(keys.queue.utf8), bytes])
            return printJSONLine(["pushed": 1, "tokens": count, "job_bytes": bytes.count])
        }
        let spec = try JobParser.parse(bytes)
        guard let tokens = spec.uniqueTokens, let parts = spec.tokenJobParts(of: bytes) else { fail("not a multicast job", status: 1) }
        let queueKey = keys.queue(named: "multicast-bench-\(getpid())")
        _ = try redis.command([Array("LPUSH".utf8), Array(queueKey.utf8), bytes])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "bench-multicast-\(getpid())", queueKeys: [queueKey])
        guard let lease = try queue.claim(max: 1).first else { fail("the job was not claimed", status: 1) }
        var completion = JobCompletion(lease: lease)
        completion.expansion = Expansion(jobID: "multicast-bench", tokens: tokens, jobPrefix: parts.prefix, jobSuffix: parts.suffix)
        let started = monotonicNanos()
        let report = try queue.complete([completion])
        let seconds = Double(monotonicNanos() &- started) / 1e9
        let made = try redis.command(["LLEN", queueKey]).int ?? 0
        _ = try redis.command(["DEL", queueKey])
        _ = try queue.retire()
        guard report.applied == 1, made == tokens.count else { fail("fan-out made \(made) of \(tokens.count) jobs", status: 1) }
        printJSONLine(["tokens": tokens.count, "fanout_ms": (seconds * 1e6).rounded() / 1e3,
                       "fanout_tokens_per_s": (Double(tokens.count) / seconds).rounded(), "job_bytes": bytes.count])
    }
}

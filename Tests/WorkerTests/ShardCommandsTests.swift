import Foundation
import HeraldTestSupport
import RedisQueue
import Testing

/// The `herald` tools over several shards on one real Redis: enqueue spreads by job id, stats sums and lists
/// every shard, the scheduler moves each shard's due retries, tail follows every shard's results.
@Suite struct ShardCommandsTests {
    @Test(.timeLimit(.minutes(2)))
    func enqueueSpreadsByJobIDAndStatsSchedulerAndTailSeeEveryShard() throws {
        guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is not built") }
        let server = sharedRedisURL == nil ? try RedisServer() : nil
        defer { server?.stop() }
        let url = sharedRedisURL ?? server!.url
        let prefix = "sc\(UInt32.random(in: 0...UInt32.max))"
        let shards = try QueueShards(basePrefix: prefix, prefixes: QueueShards.defaultPrefixes(prefix: prefix, count: 3))
        let redis = try BlockingRedis(url: try RedisURL(parsing: url))
        let common = ["--redis", url, "--prefix", prefix, "--shards", "3"]

        let token = String(repeating: "ab", count: 32)
        let withID = (0..<60).map { #"{"id":"order-\#($0)","token":"\#(token)","payload":{"aps":{"alert":"hi"}}}"# }
        let withoutID = (0..<6).map { _ in #"{"token":"\#(token)","payload":{"aps":{"alert":"anon"}}}"# }
        let file = makeTemporaryDirectory("herald-shards") + "/jobs.jsonl"
        try ((withID + withoutID).joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let enqueue = try HeraldRun.run(herald: herald, ["enqueue"] + common + ["--file", file])
        #expect(enqueue.status == 0, "\(enqueue.output)")
        var expected = [2, 2, 2]  // the six without an id go round the shards
        for n in 0..<60 { expected[shards.shard(forJobID: "order-\(n)")] += 1 }
        let lengths = try shards.shards.map { Int(try redis.command(["LLEN", $0.queues[0]]).int ?? -1) }
        #expect(lengths == expected, "each job in the shard its id hashes to")
        #expect(enqueue.output.contains(#""shards":[\#(expected.map(String.init).joined(separator: ","))]"#), "\(enqueue.output)")
        let queued = try redis.command(["LRANGE", shards.shards[shards.shard(forJobID: "order-7")].queues[0], "0", "-1"]).array?.compactMap(\.string) ?? []
        #expect(queued.contains { $0.contains(#""id":"order-7""#) })

        let stats = try HeraldRun.run(herald: herald, ["stats"] + common + ["--json"])
        #expect(stats.status == 0, "\(stats.output)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(stats.output.utf8)) as? [String: Any])
        #expect((object["queues"] as? [String: Int])?["\(prefix):queue"] == 66, "the sum over the shards: \(stats.output)")
        let perShard = try #require(object["shards"] as? [[String: Any]])
        #expect(perShard.compactMap { ($0["queues"] as? [String: Int])?.values.reduce(0, +) } == expected)

        // A retry due now in shard 1 only: the scheduler's pass over every shard moves it to shard 1's queue.
        let envelope = JobEnvelope.wrap(job: Array(withID[0].utf8), attempt: 2, id: "order-0", queue: shards.shards[1].queues[0])
        _ = try redis.command([Array("ZADD".utf8), Array(shards.shards[1].keys.retry.utf8), Array("0".utf8), envelope])
        let scheduler = try HeraldRun.run(herald: herald, ["scheduler"] + common + ["--once"])
        #expect(scheduler.status == 0 && scheduler.output.contains(#""moved":1"#), "\(scheduler.output)")
        #expect(try redis.command(["LLEN", shards.shards[1].queues[0]]).int == Int64(expected[1] + 1))

        for (index, shard) in shards.shards.enumerated() {
            _ = try redis.command(["XADD", shard.keys.results, "*", "id", "done-\(index)", "outcome", "delivered", "status", "200"])
        }
        let tail = try HeraldRun.run(herald: herald, ["tail"] + common + ["--from-start", "--count", "3", "--json"])
        #expect(tail.status == 0, "\(tail.output)")
        for index in 0..<3 { #expect(tail.output.contains("done-\(index)"), "every shard's results: \(tail.output)") }

        let outside = try HeraldRun.run(herald: herald, ["enqueue"] + common + ["--file", file, "--queue", "elsewhere"])
        #expect(outside.status == 64 && outside.output.contains("not under the prefix"), "\(outside.output)")
        for shard in shards.shards {
            _ = try redis.command(["DEL", shard.queues[0], shard.keys.results, shard.keys.retry, shard.keys.epoch])
        }
    }

    /// Issue 30: with one shard's queue key a string, enqueue exited 1 with an unnamed WRONGTYPE after pushing
    /// part of the input (a re-run sent those twice), stats failed whole and the dashboard's /metrics said 503.
    @Test(.timeLimit(.minutes(2)))
    func aWrongTypedShardQueueIsNamedAndTheOtherShardsGoOn() throws {
        guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is not built") }
        let server = sharedRedisURL == nil ? try RedisServer() : nil
        defer { server?.stop() }
        let url = sharedRedisURL ?? server!.url
        let prefix = "sw\(UInt32.random(in: 0...UInt32.max))"
        let shards = try QueueShards(basePrefix: prefix, prefixes: QueueShards.defaultPrefixes(prefix: prefix, count: 3))
        let redis = try BlockingRedis(url: try RedisURL(parsing: url))
        let common = ["--redis", url, "--prefix", prefix, "--shards", "3"]
        let stray = shards.shards[1].queues[0]
        _ = try redis.command(["SET", stray, "not a list"])
        defer { for shard in shards.shards { _ = try? redis.command(["DEL", shard.queues[0]]) } }

        let token = String(repeating: "ab", count: 32)
        let lines = (0..<30).map { #"{"id":"job-\#($0)","token":"\#(token)","payload":{"aps":{"alert":"hi"}}}"# }
        let file = makeTemporaryDirectory("herald-wrongtype") + "/jobs.jsonl"
        try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let enqueue = try HeraldRun.run(herald: herald, ["enqueue"] + common + ["--file", file, "--batch", "7"])
        let refusedLines = (0..<30).filter { shards.shard(forJobID: "job-\($0)") == 1 }.map { $0 + 1 }
        #expect(enqueue.status == 1, "\(enqueue.output)")
        for line in refusedLines { #expect(enqueue.output.contains("line \(line): not pushed: Redis refused LPUSH to \"\(stray)\""), "\(enqueue.output)") }
        #expect(enqueue.output.contains(#""pushed":\#(30 - refusedLines.count)"#) && enqueue.output.contains(#""not_pushed":\#(refusedLines.count)"#),
                "\(enqueue.output)")
        #expect(enqueue.output.contains("every other valid line was pushed"))
        let pushed = try [0, 2].map { Int(try redis.command(["LLEN", shards.shards[$0].queues[0]]).int ?? -1) }.reduce(0, +)
        #expect(pushed == 30 - refusedLines.count, "every line of the other shards, each once")

        let stats = try HeraldRun.run(herald: herald, ["stats"] + common + ["--json"])
        #expect(stats.status == 0 && stats.output.contains("herald stats: Redis key \"\(stray)\""), "\(stats.output)")
        let json = try #require(stats.output.split(separator: "\n").first { $0.hasPrefix("{") })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect((object["queues"] as? [String: Int])?["\(prefix):queue"] == pushed, "the other shards still counted: \(stats.output)")
        #expect((object["key_errors"] as? [[String: String]])?.map { $0["key"] } == [stray])

        let port = freeLoopbackPort()
        let dashboard = try ChildProcess(name: "dashboard", executable: herald,
                                         arguments: ["dashboard"] + common + ["--listen", "127.0.0.1:\(port)"])
        defer { dashboard.stop() }
        var metrics: (status: Int, body: String)? = nil
        #expect(waitUntil(seconds: 20) { metrics = try? httpGet(port: port, "/metrics", timeoutSeconds: 2); return metrics != nil })
        #expect(metrics?.status == 200, "\(metrics?.body ?? "")")
        #expect(metrics?.body.contains(#"herald_redis_key_errors{key="\#(stray)"} 1"#) == true, "\(metrics?.body ?? "")")
        #expect(metrics?.body.contains(#"herald_queue_length{queue="\#(prefix):queue"} \#(pushed)"#) == true, "\(metrics?.body ?? "")")
    }
}

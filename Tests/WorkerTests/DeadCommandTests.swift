import Foundation
import HeraldTestSupport
import RedisQueue
import Testing

/// `herald dead` as an operator runs it: over two shards, a requeued job lands on its own shard's queue exactly as
/// the producer wrote it; a dry run and an unfiltered change alter nothing; a queue no worker reads is refused.
@Suite struct DeadCommandTests {
    @Test(.timeLimit(.minutes(1)))
    func deadListsRequeuesAndPurgesAcrossShards() throws {
        guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is not built") }
        let server = try RedisServer()
        defer { server.stop() }
        let redis = try BlockingRedis(url: try RedisURL(parsing: server.url))
        let shards = try QueueShards(basePrefix: "dl", prefixes: QueueShards.defaultPrefixes(prefix: "dl", count: 2))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for (index, shard) in shards.shards.enumerated() {
            for (n, app) in ["shop", "news"].enumerated() {
                let job = #"{"id":"s\#(index)-\#(app)","app":"\#(app)","token":"t","payload":{"k":\#(n)}}"#
                let element = DeadLetterEntry.encode(reason: "unknown_app: no app named \(app)", at: now - Int64(n) * 7_200_000,
                                                     id: "s\(index)-\(app)", job: Array(job.utf8))
                _ = try redis.command(["LPUSH", shard.keys.dead, String(decoding: element, as: UTF8.self)])
            }
        }
        let common = ["--redis", server.url, "--prefix", "dl", "--shards", "2"]

        let list = try HeraldRun.run(herald: herald, ["dead", "list"] + common)
        #expect(list.status == 0)
        #expect(["s0-shop", "s0-news", "s1-shop", "s1-news"].allSatisfy { list.output.contains("id=\($0)") }, "\(list.output)")

        let unfiltered = try HeraldRun.run(herald: herald, ["dead", "purge"] + common)
        #expect(unfiltered.status == 64 && unfiltered.output.contains("give a filter"))
        let emptyReason = try HeraldRun.run(herald: herald, ["dead", "purge", "--reason", ""] + common)
        #expect(emptyReason.status == 64)
        let elsewhere = try HeraldRun.run(herald: herald, ["dead", "requeue", "--all", "--queue", "dl:queue:nobody"] + common)
        #expect(elsewhere.status == 64 && elsewhere.output.contains("not one of the configured queues"))

        let dry = try HeraldRun.run(herald: herald, ["dead", "requeue", "--app", "shop", "--dry-run"] + common)
        #expect(dry.status == 0 && dry.output.contains("2 dead letter(s) would be requeued"), "\(dry.output)")
        for shard in shards.shards { #expect(try redis.command(["LLEN", shard.keys.dead]).int == 2, "a dry run changes nothing") }

        let requeue = try HeraldRun.run(herald: herald, ["dead", "requeue", "--app", "shop"] + common)
        #expect(requeue.status == 0 && requeue.output.contains("2 dead letter(s) requeued"), "\(requeue.output)")
        for (index, shard) in shards.shards.enumerated() {
            let queued = try redis.command(["LRANGE", shard.queues[0], "0", "-1"]).array?.compactMap(\.string)
            #expect(queued == [#"{"id":"s\#(index)-shop","app":"shop","token":"t","payload":{"k":0}}"#], "shard \(index): \(queued ?? [])")
            #expect(try redis.command(["LLEN", shard.keys.dead]).int == 1)
        }

        // The news letters are 2 h old: an age of 1 h takes them, a JSON listing shows them first.
        let json = try HeraldRun.run(herald: herald, ["dead", "list", "--json", "--until", "1h"] + common)
        let objects = json.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == 2 && objects.allSatisfy { $0["app"] as? String == "news" }, "\(json.output)")
        let purge = try HeraldRun.run(herald: herald, ["dead", "purge", "--until", "1h"] + common)
        #expect(purge.status == 0 && purge.output.contains("2 dead letter(s) purged"), "\(purge.output)")
        for shard in shards.shards { #expect(try redis.command(["LLEN", shard.keys.dead]).int == 0) }
    }
}

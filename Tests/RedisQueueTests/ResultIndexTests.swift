import Foundation
import Testing
@testable import RedisQueue

/// The result index (`results.index_ttl_seconds`) as the completion script keeps it, key-checked: per job id a hash
/// of each token's latest entry with its stream id, expiring; `duplicate` entries left out; an index key of another
/// type passed over without holding the completion; nothing at all while the TTL is 0.
@Suite struct ResultIndexTests {
    private func entry(_ lease: Lease, id: String, _ outcome: ResultEntry.Outcome, token: String?, attempt: Int = 1) -> JobCompletion {
        JobCompletion(lease: lease, result: ResultEntry(id: id, outcome: outcome, status: outcome == .delivered ? 200 : 0, token: token,
                                                        app: "shop", attempt: attempt, worker: "idx"))
    }

    private func queue(_ keys: QueueKeys, ttl: Int, jobs: Int) throws -> (BlockingJobQueue, [Lease]) {
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue, jobs: (0..<jobs).map { #"{"id":"j\#($0)","token":"aa","payload":{}}"# })
        var options = JobQueueOptions()
        options.resultIndexTTLSeconds = ttl
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "idx", options: options)
        return (queue, try queue.claim(max: jobs))
    }

    private func index(_ queue: BlockingJobQueue, _ keys: QueueKeys, _ id: String) throws -> [String: [String: String]] {
        let flat = try queue.redis.command(["HGETALL", keys.resultIndex(jobID: id)]).array ?? []
        var out: [String: [String: String]] = [:]
        for pair in stride(from: 0, to: flat.count - 1, by: 2) {
            let json = try JSONSerialization.jsonObject(with: Data((flat[pair + 1].string ?? "").utf8)) as? [String: String]
            out[flat[pair].string ?? ""] = json
        }
        return out
    }

    @Test func eachTokensLatestEntryIsKeptWithItsStreamIDAndTheTTLAndDuplicatesAreLeftOut() throws {
        let keys = TestRedis.keys()
        let (queue, leases) = try queue(keys, ttl: 120, jobs: 4)
        try #require(leases.count == 4)
        // j0: two tokens of one multicast (as its children complete), j1's retry then its end, j2 a duplicate copy.
        #expect(try queue.complete([entry(leases[0], id: "m", .delivered, token: "t1"), entry(leases[1], id: "m", .tokenDropped, token: "t2"),
                                    entry(leases[2], id: "d", .duplicate, token: "t3"), entry(leases[3], id: "r", .retrying, token: "t4")]).applied == 4)
        let multicast = try index(queue, keys, "m")
        #expect(multicast.mapValues { $0["outcome"] } == ["t1": "delivered", "t2": "token_dropped"])
        #expect(multicast["t1"]?["queue"] == keys.queue && multicast["t1"]?["app"] == "shop" && multicast["t1"]?["attempt"] == "1")
        let streamIDs = (try queue.redis.command(["XRANGE", keys.results, "-", "+"]).array ?? []).compactMap { $0.array?.first?.string }
        #expect(Set(multicast.values.compactMap { $0["stream_id"] }).isSubset(of: Set(streamIDs)))
        #expect(try queue.redis.command(["EXISTS", keys.resultIndex(jobID: "d")]).int == 0, "a duplicate is not indexed")
        let ttl = try queue.redis.command(["TTL", keys.resultIndex(jobID: "m")]).int ?? -2
        #expect(ttl > 100 && ttl <= 120)

        // r's next attempt replaces its token's entry.
        try push(queue.redis, key: keys.queue, jobs: [#"{"id":"r","token":"aa","payload":{}}"#])
        let again = try queue.claim(max: 1)
        #expect(try queue.complete([entry(again[0], id: "r", .delivered, token: "t4", attempt: 2)]).applied == 1)
        let retried = try index(queue, keys, "r")
        #expect(retried.count == 1 && retried["t4"]?["outcome"] == "delivered" && retried["t4"]?["attempt"] == "2")
    }

    /// A many-token send (Push Kit's) completes with an entry per token: each written, indexed under its token with
    /// its own stream id, its dropped tokens each on the dropped-tokens stream, beside a plain job in the same batch.
    @Test func aCompletionWithAnEntryPerTokenWritesAndIndexesEachOne() throws {
        let keys = TestRedis.keys()
        let (queue, leases) = try queue(keys, ttl: 60, jobs: 2)
        try #require(leases.count == 2)
        var many = JobCompletion(lease: leases[0])
        many.results = [("a", ResultEntry.Outcome.delivered), ("b", .tokenDropped), ("c", .failed)].map { token, outcome in
            ResultEntry(id: "hm", outcome: outcome, status: 200, token: token, app: "huawei", attempt: 1, worker: "idx")
        }
        many.droppedTokens = ["b", "x"].map { DroppedToken(token: $0, topic: "", environment: "", reason: "80100000", platform: "hms", app: "huawei") }
        #expect(try queue.complete([many, entry(leases[1], id: "one", .delivered, token: "t")]).applied == 2)
        let streamed = (try queue.redis.command(["XRANGE", keys.results, "-", "+"]).array ?? []).compactMap { entry -> (String, [String: String])? in
            guard let parts = entry.array, let sid = parts.first?.string, let flat = parts.last?.array else { return nil }
            var fields: [String: String] = [:]
            for pair in stride(from: 0, to: flat.count - 1, by: 2) { fields[flat[pair].string ?? ""] = flat[pair + 1].string }
            return (sid, fields)
        }
        #expect(streamed.map { "\($0.1["id"] ?? "") \($0.1["token"] ?? "") \($0.1["outcome"] ?? "")" }
                == ["hm a delivered", "hm b token_dropped", "hm c failed", "one t delivered"])
        let indexed = try index(queue, keys, "hm")
        #expect(indexed.mapValues { $0["outcome"] } == ["a": "delivered", "b": "token_dropped", "c": "failed"])
        let sids = Dictionary(uniqueKeysWithValues: streamed.map { ($0.1["token"] ?? "", $0.0) })
        #expect(indexed.allSatisfy { $0.value["stream_id"] == sids[$0.key] }, "each token indexed with its own entry's stream id")
        #expect(try index(queue, keys, "one")["t"]?["stream_id"] == sids["t"])
        let dropped = (try queue.redis.command(["XRANGE", keys.droppedTokens, "-", "+"]).array ?? []).compactMap { $0.array?.last?.array }
        #expect(dropped.map { flat in Dictionary(stride(from: 0, to: flat.count - 1, by: 2).map { (flat[$0].string ?? "", flat[$0 + 1].string ?? "") }) { a, _ in a }["token"] } == ["b", "x"])
    }

    @Test func anIndexKeyOfAnotherTypeIsPassedOverAndTheCompletionStillApplies() throws {
        let keys = TestRedis.keys()
        let (queue, leases) = try queue(keys, ttl: 60, jobs: 2)
        _ = try queue.redis.command(["SET", keys.resultIndex(jobID: "x"), "not a hash"])
        #expect(try queue.complete([entry(leases[0], id: "x", .delivered, token: "t"), entry(leases[1], id: "y", .delivered, token: "t")]).applied == 2)
        #expect(try queue.redis.command(["GET", keys.resultIndex(jobID: "x")]).string == "not a hash")
        #expect(try queue.redis.command(["TTL", keys.resultIndex(jobID: "x")]).int == -1, "left as it was, no expiry added")
        #expect(try index(queue, keys, "y")["t"]?["outcome"] == "delivered")
        #expect(try queue.redis.command(["XLEN", keys.results]).int == 2)
    }

    @Test func aCancelledScheduledJobEndsInItsIndexToo() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        for id in ["c1", "c2"] {
            let member = JobEnvelope.wrap(job: Array(#"{"id":"\#(id)","app":"shop","token":"t-\#(id)","payload":{}}"#.utf8), attempt: 1, id: id, queue: keys.queue)
            _ = try redis.command([Array("ZADD".utf8), Array(keys.retry.utf8), Array("4000000000000".utf8), member])
        }
        var filter = ScheduledFilter()
        filter.ids = ["c1"]
        let one = try ScheduledJobs.select(redis: redis, keys: keys, filter: filter)
        #expect(try ScheduledJobs.cancel(one, redis: redis, keys: keys, worker: "tool", indexTTLSeconds: 30).cancelled == 1)
        filter.ids = ["c2"]
        let other = try ScheduledJobs.select(redis: redis, keys: keys, filter: filter)
        #expect(try ScheduledJobs.cancel(other, redis: redis, keys: keys, worker: "tool").cancelled == 1)
        let flat = try redis.command(["HGETALL", keys.resultIndex(jobID: "c1")]).array?.compactMap(\.string) ?? []
        #expect(flat.first == "t-c1")
        let json = try JSONSerialization.jsonObject(with: Data((flat.last ?? "").utf8)) as? [String: String]
        #expect(json?["outcome"] == "cancelled" && json?["queue"] == keys.queue && json?["stream_id"]?.contains("-") == true)
        let ttl = try redis.command(["TTL", keys.resultIndex(jobID: "c1")]).int ?? -2
        #expect(ttl > 0 && ttl <= 30)
        #expect(try redis.command(["EXISTS", keys.resultIndex(jobID: "c2")]).int == 0, "no index without a TTL")
    }

    @Test func withTheTTLAtZeroNothingIsIndexed() throws {
        let keys = TestRedis.keys()
        let (queue, leases) = try queue(keys, ttl: 0, jobs: 1)
        #expect(try queue.complete([entry(leases[0], id: "z", .delivered, token: "t")]).applied == 1)
        #expect(try queue.redis.command(["EXISTS", keys.resultIndex(jobID: "z")]).int == 0)
        #expect(try queue.redis.command(["XLEN", keys.results]).int == 1)
    }
}

import Testing
@testable import RedisQueue

/// The per-shard key sets: one shard is today's keys exactly, several are complete sets under their own hash tags.
@Suite struct QueueShardsTests {
    @Test func oneShardKeepsTodaysKeysAndAnyQueueKey() throws {
        let shards = try QueueShards(basePrefix: "herald", prefixes: QueueShards.defaultPrefixes(prefix: "herald", count: 1),
                                     queues: ["herald:queue:urgent", "legacy-list"])
        #expect(shards.count == 1)
        #expect(shards.shards[0].keys.queue == "herald:queue" && shards.shards[0].keys.retry == "herald:retry")
        #expect(shards.shards[0].keys.results == "herald:results" && shards.shards[0].keys.leases(worker: "w") == "herald:leases:w")
        #expect(shards.shards[0].queues == ["herald:queue:urgent", "legacy-list"], "absolute keys stay as configured")
        #expect(shards.key("anything", inShard: 0) == "anything")
        #expect(shards.shard(forJobID: "whatever") == 0)
    }

    @Test func severalShardsAreCompleteKeySetsUnderTheirOwnHashTag() throws {
        let shards = try QueueShards(basePrefix: "herald", prefixes: QueueShards.defaultPrefixes(prefix: "herald", count: 3),
                                     queues: ["herald:queue:urgent", "herald:queue"])
        #expect(shards.shards.map(\.keys.prefix) == ["{herald:0}", "{herald:1}", "{herald:2}"])
        #expect(shards.shards[1].keys.retry == "{herald:1}:retry" && shards.shards[2].keys.epoch == "{herald:2}:epoch")
        #expect(shards.shards[1].queues == ["{herald:1}:queue:urgent", "{herald:1}:queue"])
        #expect(shards.configuredQueue("{herald:2}:queue:urgent") == "herald:queue:urgent")
        #expect(shards.shardIndex(ofQueue: "{herald:2}:queue") == 2)
        #expect(shards.key("herald:dropped-tokens", inShard: 0) == "{herald:0}:dropped-tokens")
        #expect(shards.key("other:results", inShard: 0) == nil, "a key outside the prefix names no per-shard key")
        let defaultQueue = try QueueShards(basePrefix: "p", prefixes: ["{a}", "{b}"])
        #expect(defaultQueue.shards.map(\.queues) == [["{a}:queue"], ["{b}:queue"]] && defaultQueue.configuredQueues == ["p:queue"])
    }

    @Test func aQueueOutsideThePrefixOrATwiceNamedShardIsRefusedWithTheReason() throws {
        #expect {
            _ = try QueueShards(basePrefix: "herald", prefixes: ["{a}", "{b}"], queues: ["legacy-list"])
        } throws: { ($0 as? QueueShards.Problem)?.description.contains("not under the prefix") == true }
        #expect {
            _ = try QueueShards(basePrefix: "herald", prefixes: ["{a}", "{a}"])
        } throws: { ($0 as? QueueShards.Problem)?.description.contains("given twice") == true }
        #expect {
            _ = try QueueShards(basePrefix: "herald", prefixes: ["{a}", "bad\"quote"])
        } throws: { ($0 as? QueueShards.Problem)?.description.contains("shard prefix") == true }
    }

    /// The producer recipe is zlib's CRC-32: the standard check value, and ids spread over every shard.
    @Test func jobIDsPickTheirShardByZlibCRC32() throws {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum(Array("job-1".utf8)) == 0x4C42_3A3F)
        let shards = try QueueShards(basePrefix: "h", prefixes: QueueShards.defaultPrefixes(prefix: "h", count: 3))
        #expect(shards.shard(forJobID: "job-1") == Int(0x4C42_3A3F % 3))
        let spread = Dictionary(grouping: (0..<300).map { shards.shard(forJobID: "order-\($0)") }, by: { $0 }).mapValues(\.count)
        #expect(spread.keys.sorted() == [0, 1, 2] && spread.values.allSatisfy { $0 > 60 }, "\(spread)")
    }
}

import Testing
@testable import RedisQueue

@Suite struct StreamEntryTests {
    @Test func decodesRangeAndReadRepliesAndSkipsOtherShapes() throws {
        let entry = RESPValue.array([.bulk(Array("1796000000123-4".utf8)),
                                     .array([.bulk(Array("id".utf8)), .bulk(Array("j1".utf8)),
                                             .bulk(Array("outcome".utf8)), .bulk(Array("delivered".utf8))])])
        let range = RESPValue.array([entry, .bulk(Array("junk".utf8))])
        let decoded = StreamEntry.entries(range)
        #expect(decoded.count == 1)
        #expect(decoded[0].id == "1796000000123-4")
        #expect(decoded[0].milliseconds == 1796000000123)
        #expect(decoded[0]["outcome"] == "delivered")
        #expect(decoded[0]["missing"] == nil)
        #expect(decoded[0].fields.map(\.0) == ["id", "outcome"])
        let read = RESPValue.array([.array([.bulk(Array("herald:results".utf8)), range])])
        #expect(StreamEntry.entries(readReply: read) == decoded)
        #expect(StreamEntry.entries(readReply: .bulk(nil)).isEmpty)
    }

    @Test func readsBackWhatTheQueueWrote() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue, jobs: ["one"])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "se")
        _ = try queue.complete(delivered(try queue.claim(max: 1), worker: "se"))
        let entries = StreamEntry.entries(try redis.command(["XRANGE", keys.results, "-", "+"]))
        #expect(entries.count == 1)
        #expect(entries.first?["id"] == "one")
        #expect(entries.first?["outcome"] == "delivered")
        #expect(entries.first.map { ResultEntry(fields: Dictionary($0.fields, uniquingKeysWith: { a, _ in a })) != nil } == true)
    }
}

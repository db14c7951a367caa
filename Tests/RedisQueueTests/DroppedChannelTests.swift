import Testing
@testable import RedisQueue

/// A broadcast whose channel APNs no longer knows goes to `<prefix>:dropped-channels` with its result, atomically,
/// and a batch mixing dropped tokens and dropped channels puts each on its own stream.
@Suite struct DroppedChannelTests {
    @Test func droppedChannelsGoToTheirOwnStreamBesideDroppedTokens() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue, jobs: ["a", "b", "c"])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        let leases = try queue.claim(max: 3)
        try #require(leases.count == 3)
        var channel = JobCompletion(lease: leases[0], result: ResultEntry(id: "a", outcome: .channelDropped, status: 400, worker: "w"))
        channel.result?.channel = "dHN0LXNyY2gtY2hubA=="
        channel.droppedChannel = DroppedChannel(channel: "dHN0LXNyY2gtY2hubA==", bundleID: "com.example.app", environment: "sandbox",
                                                reason: "ChannelNotRegistered")
        let token = JobCompletion(lease: leases[1], result: ResultEntry(id: "b", outcome: .tokenDropped, status: 410, worker: "w"),
                                  droppedToken: DroppedToken(token: "aa", topic: "t", environment: "production", reason: "Unregistered"))
        let delivered = JobCompletion(lease: leases[2], result: ResultEntry(id: "c", outcome: .delivered, status: 200, worker: "w"))
        let report = try queue.complete([channel, token, delivered])
        #expect(report.applied == 3)

        let channels = try redis.command(["XRANGE", keys.droppedChannels, "-", "+"]).array ?? []
        #expect(channels.count == 1)
        #expect(channels.first?.array?[1].array?.compactMap(\.string) ==
            ["channel", "dHN0LXNyY2gtY2hubA==", "bundle_id", "com.example.app", "environment", "sandbox", "reason", "ChannelNotRegistered"])
        let tokens = try redis.command(["XRANGE", keys.droppedTokens, "-", "+"]).array ?? []
        #expect(tokens.count == 1)
        #expect(tokens.first?.array?[1].array?.compactMap(\.string).first == "token")
        let results = try redis.command(["XRANGE", keys.results, "-", "+"]).array ?? []
        let first = results.first?.array?[1].array?.compactMap(\.string) ?? []
        #expect(Array(first.prefix(8)) == ["id", "a", "outcome", "channel_dropped", "status", "400", "channel", "dHN0LXNyY2gtY2hubA=="])
        #expect(results.count == 3)
    }
}

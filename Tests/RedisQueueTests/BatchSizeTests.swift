import Testing
@testable import RedisQueue

/// The scripts lease and release in chunks; a batch larger than one chunk must behave like a small one.
@Suite struct BatchSizeTests {
    @Test func aClaimAndACompletionOfFiveThousandJobsLeaseAndReleaseEveryOne() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let total = 5_000
        try push(redis, key: keys.queue, jobs: (0..<total).map { "big-\($0)" })
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "big")
        let leases = try queue.claim(max: total)
        #expect(leases.count == total)
        #expect(Set(leases.map(\.id)).count == total)
        #expect(try redis.command(["HLEN", keys.leases(worker: "big")]).int == Int64(total))
        // One lease was reaped and re-taken by someone else: it must come back as lost, the rest applied.
        _ = try redis.command(["HDEL", keys.leases(worker: "big"), leases[2500].id])
        let report = try queue.complete(delivered(leases, worker: "big"))
        #expect(report.applied == total - 1)
        #expect(report.leasesLost == [leases[2500].id])
        #expect(try redis.command(["HLEN", keys.leases(worker: "big")]).int == 0)
        let counts = try resultCounts(redis, keys)
        #expect(counts.count == total - 1)
        #expect(counts.values.allSatisfy { $0 == 1 })
    }
}

/// Issue 54: a claim carries Redis's clock at the claim, by which the worker judges how late a paced job came
/// back (its slot was set on that clock), whatever the worker's own clock says.
@Suite struct ClaimClockTests {
    @Test func everyLeaseOfAClaimCarriesRedisTimeAtTheClaim() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue, jobs: ["a", "b"])
        func redisMillis() throws -> Int64 {
            let parts = try redis.command(["TIME"]).array?.compactMap(\.string).compactMap { Int64($0) } ?? []
            return parts[0] * 1000 + parts[1] / 1000
        }
        let before = try redisMillis()
        let leases = try BlockingJobQueue(redis: redis, keys: keys, workerID: "clock").claim(max: 2)
        let after = try redisMillis()
        #expect(leases.count == 2)
        for lease in leases {
            let at = try #require(lease.claimedAtRedisMillis)
            #expect(at >= before && at <= after, "\(at) not within \(before)...\(after)")
        }
    }
}

/// A completion batch whose reply was lost is sent again; it must change nothing, even when a byte-identical
/// job waits in the queue (two identical strings are two jobs).
@Suite struct RepeatedBatchTests {
    @Test func aRepeatedBatchNeitherRecordsTwiceNorTakesATwinFromTheQueue() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue, jobs: ["twin", "twin"])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "rep")
        let leases = try queue.claim(max: 1)
        #expect(leases.count == 1)
        let batch = delivered(leases, worker: "rep")
        #expect(try queue.complete(batch).applied == 1)
        // The reply of that call was "lost": the worker sends it again.
        let again = try queue.complete(batch, isRepeat: true)
        #expect(again.applied == 0 && again.recovered == 0 && again.leasesLost.isEmpty)
        #expect(again.unconfirmed == 1)
        #expect(try redis.command(["LLEN", keys.queue]).int == 1, "the twin job must stay queued")
        #expect(try resultCounts(redis, keys) == ["twin": 1])
    }
}

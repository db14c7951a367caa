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

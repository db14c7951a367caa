import Foundation
import HeraldTestSupport
import Testing
@testable import RedisQueue

/// After Redis restarts without persistence its leases are gone with everything else; the completion says so
/// (`forgotten`) instead of blaming another worker or a repeated batch.
@Suite struct ForgottenLeaseTests {
    @Test func completionAfterFlushAllReportsForgottenNotLost() throws {
        let server = try RedisServer()  // of its own: FLUSHALL must not touch other tests' keys
        defer { server.stop() }
        let keys = TestRedis.keys()
        let redis = try BlockingRedis(url: server.redisURL)
        try push(redis, key: keys.queue, jobs: (0..<6).map { "f\($0)" })
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        let leases = try queue.claim(max: 6)
        #expect(leases.count == 6 && leases.allSatisfy { !$0.epoch.isEmpty })
        _ = try redis.command(["FLUSHALL"])

        let first = try queue.complete(delivered(Array(leases[..<3]), worker: "w"))
        #expect(first.forgotten == 3 && first.leasesLost.isEmpty && first.unconfirmed == 0 && first.applied == 0)
        let repeated = try queue.complete(delivered(Array(leases[3...]), worker: "w"), isRepeat: true)
        #expect(repeated.forgotten == 3 && repeated.leasesLost.isEmpty && repeated.unconfirmed == 0)
        #expect(try redis.command(["EXISTS", keys.results]).int == 0)

        // The next claim makes a new epoch; its leases complete normally.
        try push(redis, key: keys.queue, jobs: ["after"])
        let fresh = try queue.claim(max: 1)
        #expect(fresh.first?.epoch != leases[0].epoch)
        #expect(try queue.complete(delivered(fresh, worker: "w")).applied == 1)
    }

    /// The same epoch: a lease reaped and taken by another worker is still "lease lost", not forgotten.
    @Test func aLeaseTakenByAnotherWorkerIsStillLost() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue, jobs: ["x"])
        var short = JobQueueOptions()
        short.leaseMilliseconds = 50
        let slow = try BlockingJobQueue(redis: redis, keys: keys, workerID: "slow", options: short)
        let leases = try slow.claim(max: 1)
        usleep(120_000)
        let other = try BlockingJobQueue(redis: redis, keys: keys, workerID: "other")
        #expect(try other.reap() == 1)
        #expect(try other.claim(max: 1).count == 1)
        let report = try slow.complete(delivered(leases, worker: "slow"))
        #expect(report.leasesLost == leases.map(\.id) && report.forgotten == 0)
    }
}

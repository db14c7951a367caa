import Testing
@testable import RedisQueue

/// Issue 30, item 14: a worker that cannot reach a destination hands its jobs back instead of holding them. The
/// completion script pushes the job, byte for byte as claimed, to the head of its queue as it releases the
/// lease; run key-checked, so the queue it names is declared.
@Suite struct HandBackTests {
    private func handedBack(_ lease: Lease, id: String) -> JobCompletion {
        var completion = JobCompletion(lease: lease, result: ResultEntry(id: id, outcome: .retrying, status: 0, reason: "Unavailable: x",
                                                                         attempt: lease.attempt, worker: "a"))
        completion.handBack(id: id)
        return completion
    }

    @Test func aHandedBackJobIsTheNextOneClaimedAsItWasAndNeverQueuedTwice() throws {
        let keys = TestRedis.keys()
        let redis: KeyCheckedRedis = try TestRedis.blocking()
        let low = keys.queue(named: "low")
        let a = try BlockingJobQueue(redis: redis, keys: keys, workerID: "a", queueKeys: [low])
        let b = try BlockingJobQueue(redis: redis, keys: keys, workerID: "b", queueKeys: [low])
        try push(redis, key: low, jobs: ["j1", "j2", "j3", "j4"])
        let held = try a.claim(max: 2)
        #expect(held.map { String(decoding: $0.raw, as: UTF8.self) } == ["j1", "j2"])
        #expect(try a.complete(held.map { handedBack($0, id: String(decoding: $0.job, as: UTF8.self)) }).applied == 2)
        #expect(try redis.command(["HLEN", keys.leases(worker: "a")]).int == 0, "the leases are released")
        #expect(try redis.command(["ZCARD", keys.retry]).int == 0, "not parked in the retry set")
        #expect(try resultCounts(redis, keys) == ["j1": 1, "j2": 1], "one retrying entry each")
        // The other worker takes them first, in their order, the same bytes (attempt and all).
        let taken = try b.claim(max: 3)
        #expect(taken.map { String(decoding: $0.raw, as: UTF8.self) } == ["j1", "j2", "j3"])
        #expect(taken.allSatisfy { $0.attempt == 1 })
        // A repeat of the batch (its reply was lost) and a late hand-back of a lease another worker now holds
        // push nothing: the job is in the queue or with a worker exactly once.
        #expect(try a.complete(held.map { handedBack($0, id: "x") }, isRepeat: true).unconfirmed == 2)
        let late = try a.complete(held.map { handedBack($0, id: "x") })
        #expect(late.unconfirmed == 2 && late.leasesLost.isEmpty && late.recovered == 0)
        #expect(try redis.command(["LRANGE", low, "0", "-1"]).array?.compactMap(\.string) == ["j4"])
    }

    @Test func aRetriedJobHandedBackKeepsItsEnvelopeAndAttempt() throws {
        let keys = TestRedis.keys()
        let redis: KeyCheckedRedis = try TestRedis.blocking()
        let a = try BlockingJobQueue(redis: redis, keys: keys, workerID: "a")
        try push(redis, key: keys.queue, jobs: ["r"])
        var first = try #require(try a.claim(max: 1).first)
        var retry = JobCompletion(lease: first)
        retry.scheduleRetry(at: 0, attempt: 3, id: "r-id", since: 1_000)
        #expect(try a.complete([retry]).applied == 1)
        #expect(try a.moveDueRetries().moved == 1)
        first = try #require(try a.claim(max: 1).first)
        #expect(first.attempt == 3 && first.jobID == "r-id" && first.firstAttemptAt == 1_000)
        #expect(try a.complete([handedBack(first, id: "r-id")]).applied == 1)
        let again = try #require(try a.claim(max: 1).first)
        #expect(again.raw == first.raw)
        #expect(again.attempt == 3 && again.jobID == "r-id" && again.firstAttemptAt == 1_000, "no attempt spent, none lost")
    }

    /// Idempotency: the key names the lease that handed the job back, which is gone, so the worker that takes the
    /// job next sends it; a producer's second copy claimed after that is still a duplicate.
    @Test func aHandedBackJobWithAnIDIsSentByTheWorkerThatTakesItAndItsCopyIsADuplicate() throws {
        let keys = TestRedis.keys()
        let redis: KeyCheckedRedis = try TestRedis.blocking()
        let a = try BlockingJobQueue(redis: redis, keys: keys, workerID: "a")
        let b = try BlockingJobQueue(redis: redis, keys: keys, workerID: "b")
        try push(redis, key: keys.queue, jobs: ["o"])
        let window: Int64 = 60_000
        let mine = try a.claim(max: 1)
        #expect(try a.claimOnce([(mine[0], "o1")], windowMilliseconds: window) == [.claimed])
        #expect(try a.complete([handedBack(mine[0], id: "o1")]).applied == 1)
        try push(redis, key: keys.queue, jobs: ["o"])  // the producer's second copy, behind the first
        let taken = try b.claim(max: 2)
        #expect(try b.claimOnce(taken.map { ($0, "o1") }, windowMilliseconds: window) == [.claimed, .duplicate])
    }

    /// A job the worker spent an attempt on (a resend after a lost answer) goes back as its envelope for that
    /// attempt, marked with the dataset's epoch as the scheduler would, so the next claim believes the attempt.
    @Test func aJobWithAnAttemptSpentGoesBackAsItsEnvelopeWithThatAttempt() throws {
        let keys = TestRedis.keys()
        let redis: KeyCheckedRedis = try TestRedis.blocking()
        let a = try BlockingJobQueue(redis: redis, keys: keys, workerID: "a")
        try push(redis, key: keys.queue, jobs: ["e", "next"])
        let lease = try #require(try a.claim(max: 1).first)
        var completion = JobCompletion(lease: lease)
        completion.handBack(id: "e-id", since: 7_000, attempt: 2)
        #expect(!completion.handedBackAsClaimed)
        #expect(try a.complete([completion]).applied == 1)
        #expect(try redis.command(["ZCARD", keys.retry]).int == 0)
        let again = try #require(try a.claim(max: 1).first)
        #expect(again.job == lease.job && again.attempt == 2 && again.jobID == "e-id" && again.firstAttemptAt == 7_000, "taken first, attempt believed")
    }

    @Test func aJobHandedBackToAQueueKeyOfAnotherTypeGoesToTheRetrySetDueAtOnce() throws {
        let keys = TestRedis.keys()
        let redis: KeyCheckedRedis = try TestRedis.blocking()
        let a = try BlockingJobQueue(redis: redis, keys: keys, workerID: "a")
        try push(redis, key: keys.queue, jobs: ["s"])
        let lease = try #require(try a.claim(max: 1).first)
        _ = try redis.command(["DEL", keys.queue])
        _ = try redis.command(["SET", keys.queue, "oops"])
        #expect(try a.complete([handedBack(lease, id: "s-id")]).applied == 1)
        #expect(try redis.command(["ZCARD", keys.retry]).int == 1, "kept, due at once, until the key is fixed")
        #expect(try redis.command(["HLEN", keys.leases(worker: "a")]).int == 0)
    }
}

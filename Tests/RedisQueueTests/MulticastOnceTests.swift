import Foundation
import Testing
@testable import RedisQueue

/// A multicast parent job and its fan-out as the worker builds it: the bytes around `"tokens":[...]`.
private func fanOut(_ id: String, tokens: [String]) -> (job: String, expansion: Expansion) {
    let list = tokens.map { "\"\($0)\"" }.joined(separator: ",")
    let job = #"{"id":"\#(id)","tokens":[\#(list)],"payload":{"aps":{}}}"#
    return (job, Expansion(jobID: id, tokens: tokens, jobPrefix: bytes(#"{"id":"\#(id)","token":""#), jobSuffix: bytes(#"","payload":{"aps":{}}}"#)))
}

private func childJob(_ id: String, _ token: String) -> [UInt8] { bytes(#"{"id":"\#(id)","token":"\#(token)","payload":{"aps":{}}}"#) }

private func hexToken(_ n: Int) -> String { String(format: "%064x", n) }

/// A worker whose 50 ms lease a test lets run out (to have its jobs reaped).
private func shortLeaseWorker(_ redis: any BlockingRedisCommands, _ keys: QueueKeys, _ id: String) throws -> BlockingJobQueue {
    var short = JobQueueOptions()
    short.leaseMilliseconds = 50
    return try BlockingJobQueue(redis: redis, keys: keys, workerID: id, options: short)
}

/// Issue 14 in Redis: a multicast job fans out with its lease release; idempotency keys decide which copy sends.
@Suite struct MulticastOnceTests {
    @Test func aFanOutReleasesTheParentAndQueuesOneOrdinaryJobPerTokenAtTheHeadFirstTokenFirst() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        let tokens = (1...3).map(hexToken)
        let (job, expansion) = fanOut("order \"7\"", tokens: tokens)
        try push(redis, key: keys.queue, jobs: ["older"])
        _ = try redis.command(["RPUSH", keys.queue, job])  // at the head: claimed first
        let parent = try #require(try queue.claim(max: 1).first)
        var completion = JobCompletion(lease: parent)
        completion.expansion = expansion
        #expect(try queue.complete([completion]).applied == 1)
        #expect(try redis.command(["HLEN", keys.leases(worker: "w")]).int == 0, "the parent's lease is released")
        #expect(try redis.command(["LLEN", keys.queue]).int == 4)
        let children = try queue.claim(max: 3)
        #expect(children.map(\.job) == tokens.map { childJob("order \"7\"", $0) }, "first token first, before older jobs")
        #expect(children.allSatisfy { $0.jobID == "order \"7\"" && $0.attempt == 1 && $0.unmarkedEnvelopeAttempt == nil })
        #expect(String(decoding: children[2].raw, as: UTF8.self).contains(#""child":2"#))
        // Re-sending the applied batch (its reply lost) fans out nothing twice.
        #expect(try queue.complete([completion], isRepeat: true).unconfirmed == 1)
        #expect(try redis.command(["LLEN", keys.queue]).int == 1)
    }

    @Test func tenThousandTokensFanOutInOneCallAndAreClaimedInOrdinaryBatches() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        let tokens = (0..<10_000).map(hexToken)
        let (job, expansion) = fanOut("big", tokens: tokens)
        try push(redis, key: keys.queue, jobs: [job])
        var completion = JobCompletion(lease: try #require(try queue.claim(max: 1).first))
        completion.expansion = expansion
        #expect(try queue.complete([completion]).applied == 1)
        var seen: [String] = []
        while true {
            let batch = try queue.claim(max: 512)
            if batch.isEmpty { break }
            #expect(batch.count <= 512)
            seen += batch.map { String(decoding: $0.job, as: UTF8.self) }
            _ = try queue.complete(batch.map { JobCompletion(lease: $0) })
        }
        #expect(seen == tokens.map { String(decoding: childJob("big", $0), as: UTF8.self) })
    }

    @Test func aReapedParentFansOutOnceWhoeverFinishesIt() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let slow = try shortLeaseWorker(redis, keys, "slow")
        let other = try BlockingJobQueue(redis: try TestRedis.blocking(), keys: keys, workerID: "other")
        let (job, expansion) = fanOut("p", tokens: [hexToken(1), hexToken(2)])
        // Reaped, not re-claimed: the slow worker takes it back from the queue and fans it out.
        try push(redis, key: keys.queue, jobs: [job])
        var late = JobCompletion(lease: try #require(try slow.claim(max: 1).first))
        late.expansion = expansion
        usleep(120_000)
        #expect(try other.reap() == 1)
        #expect(try slow.complete([late]).recovered == 1)
        #expect(try redis.command(["LRANGE", keys.queue, "0", "-1"]).array?.count == 2, "two children, no parent")
        _ = try redis.command(["DEL", keys.queue])
        // Reaped and re-claimed: only the worker holding it fans out.
        try push(redis, key: keys.queue, jobs: [job])
        late = JobCompletion(lease: try #require(try slow.claim(max: 1).first))
        late.expansion = expansion
        usleep(120_000)
        #expect(try other.reap() == 1)
        var taken = JobCompletion(lease: try #require(try other.claim(max: 1).first))
        taken.expansion = expansion
        #expect(try slow.complete([late]).leasesLost.count == 1)
        #expect(try other.complete([taken]).applied == 1)
        #expect(try redis.command(["LLEN", keys.queue]).int == 2)
    }

    @Test func childrenOfAQueueThatHoldsAnotherTypeWaitInTheRetrySet() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        let (job, expansion) = fanOut("p", tokens: [hexToken(1), hexToken(2)])
        try push(redis, key: keys.queue, jobs: [job])
        var completion = JobCompletion(lease: try #require(try queue.claim(max: 1).first))
        completion.expansion = expansion
        _ = try redis.command(["SET", keys.queue, "someone's string"])
        #expect(try queue.complete([completion]).applied == 1, "nothing is lost for a queue key gone wrong")
        #expect(try redis.command(["ZCARD", keys.retry]).int == 2)
        _ = try redis.command(["DEL", keys.queue])
        #expect(try queue.moveDueRetries().moved == 2)
        #expect(try queue.claim(max: 5).map(\.job) == [childJob("p", hexToken(1)), childJob("p", hexToken(2))])
    }

    @Test func theFirstCopyOfAnIDClaimsItAndLaterCopiesAreDuplicatesUntilTheKeyExpires() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let a = try BlockingJobQueue(redis: redis, keys: keys, workerID: "a")
        let b = try BlockingJobQueue(redis: try TestRedis.blocking(), keys: keys, workerID: "b")
        try push(redis, key: keys.queue, jobs: ["copy", "copy"])
        let mine = try a.claim(max: 2)
        let window: Int64 = 60_000
        #expect(try a.claimOnce(mine.map { ($0, "o1") }, windowMilliseconds: window) == [.claimed, .duplicate], "copies in one batch")
        #expect(try a.claimOnce([(mine[0], "o1")], windowMilliseconds: window) == [.claimed], "asked again after a lost reply")
        let ttl = try #require(try redis.command(["PTTL", keys.once(jobID: "o1")]).int)
        #expect(ttl > 50_000 && ttl <= window)
        try push(redis, key: keys.queue, jobs: ["copy"])
        let theirs = try b.claim(max: 1)
        #expect(try b.claimOnce([(theirs[0], "o1")], windowMilliseconds: window) == [.duplicate], "a live lease sends it")
        var done = JobCompletion(lease: mine[0])
        done.once = OnceUpdate(jobID: "o1", expect: .lease, state: .done)
        // b's late completion that expects a claim it never held changes nothing.
        var wrong = JobCompletion(lease: theirs[0])
        wrong.once = OnceUpdate(jobID: "o1", expect: .lease, state: .done)
        _ = try b.complete([wrong])
        #expect(try redis.command(["GET", keys.once(jobID: "o1")]).string == "a\n\(mine[0].id)")
        _ = try a.complete([done])
        #expect(try redis.command(["GET", keys.once(jobID: "o1")]).string == "done")
        #expect(try redis.command(["PTTL", keys.once(jobID: "o1")]).int ?? 0 > 50_000, "the window runs from the first claim")
        try push(redis, key: keys.queue, jobs: ["copy"])
        #expect(try b.claimOnce([(try b.claim(max: 1)[0], "o1")], windowMilliseconds: window) == [.duplicate])
        // Once the window has passed the id is new again.
        _ = try redis.command(["PEXPIRE", keys.once(jobID: "o1"), "1"])
        usleep(20_000)
        try push(redis, key: keys.queue, jobs: ["copy"])
        #expect(try b.claimOnce([(try b.claim(max: 1)[0], "o1")], windowMilliseconds: window) == [.claimed])
    }

    @Test func aHolderWhoseLeaseIsGoneIsTakenOverAndAPendingRetryKeepsCopiesOut() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let crashed = try shortLeaseWorker(redis, keys, "crashed")
        let b = try BlockingJobQueue(redis: try TestRedis.blocking(), keys: keys, workerID: "b")
        try push(redis, key: keys.queue, jobs: ["job"])
        let lost = try crashed.claim(max: 1)
        #expect(try crashed.claimOnce([(lost[0], "o2")], windowMilliseconds: 60_000) == [.claimed])
        usleep(120_000)
        #expect(try b.reap() == 1, "the crashed worker's job is back in the queue")
        let back = try b.claim(max: 1)
        #expect(try b.claimOnce([(back[0], "o2")], windowMilliseconds: 60_000) == [.claimed], "the same job, taken over")
        var retry = JobCompletion(lease: back[0])
        retry.scheduleRetry(at: 1, id: "o2")
        retry.once = OnceUpdate(jobID: "o2", expect: .lease, state: .pending)
        _ = try b.complete([retry])
        #expect(try redis.command(["GET", keys.once(jobID: "o2")]).string == "pending")
        try push(redis, key: keys.queue, jobs: ["job"])
        #expect(try b.claimOnce([(try b.claim(max: 1)[0], "o2")], windowMilliseconds: 60_000) == [.duplicate],
                "a copy pushed while the job waits for its retry")
        #expect(try b.moveDueRetries().moved == 1)
        var end = JobCompletion(lease: try b.claim(max: 1)[0])
        end.once = OnceUpdate(jobID: "o2", expect: .pending, state: .done)
        _ = try b.complete([end])
        #expect(try redis.command(["GET", keys.once(jobID: "o2")]).string == "done")
    }

    /// Issue 30: such a key turned idempotency off for its id without a word; it is reported like every other
    /// wrong-typed key, naming the key and what it holds.
    @Test func anIDKeyOfAnotherTypeIsReportedNamingTheKey() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        var problems: [QueueKeyProblem] = []
        queue.onKeyProblem = { problems.append($0) }
        _ = try redis.command(["LPUSH", keys.once(jobID: "o5"), "x"])
        try push(redis, key: keys.queue, jobs: ["job", "other"])
        let leases = try queue.claim(max: 2)
        #expect(try queue.claimOnce([(leases[0], "o5"), (leases[1], "o6")], windowMilliseconds: 1000) == [.unguarded, .claimed])
        #expect(problems == [QueueKeyProblem(key: keys.once(jobID: "o5"), found: "list", expected: "string", sentUnchecked: true)])
        #expect(problems.first?.description.contains("without the idempotency check") == true)
    }

    @Test func anIDKeyOfAnotherTypeLetsTheJobGoUncheckedAndIsLeftAlone() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        _ = try redis.command(["HSET", keys.once(jobID: "o3"), "someone", "else"])
        try push(redis, key: keys.queue, jobs: ["job", "other"])
        let leases = try queue.claim(max: 2)
        #expect(try queue.claimOnce([(leases[0], "o3"), (leases[1], "o4")], windowMilliseconds: 1000) == [.unguarded, .claimed])
        var completion = JobCompletion(lease: leases[0])
        completion.once = OnceUpdate(jobID: "o3", expect: .lease, state: .done)
        #expect(try queue.complete([completion]).applied == 1)
        #expect(try redis.command(["TYPE", keys.once(jobID: "o3")]).string == "hash")
    }
}

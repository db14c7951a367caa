import Foundation
import HeraldTestSupport
import Testing
@testable import RedisQueue

/// Completions that write every output key: a result, a retry, a dead letter, a dropped token and a dropped channel each.
private func writingEverything(_ leases: [Lease]) -> [JobCompletion] {
    leases.map { lease in
        var completion = JobCompletion(
            lease: lease, result: ResultEntry(id: String(decoding: lease.job, as: UTF8.self), outcome: .tokenDropped, status: 410, worker: "w"),
            droppedToken: DroppedToken(token: "aa", topic: "t", environment: "production", reason: "Unregistered"))
        completion.scheduleRetry(at: 4_102_444_800_000, id: "later")
        completion.deadLetter(reason: "r", at: 1)
        completion.droppedChannel = DroppedChannel(channel: "dHN0", bundleID: "b", environment: "production", reason: "ChannelNotRegistered")
        return completion
    }
}

private func strings(_ reply: RESPValue) -> [String] { (reply.array ?? []).compactMap(\.string) }

/// Redis keeps a script's earlier writes when a later command fails, so a key of the wrong type used to leave
/// jobs popped but not leased, or leases deleted but nothing recorded. Every script now checks first.
@Suite struct WrongTypeTests {
    @Test func claimSkipsAWrongTypedQueueAndTakesFromTheOthers() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let (high, low, third) = (keys.queue, keys.queue(named: "low"), keys.queue(named: "third"))
        try push(redis, key: high, jobs: ["h1", "h2"])
        try push(redis, key: third, jobs: ["t1"])
        _ = try redis.command(["SET", low, "x"])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w", queueKeys: [high, low, third])
        var problems: [QueueKeyProblem] = []
        queue.onKeyProblem = { problems.append($0) }

        let leases = try queue.claim(max: 10)
        #expect(leases.map { String(decoding: $0.job, as: UTF8.self) } == ["h1", "h2", "t1"])
        #expect(problems == [QueueKeyProblem(key: low, found: "string", expected: "list")])
        #expect(try redis.command(["HLEN", keys.leases(worker: "w")]).int == 3)
        #expect(try redis.command(["GET", low]).string == "x")
        #expect(try queue.complete(delivered(leases, worker: "w")).applied == 3)
    }

    /// The keys the claim writes besides the queues: refused whole, every job still queued, all claimed once fixed.
    @Test(arguments: ["workers", "leases", "epoch"])
    func claimWithAWrongTypedKeyOfItsOwnTakesNothing(which: String) throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue, jobs: ["a", "b", "c"])
        let (key, expected) = switch which {
        case "workers": (keys.workers, "zset")
        case "leases": (keys.leases(worker: "w"), "hash")
        default: (keys.epoch, "string")
        }
        _ = try redis.command(["DEL", key])
        _ = try redis.command(which == "epoch" ? ["RPUSH", key, "x"] : ["SET", key, "x"])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        #expect(throws: RedisError.wrongType(key: key, found: which == "epoch" ? "list" : "string", expected: expected)) {
            try queue.claim(max: 10)
        }
        #expect(try redis.command(["LLEN", keys.queue]).int == 3)
        _ = try redis.command(["DEL", key])
        #expect(try queue.claim(max: 10).count == 3)
    }

    /// A completion batch that meets a wrong-typed output key changes nothing (the leases stay, so the worker
    /// sends the same batch again), and applies in full once the key is fixed.
    @Test(arguments: [("results", "stream"), ("dropped-tokens", "stream"), ("retry", "zset"), ("dead", "list"), ("dropped-channels", "stream")])
    func completionWithAWrongTypedOutputKeyChangesNothingUntilFixed(name: String, expected: String) throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue, jobs: ["a", "b", "c"])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        let leases = try queue.claim(max: 3)
        let bad = "\(keys.prefix):\(name)"
        _ = try redis.command(["SET", bad, "x"])
        let batch = writingEverything(leases)

        #expect(throws: RedisError.wrongType(key: bad, found: "string", expected: expected)) { try queue.complete(batch) }
        #expect(try redis.command(["HLEN", keys.leases(worker: "w")]).int == 3)
        for output in [keys.results, keys.droppedTokens, keys.retry, keys.dead, keys.droppedChannels] where output != bad {
            #expect(try redis.command(["EXISTS", output]).int == 0, "\(output) written")
        }

        _ = try redis.command(["DEL", bad])
        let report = try queue.complete(batch)
        #expect(report.applied == 3 && report.leasesLost.isEmpty)
        #expect(try resultCounts(redis, keys) == ["a": 1, "b": 1, "c": 1])
        #expect(try redis.command(["XLEN", keys.droppedTokens]).int == 3)
        #expect(try redis.command(["XLEN", keys.droppedChannels]).int == 3)
        #expect(try redis.command(["ZCARD", keys.retry]).int == 3)
        #expect(try redis.command(["LLEN", keys.dead]).int == 3)
    }

    /// One dead worker's lease pointing at a wrong-typed queue does not stop the reaper for the others; it stays
    /// (so does its worker entry) and goes back once the key is fixed.
    @Test func reaperLeavesALeaseItCannotReturnAndReapsEveryoneElse() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let (main, low) = (keys.queue, keys.queue(named: "low"))
        try push(redis, key: main, jobs: ["m1", "m2", "m3"])
        try push(redis, key: low, jobs: ["l1"])
        var short = JobQueueOptions()
        short.leaseMilliseconds = 50
        let first = try BlockingJobQueue(redis: redis, keys: keys, workerID: "first", queueKeys: [low, main], options: short)
        let second = try BlockingJobQueue(redis: redis, keys: keys, workerID: "second", options: short)
        #expect(try first.claim(max: 2).count == 2)  // l1, m1
        #expect(try second.claim(max: 2).count == 2)  // m2, m3
        _ = try redis.command(["SET", low, "x"])
        usleep(120_000)

        let reaper = try BlockingJobQueue(redis: redis, keys: keys, workerID: "reaper")
        var problems: [QueueKeyProblem] = []
        reaper.onKeyProblem = { problems.append($0) }
        #expect(try reaper.reap() == 3)
        #expect(problems == [QueueKeyProblem(key: low, found: "string", expected: "list")])
        #expect(Set(strings(try redis.command(["LRANGE", main, "0", "-1"]))) == ["m1", "m2", "m3"])
        #expect(strings(try redis.command(["HVALS", keys.leases(worker: "first")])) == ["\(low)\nl1"])
        #expect(try redis.command(["EXISTS", keys.leases(worker: "second")]).int == 0)
        #expect(strings(try redis.command(["ZRANGE", keys.workers, "0", "-1"])) == ["first"])

        _ = try redis.command(["DEL", low])
        #expect(try reaper.reap() == 1)
        #expect(strings(try redis.command(["LRANGE", low, "0", "-1"])) == ["l1"])
        #expect(try redis.command(["ZCARD", keys.workers]).int == 0)
    }

    /// The reaper, the heartbeat and the scheduler refuse, changing nothing, when their own key has the wrong type.
    @Test(arguments: ["reap", "heartbeat", "moveDue"])
    func maintenanceWithAWrongTypedKeyOfItsOwnIsRefused(call: String) throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let key = call == "moveDue" ? keys.retry : keys.workers
        _ = try redis.command(["SET", key, "x"])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "m")
        #expect(throws: RedisError.wrongType(key: key, found: "string", expected: "zset")) {
            switch call {
            case "reap": _ = try queue.reap()
            case "heartbeat": _ = try queue.renewHeartbeat()
            default: _ = try queue.moveDueRetries()
            }
        }
        #expect(try redis.command(["GET", key]).string == "x")
    }

    /// release, the release of an orphaned claim, and retire: what can go back goes; the rest stays leased.
    @Test(arguments: ["release", "releasePrefix", "retire"])
    func returningLeasesSkipsAWrongTypedQueueAndLosesNothing(how: String) throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let (main, low) = (keys.queue, keys.queue(named: "low"))
        try push(redis, key: main, jobs: ["m1", "m2"])
        try push(redis, key: low, jobs: ["l1"])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w", queueKeys: [low, main])
        var problems: [QueueKeyProblem] = []
        queue.onKeyProblem = { problems.append($0) }
        let leases = try queue.claim(max: 3)
        #expect(leases.count == 3)
        _ = try redis.command(["SET", low, "x"])
        let commands = try QueueCommands(keys: keys, workerID: "w", queueKeys: [low, main], options: JobQueueOptions())
        let prefix = String(leases[0].id.dropLast())  // "<nonce>.<seq>." of this claim
        func giveBack() throws -> Int {
            switch how {
            case "release": return try queue.release(leases: leases.map(\.id))
            case "retire": return try queue.retire()
            default:
                let call = commands.releasePrefix(prefix)
                let (count, found, _) = try QueueCommands.parseCount(try redis.evalScript(call.0, keys: call.1, args: call.2))
                problems += found
                return count
            }
        }

        #expect(try giveBack() == 2)
        #expect(problems == [QueueKeyProblem(key: low, found: "string", expected: "list")])
        #expect(Set(strings(try redis.command(["LRANGE", main, "0", "-1"]))) == ["m1", "m2"])
        #expect(strings(try redis.command(["HVALS", keys.leases(worker: "w")])) == ["\(low)\nl1"])
        if how == "retire" {
            #expect(try redis.command(["ZSCORE", keys.workers, "w"]).isNil == false, "kept for the reaper")
        }

        _ = try redis.command(["DEL", low])
        #expect(try giveBack() == 1)
        #expect(strings(try redis.command(["LRANGE", low, "0", "-1"])) == ["l1"])
        #expect(try redis.command(["EXISTS", keys.leases(worker: "w")]).int == 0)
        if how == "retire" { #expect(try redis.command(["ZSCORE", keys.workers, "w"]).isNil) }
    }

    /// A due retry naming a wrong-typed queue stays in the retry set (due again a second later); the others move.
    @Test func schedulerLeavesARetryItCannotMoveAndMovesTheOthers() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let (good, bad) = (keys.queue(named: "good"), keys.queue(named: "bad"))
        for (id, queueKey) in [("g", good), ("b", bad)] {
            _ = try redis.command([bytes("ZADD"), bytes(keys.retry), bytes("1"),
                                   JobEnvelope.wrap(job: bytes("{}"), attempt: 2, id: id, queue: queueKey)])
        }
        _ = try redis.command(["SET", bad, "x"])
        let scheduler = try BlockingJobQueue(redis: redis, keys: keys, workerID: "s")
        var problems: [QueueKeyProblem] = []
        scheduler.onKeyProblem = { problems.append($0) }
        let move = try scheduler.moveDueRetries()
        #expect(move.moved == 1)
        #expect(problems == [QueueKeyProblem(key: bad, found: "string", expected: "list")])
        #expect(try redis.command(["LLEN", good]).int == 1)
        #expect(try redis.command(["ZCARD", keys.retry]).int == 1)
        #expect(move.nextDueAt.map { $0 > move.now } == true, "put off, not due at once again")

        _ = try redis.command(["DEL", bad])
        #expect(try waitUntil(seconds: 5) { try scheduler.moveDueRetries().moved == 1 })
        let claimer = try BlockingJobQueue(redis: redis, keys: keys, workerID: "c", queueKeys: [bad])
        #expect(try claimer.claim(max: 1).map(\.jobID) == ["b"])
        #expect(try redis.command(["ZCARD", keys.retry]).int == 0)
    }

    /// The lease-lost recovery cannot take the job back from a queue key that now holds another type: the job
    /// is not there, so that completion is "lease lost" and the rest of the batch still applies.
    @Test func recoveryFromAWrongTypedQueueIsALostLeaseNotAFailedBatch() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue, jobs: ["a", "b"])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        let leases = try queue.claim(max: 2)
        _ = try redis.command(["HDEL", keys.leases(worker: "w"), leases[0].id])
        _ = try redis.command(["SET", keys.queue, "x"])
        let report = try queue.complete(delivered(leases, worker: "w"))
        #expect(report.applied == 1 && report.leasesLost == [leases[0].id])
        #expect(try resultCounts(redis, keys) == [String(decoding: leases[1].job, as: UTF8.self): 1])
    }

    @Test func refusalReplyBecomesATypedError() {
        #expect(RedisError.server("HERALD_WRONGTYPE string list herald:queue:with space").refined()
            == .wrongType(key: "herald:queue:with space", found: "string", expected: "list"))
        #expect(RedisError.server("WRONGTYPE Operation against a key").refined() == .server("WRONGTYPE Operation against a key"))
        #expect(RedisError.connectionLost.refined() == .connectionLost)
    }
}

import Foundation
import Testing
@testable import RedisQueue

/// Completes every lease as delivered, with the job bytes as the result id.
func delivered(_ leases: [Lease], worker: String) -> [JobCompletion] {
    leases.map { lease in
        JobCompletion(lease: lease, result: ResultEntry(id: String(decoding: lease.job, as: UTF8.self), outcome: .delivered,
                                                        status: 200, attempt: lease.attempt, worker: worker))
    }
}

/// Every result id in the stream, with how many times each appears.
func resultCounts(_ redis: any BlockingRedisCommands, _ keys: QueueKeys) throws -> [String: Int] {
    var counts: [String: Int] = [:]
    var start = "-"
    while true {
        let page = try redis.command(["XRANGE", keys.results, start, "+", "COUNT", "5000"]).array ?? []
        for entry in page {
            let fields = entry.array?[1].array ?? []
            var index = 0
            while index + 1 < fields.count {
                if fields[index].string == "id", let id = fields[index + 1].string { counts[id, default: 0] += 1 }
                index += 2
            }
        }
        guard page.count == 5000, let last = page.last?.array?[0].string else { return counts }
        start = "(" + last
    }
}

func push(_ redis: any BlockingRedisCommands, key: String, jobs: [String]) throws {
    var index = 0
    while index < jobs.count {
        let slice = jobs[index..<min(jobs.count, index + 1000)]
        _ = try redis.command(["LPUSH", key] + slice)
        index += 1000
    }
}

@Suite struct QueueTests {
    @Test func parallelClaimersNeverShareAJobAndLoseNone() throws {
        let keys = TestRedis.keys()
        let setup = try TestRedis.blocking()
        let total = 20_000
        try push(setup, key: keys.queue, jobs: (0..<total).map { "job-\($0)" })
        let seen = Box<[[String]]>(Array(repeating: [], count: 4))
        let failures = Box<[String]>([])
        let lock = NSLock()
        let group = DispatchGroup()
        for worker in 0..<4 {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    let queue = try BlockingJobQueue(redis: try TestRedis.blocking(), keys: keys, workerID: "w\(worker)")
                    var mine: [String] = []
                    while true {
                        let leases = try queue.claim(max: 256)
                        if leases.isEmpty { break }
                        mine += leases.map { String(decoding: $0.job, as: UTF8.self) }
                        let report = try queue.complete(delivered(leases, worker: "w\(worker)"))
                        if report.applied != leases.count { throw RedisError.protocolError("applied \(report.applied)") }
                    }
                    lock.withLock { seen.value[worker] = mine }
                } catch {
                    lock.withLock { failures.value.append("\(error)") }
                }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 120) == .success)
        #expect(failures.value.isEmpty, "\(failures.value)")
        let all = seen.value.flatMap { $0 }
        #expect(all.count == total)
        #expect(Set(all).count == total)
        #expect(seen.value.filter { !$0.isEmpty }.count >= 2, "the claimers ran in parallel")
        let counts = try resultCounts(setup, keys)
        #expect(counts.count == total && counts.values.allSatisfy { $0 == 1 })
        #expect(try setup.command(["LLEN", keys.queue]).int == 0)
    }

    @Test func claimTakesOldestFirstAcrossPriorityQueues() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue(named: "low"), jobs: ["l1", "l2"])
        try push(redis, key: keys.queue(named: "high"), jobs: ["h1", "h2", "h3"])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w",
                                         queueKeys: [keys.queue(named: "high"), keys.queue(named: "low")])
        let leases = try queue.claim(max: 4)
        #expect(leases.map { String(decoding: $0.job, as: UTF8.self) } == ["h1", "h2", "h3", "l1"])
        #expect(leases.map(\.queueKey) == Array(repeating: keys.queue(named: "high"), count: 3) + [keys.queue(named: "low")])
        #expect(Set(leases.map(\.id)).count == 4)
        #expect(try redis.command(["HLEN", keys.leases(worker: "w")]).int == 4)
    }

    @Test func twoIdenticalJobsAreTwoJobs() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue, jobs: [#"{"token":"aa"}"#, #"{"token":"aa"}"#])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        let leases = try queue.claim(max: 10)
        #expect(leases.count == 2)
        let report = try queue.complete(delivered(leases, worker: "w"))
        #expect(report.applied == 2)
        #expect(try redis.command(["XLEN", keys.results]).int == 2)
    }

    @Test func deadWorkersLeasesComeBackExactlyOnceWithThreeReapers() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let jobs = (0..<500).map { "j\($0)" }
        try push(redis, key: keys.queue, jobs: jobs)
        var options = JobQueueOptions()
        options.leaseMilliseconds = 300
        let doomed = try BlockingJobQueue(redis: redis, keys: keys, workerID: "doomed", options: options)
        #expect(try doomed.claim(max: 200).count == 200)
        #expect(try doomed.claim(max: 300).count == 300)
        #expect(try redis.command(["LLEN", keys.queue]).int == 0)
        // It stops heartbeating now. Three reapers race.
        let returned = Box<[Int]>([0, 0, 0])
        let lock = NSLock()
        let group = DispatchGroup()
        for index in 0..<3 {
            group.enter()
            Thread {
                defer { group.leave() }
                guard let reaper = try? BlockingJobQueue(redis: TestRedis.blocking(), keys: keys, workerID: "reaper\(index)") else { return }
                // Run well past the 300 ms lease so all three are reaping when it expires.
                let deadline = Date().addingTimeInterval(1.5)
                while Date() < deadline {
                    let count = (try? reaper.reap()) ?? 0
                    lock.withLock { returned.value[index] += count }
                    usleep(1_000)
                }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 30) == .success)
        #expect(returned.value.reduce(0, +) == 500)
        let queued = (try redis.command(["LRANGE", keys.queue, "0", "-1"]).array ?? []).compactMap(\.string)
        #expect(queued.count == 500 && Set(queued) == Set(jobs))
        #expect(try redis.command(["ZSCORE", keys.workers, "doomed"]).isNil)
    }

    @Test func leaseLostRuleGivesExactlyOneTerminalResult() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        var short = JobQueueOptions()
        short.leaseMilliseconds = 50
        let a = try BlockingJobQueue(redis: redis, keys: keys, workerID: "a", options: short)
        let b = try BlockingJobQueue(redis: try TestRedis.blocking(), keys: keys, workerID: "b")
        let reaper = try BlockingJobQueue(redis: try TestRedis.blocking(), keys: keys, workerID: "r")

        // 1. Reaped but not re-claimed: the slow worker takes it back from the queue and finishes it.
        try push(redis, key: keys.queue, jobs: ["one"])
        let first = try a.claim(max: 1)
        usleep(120_000)
        #expect(try reaper.reap() == 1)
        let recovered = try a.complete(delivered(first, worker: "a"))
        #expect(recovered.recovered == 1 && recovered.leasesLost.isEmpty)
        #expect(try redis.command(["LLEN", keys.queue]).int == 0)

        // 2. Reaped and re-claimed by another worker: the slow worker writes nothing.
        try push(redis, key: keys.queue, jobs: ["two"])
        let slow = try a.claim(max: 1)
        usleep(120_000)
        #expect(try reaper.reap() == 1)
        let taken = try b.claim(max: 1)
        #expect(taken.map(\.job) == slow.map(\.job))
        let lost = try a.complete(delivered(slow, worker: "a"))
        #expect(lost.leasesLost == slow.map(\.id) && lost.applied == 0)
        let done = try b.complete(delivered(taken, worker: "b"))
        #expect(done.applied == 1)

        // 3. Re-sending an applied batch (reply lost in a reconnect) writes nothing twice.
        let again = try b.complete(delivered(taken, worker: "b"))
        #expect(again.leasesLost.count == 1)

        #expect(try resultCounts(redis, keys) == ["one": 1, "two": 1])
    }

    @Test func retryGoesThroughTheScheduleAndKeepsIdAttemptAndBytes() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let job = #"{"token":"ab","payload":{"aps":{"alert":"x"}}}"#
        try push(redis, key: keys.queue, jobs: [job])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        let lease = try #require(try queue.claim(max: 1).first)
        #expect(lease.attempt == 1 && lease.jobID == nil)
        var completion = JobCompletion(lease: lease, result: ResultEntry(id: "herald-1", outcome: .retrying, status: 503,
                                                                         attempt: 1, retryAt: 0, worker: "w"))
        completion.scheduleRetry(at: 0, id: "herald-1")
        #expect(try queue.complete([completion]).applied == 1)
        #expect(try redis.command(["ZCARD", keys.retry]).int == 1)
        let move = try queue.moveDueRetries()
        #expect(move.moved == 1 && move.nextDueAt == nil)
        let retried = try #require(try queue.claim(max: 1).first)
        #expect(retried.job == Array(job.utf8) && retried.attempt == 2 && retried.jobID == "herald-1" && retried.queueKey == keys.queue)
        var again = JobCompletion(lease: retried)
        again.scheduleRetry(at: 0, id: retried.jobID!)
        _ = try queue.complete([again])
        _ = try queue.moveDueRetries()
        let third = try #require(try queue.claim(max: 1).first)
        #expect(third.job == Array(job.utf8) && third.attempt == 3 && third.jobID == "herald-1")
    }

    @Test func schedulerRunByThreeAtOnceMovesEachDueJobOnce() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let total = 3_000
        var commands: [[[UInt8]]] = []
        for index in 0..<total {
            let member = JobEnvelope.wrap(job: bytes("\"r\(index)\""), attempt: 2, id: "r\(index)", queue: keys.queue)
            commands.append([bytes("ZADD"), bytes(keys.retry), bytes("\(index)"), member])
        }
        let future = JobEnvelope.wrap(job: bytes("\"later\""), attempt: 2, id: "later", queue: keys.queue)
        commands.append([bytes("ZADD"), bytes(keys.retry), bytes("4102444800000"), future])
        _ = try redis.pipeline(rawCommands: commands)
        let moved = Box<[Int]>([0, 0, 0])
        let lock = NSLock()
        let group = DispatchGroup()
        for index in 0..<3 {
            group.enter()
            Thread {
                defer { group.leave() }
                var options = JobQueueOptions()
                options.retryMovesPerCall = 97
                guard let scheduler = try? BlockingJobQueue(redis: TestRedis.blocking(), keys: keys, workerID: "s\(index)", options: options) else { return }
                while let move = try? scheduler.moveDueRetries() {
                    lock.withLock { moved.value[index] += move.moved }
                    if move.moved == 0 { break }
                }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(moved.value.reduce(0, +) == total)
        let queued = (try redis.command(["LRANGE", keys.queue, "0", "-1"]).array ?? []).compactMap(\.bytes)
        let ids = queued.compactMap { JobEnvelope.unwrap($0).id }
        #expect(ids.count == total && Set(ids).count == total)
        #expect(try redis.command(["ZCARD", keys.retry]).int == 1)
        let last = try BlockingJobQueue(redis: redis, keys: keys, workerID: "x").moveDueRetries()
        #expect(last.moved == 0 && last.nextDueAt == 4_102_444_800_000)
    }

    @Test func schedulerPassTakesOldestDueFirst() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        for (score, id) in [(30, "c"), (10, "a"), (20, "b")] {
            _ = try redis.command([bytes("ZADD"), bytes(keys.retry), bytes("\(score)"),
                                   JobEnvelope.wrap(job: bytes("{}"), attempt: 2, id: id, queue: keys.queue(named: "x"))])
        }
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w", queueKeys: [keys.queue(named: "x")])
        #expect(try queue.moveDueRetries().moved == 3)
        #expect(try queue.claim(max: 3).map(\.jobID) == ["a", "b", "c"])
    }

    @Test func deadLetterThroughRedisKeepsRawBytesIncludingTenMegabytes() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let huge = bytes("{\"token\":\"") + Array(repeating: UInt8(ascii: "x"), count: 10_000_000)
        let invalid: [UInt8] = [0x7B, 0xFF, 0xC3, 0x28, 0x00]
        _ = try redis.pipeline(rawCommands: [[bytes("LPUSH"), bytes(keys.queue), huge], [bytes("LPUSH"), bytes(keys.queue), invalid],
                                             [bytes("LPUSH"), bytes(keys.queue), bytes(#"{"token":"00"}"#)]])
        var options = JobQueueOptions()
        options.deadMaxLength = 2
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w", options: options)
        let leases = try queue.claim(max: 10)
        #expect(leases.count == 3)
        var batch: [JobCompletion] = []
        for lease in leases {
            var completion = JobCompletion(lease: lease, result: ResultEntry(id: "x", outcome: .rejected, reason: "bad", worker: "w"))
            if lease.job != bytes(#"{"token":"00"}"#) { completion.deadLetter(reason: "not JSON", at: 42) }
            batch.append(completion)
        }
        #expect(try queue.complete(batch).applied == 3)
        let stored = (try redis.command(["LRANGE", keys.dead, "0", "-1"]).array ?? []).compactMap(\.bytes)
        #expect(stored.count == 2)
        let decoded = stored.compactMap(DeadLetterEntry.decode)
        #expect(Set(decoded.map(\.job)) == Set([huge, invalid]))
        #expect(decoded.allSatisfy { $0.reason == "not JSON" && $0.at == 42 })
    }

    @Test func droppedTokenAndStats() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue, jobs: ["a", "b", "c"])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        let leases = try queue.claim(max: 2)
        var completion = JobCompletion(lease: leases[0], result: ResultEntry(id: "a", outcome: .tokenDropped, status: 410, worker: "w"),
                                       droppedToken: DroppedToken(token: "aa", topic: "t", environment: "production",
                                                                  reason: "Unregistered", invalidSince: 5))
        completion.retry = nil
        _ = try queue.complete([completion])
        let dropped = try redis.command(["XRANGE", keys.droppedTokens, "-", "+"]).array ?? []
        #expect(dropped.count == 1)
        #expect(dropped.first?.array?[1].array?.compactMap(\.string) ==
            ["token", "aa", "topic", "t", "environment", "production", "reason", "Unregistered", "invalid_since", "5"])
        _ = try redis.command(["ZADD", keys.retry, "1", "due", "4102444800000", "later"])
        let stats = try QueueStats.read(redis: redis, keys: keys)
        #expect(stats.queueLengths == [keys.queue: 1])
        #expect(stats.leasesInFlight == 1 && stats.liveWorkers == 1 && stats.expiredWorkers == 0)
        #expect(stats.retryDueNow == 1 && stats.retryDueLater == 1)
        #expect(stats.outcomesLastMinute == ["token_dropped": 1] && stats.outcomesLastHour == ["token_dropped": 1])
        #expect(stats.droppedTokensLength == 1 && stats.deadLetters == 0)
        #expect(try queue.retire() == 1)
        #expect(try redis.command(["LLEN", keys.queue]).int == 2)
        #expect(try redis.command(["ZCARD", keys.workers]).int == 0)
    }

    /// Issue 54: while a purge or requeue pass runs, the letters it has not looked at yet sit in `dead:sweep`; they
    /// are still dead letters, and `herald stats` counts them (it showed only the ones written since the pass began).
    @Test func statsCountTheLettersAPassHasNotLookedAtYet() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.deadSweep, jobs: ["old-1", "old-2", "old-3"])
        try push(redis, key: keys.dead, jobs: ["new-1"])
        #expect(try QueueStats.read(redis: redis, keys: keys).deadLetters == 4)
    }

    @Test func enqueuerPushesGoodLinesAndReportsRefusals() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let lines: [[UInt8]] = [bytes("{\"token\":\"aa\"}\n"), bytes("not json\r\n"), bytes("   "), bytes("{\"token\":\"bb\"}"), bytes("[]")]
        let report = Enqueuer.enqueue(lines: lines, redis: redis, queueKey: keys.queue, validate: { line in
            guard line.first == UInt8(ascii: "{") else { return "not a JSON object" }
            return nil
        }, batchSize: 1)
        #expect(report.pushed == 2 && report.blank == 1)
        #expect(report.pushedLines == [1...1, 4...4] && report.interruption == nil)
        #expect(report.refused == [Enqueuer.Refusal(line: 2, reason: "not a JSON object"), Enqueuer.Refusal(line: 5, reason: "not a JSON object")])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        #expect(try queue.claim(max: 5).map { String(decoding: $0.job, as: UTF8.self) } == [#"{"token":"aa"}"#, #"{"token":"bb"}"#])
    }
}

import Foundation
import Reactor
import Testing
@testable import RedisQueue

/// Issue 13: every script declares each key it touches. Every script path runs key-checked (`KeyCheck`: a touch
/// of an undeclared key fails the call), including the ones whose keys come from data: leases and retries in
/// queues the worker does not list, another worker's lease hash.
@Suite struct ScriptKeysTests {
    private func checked() throws -> KeyCheckedRedis { try TestRedis.blocking() }

    private func values(_ reply: RESPValue) -> [String] { (reply.array ?? []).compactMap(\.string) }

    @Test func theCheckRefusesAScriptThatTouchesAKeyItDidNotDeclare() throws {
        let keys = TestRedis.keys()
        let redis = try checked()
        let script = RedisScript("redis.call('SET', KEYS[1], 'a'); return redis.call('GET', KEYS[1] .. ':computed')")
        #expect(throws: RedisError.self) { _ = try redis.evalScript(script, keys: [bytes(keys.queue)], args: []) }
        do {
            _ = try redis.evalScript(script, keys: [bytes(keys.queue)], args: [])
        } catch {
            #expect(KeyCheck.isUndeclared(error))
            #expect("\(error)".contains("\(keys.queue):computed"))
        }
        // Every key of a multi-key command, and pcall too; the declared ones pass.
        let del = RedisScript("return redis.pcall('DEL', KEYS[1], ARGV[1])")
        #expect(throws: RedisError.self) { _ = try redis.evalScript(del, keys: [bytes(keys.queue)], args: [bytes(keys.dead)]) }
        #expect(try redis.evalScript(del, keys: [bytes(keys.queue), bytes(keys.dead)], args: [bytes(keys.dead)]).int == 1)
        // The same script unchecked runs: the check is what refuses it.
        let plain = try BlockingRedis(url: TestRedis.url)
        #expect(try plain.evalScript(script, keys: [bytes(keys.queue)], args: []).isNil)
    }

    /// What each of today's scripts would do if it still computed keys: the check catches it.
    @Test func theCheckCatchesALeaseReturnToAQueueThatIsNotDeclared() throws {
        let keys = TestRedis.keys()
        let redis = try checked()
        let other = keys.queue(named: "other")
        _ = try redis.command(["HSET", keys.leases(worker: "w"), "1.1", "\(other)\njob"])
        // Undeclared queue: `release` does not touch it, it answers that it needs it.
        let reply = try redis.evalScript(QueueScripts.release, keys: [bytes(keys.leases(worker: "w"))], args: [bytes("1.1")])
        #expect(reply.array?.first?.int == 0)
        #expect(values(reply.array?.last ?? .array([])) == [other])
        #expect(try redis.command(["HLEN", keys.leases(worker: "w")]).int == 1, "nothing touched")
        #expect(try redis.command(["EXISTS", other]).int == 0)
        // A version of the prelude's giveBack that pushes without asking: refused by the check.
        let careless = RedisScript(#"""
        local v = redis.call('HGET', KEYS[1], ARGV[1])
        local nl = string.find(v, '\n', 1, true)
        return redis.call('RPUSH', string.sub(v, 1, nl - 1), string.sub(v, nl + 1))
        """#)
        do {
            _ = try redis.evalScript(careless, keys: [bytes(keys.leases(worker: "w"))], args: [bytes("1.1")])
            Issue.record("an undeclared RPUSH went through")
        } catch {
            #expect(KeyCheck.isUndeclared(error) && "\(error)".contains("RPUSH \(other)"))
        }
    }

    /// Each call declares what the ones before asked for; a script that keeps asking for new keys is given up on.
    @Test func keyRoundsDeclareWhatWasAskedForAndGiveUpAfterFourCalls() throws {
        var rounds = KeyRounds(script: "moveDue")
        #expect(try rounds.again(needs: [bytes("q1")]))
        #expect(try rounds.again(needs: [bytes("q2"), bytes("q1")]))
        #expect(rounds.learnt == [bytes("q1"), bytes("q2")])
        #expect(try rounds.again(needs: [bytes("q3")]))
        #expect(throws: RedisError.self) { try rounds.again(needs: [bytes("q4")]) }
        var done = KeyRounds(script: "release")
        #expect(try done.again(needs: []) == false)
    }

    @Test func claimCompleteWithEveryKindOfOutcomeDeclaresItsKeys() throws {
        let keys = TestRedis.keys()
        let redis = try checked()
        let (main, urgent) = (keys.queue, keys.queue(named: "urgent"))
        var options = JobQueueOptions()
        options.leaseMilliseconds = 60_000
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w", queueKeys: [urgent, main], options: options)
        let multicast = #"{"id":"m","tokens":["t1","t2"],"payload":{}}"#
        try push(redis, key: urgent, jobs: ["u1", "u2", multicast])
        try push(redis, key: main, jobs: ["m1", "m2", "m3", "m4"])
        try queue.renewHeartbeat()
        let leases = try queue.claim(max: 7)
        #expect(leases.count == 7)
        let once = try queue.claimOnce(leases.map { (lease: $0, jobID: "id-" + String(decoding: $0.job.prefix(2), as: UTF8.self)) },
                                       windowMilliseconds: 60_000)
        #expect(once.allSatisfy { $0 == .claimed })
        var batch = delivered(leases, worker: "w")
        batch[0].scheduleRetry(at: 0, id: "r")
        batch[0].once = OnceUpdate(jobID: "id-" + String(decoding: leases[0].job.prefix(2), as: UTF8.self), expect: .lease, state: .pending)
        batch[1].deadLetter(reason: "BadDeviceToken", at: 1)
        batch[1].droppedToken = DroppedToken(token: "t", topic: "a", environment: "production", reason: "BadDeviceToken")
        batch[2].droppedChannel = DroppedChannel(channel: "c", bundleID: "b", environment: "production", reason: "ChannelNotRegistered")
        batch[3].archived = ArchivedJob(id: "a", outcome: .failed, reason: "x", queue: leases[3].queueKey, attempt: 1, job: leases[3].job)
        batch[3].once = OnceUpdate(jobID: "id-" + String(decoding: leases[3].job.prefix(2), as: UTF8.self), expect: .lease, state: .done)
        let parent = try #require(batch.firstIndex { $0.lease.raw == bytes(multicast) })
        batch[parent].expansion = Expansion(jobID: "m", tokens: ["t1", "t2"], jobPrefix: bytes(#"{"id":"m","token":""#),
                                            jobSuffix: bytes(#"","payload":{}}"#))
        #expect(try queue.complete(batch).applied == 7)
        #expect(try redis.command(["LLEN", urgent]).int == 2, "the children, in the parent's queue")
        #expect(try redis.command(["ZCARD", keys.retry]).int == 1)

        // The retry (to urgent or main) comes back through the scheduler, then a repeat and a lost lease.
        #expect(try queue.moveDueRetries().moved == 1)
        let again = try queue.claim(max: 3)
        #expect(again.count == 3)
        #expect(try queue.complete(delivered(again, worker: "w")).applied == 3)
        #expect(try queue.complete(delivered(again, worker: "w"), isRepeat: true).unconfirmed == 3)
        #expect(try redis.command(["XLEN", keys.results]).int == 10)
        #expect(try queue.retire() == 0)
    }

    @Test func aLostLeaseIsRecoveredFromItsQueueWithTheQueueDeclared() throws {
        let keys = TestRedis.keys()
        let redis = try checked()
        let low = keys.queue(named: "low")
        var short = JobQueueOptions()
        short.leaseMilliseconds = 50
        let slow = try BlockingJobQueue(redis: redis, keys: keys, workerID: "slow", queueKeys: [low], options: short)
        try push(redis, key: low, jobs: ["a", "b"])
        let leases = try slow.claim(max: 2)
        usleep(120_000)
        // A reaper that lists only the default queue: the dead worker's leases name `low`, learnt from the reply.
        let reaper = try BlockingJobQueue(redis: try checked(), keys: keys, workerID: "reaper")
        #expect(try reaper.reap() == 2)
        // One job taken again by the reaper's worker, the other still queued: lost, and recovered.
        let taken = try #require(try BlockingJobQueue(redis: try checked(), keys: keys, workerID: "r2", queueKeys: [low]).claim(max: 1).first)
        let report = try slow.complete(delivered(leases, worker: "slow"))
        #expect(report.recovered == 1 && report.leasesLost.count == 1)
        #expect(report.leasesLost == leases.filter { $0.raw == taken.raw }.map(\.id))
    }

    @Test func theReaperReturnsLeasesOfManyQueuesItDoesNotList() throws {
        let keys = TestRedis.keys()
        let redis = try checked()
        let queues = (0..<5).map { keys.queue(named: "q\($0)") }
        var short = JobQueueOptions()
        short.leaseMilliseconds = 50
        for (n, key) in queues.enumerated() {
            try push(redis, key: key, jobs: ["\(n)a", "\(n)b"])
            // Two dead workers, each with leases in several queues.
            let worker = try BlockingJobQueue(redis: redis, keys: keys, workerID: "dead\(n % 2)", queueKeys: [key], options: short)
            #expect(try worker.claim(max: 2).count == 2)
        }
        _ = try redis.command(["SET", queues[4], "not a list"])
        usleep(120_000)
        let reaper = try BlockingJobQueue(redis: redis, keys: keys, workerID: "reaper", queueKeys: [queues[0]])
        var problems: [QueueKeyProblem] = []
        reaper.onKeyProblem = { problems.append($0) }
        #expect(try reaper.reap() == 8, "the leases of q4 wait until it is fixed")
        #expect(problems.contains(QueueKeyProblem(key: queues[4], found: "string", expected: "list")))
        for key in queues.prefix(4) { #expect(try redis.command(["LLEN", key]).int == 2) }
        _ = try redis.command(["DEL", queues[4]])
        #expect(try reaper.reap() == 2)
        #expect(try redis.command(["ZCARD", keys.workers]).int == 0)
    }

    @Test(arguments: ["release", "releasePrefix", "retire"])
    func leasesOfQueuesTheWorkerNoLongerListsGoBackToThem(how: String) throws {
        let keys = TestRedis.keys()
        let redis = try checked()
        let (old, new) = (keys.queue(named: "old"), keys.queue(named: "new"))
        try push(redis, key: old, jobs: ["o1", "o2"])
        try push(redis, key: new, jobs: ["n1"])
        let before = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w", queueKeys: [old, new])
        let leases = try before.claim(max: 3)
        // The same worker id, restarted with other queues.
        let after = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w", queueKeys: [new])
        let returned: Int
        switch how {
        case "release": returned = try after.release(leases: leases.map(\.id))
        case "retire": returned = try after.retire()
        default:
            let commands = try QueueCommands(keys: keys, workerID: "w", queueKeys: [new], options: JobQueueOptions())
            var rounds = KeyRounds(script: "releasePrefix")
            var total = 0
            while true {
                let call = commands.releasePrefix(String(leases[0].id.dropLast()), learnt: rounds.learnt)
                let (count, _, needs) = try QueueCommands.parseCount(try redis.evalScript(call.0, keys: call.1, args: call.2))
                total += count
                if try !rounds.again(needs: needs) { break }
            }
            #expect(rounds.learnt == [bytes(old)])
            returned = total
        }
        #expect(returned == 3)
        #expect(Set(values(try redis.command(["LRANGE", old, "0", "-1"]))) == ["o1", "o2"])
        #expect(try redis.command(["EXISTS", keys.leases(worker: "w")]).int == 0)
    }

    @Test func theSchedulerMovesEnvelopesNamingQueuesItDoesNotList() throws {
        let keys = TestRedis.keys()
        let redis = try checked()
        let queues = (0..<4).map { keys.queue(named: "s\($0)") }
        for (n, key) in queues.enumerated() {
            _ = try redis.command(["ZADD", keys.retry, "\(n)", String(decoding: JobEnvelope.wrap(job: bytes("j\(n)"), attempt: 2, id: "i\(n)", queue: key), as: UTF8.self)])
        }
        _ = try redis.command(["ZADD", keys.retry, "9", "plain job"])  // no envelope: the default queue
        let scheduler = try BlockingJobQueue(redis: redis, keys: keys, workerID: "sched")
        let move = try scheduler.moveDueRetries()
        #expect(move.moved == 5 && move.nextDueAt == nil)
        for key in queues { #expect(try redis.command(["LLEN", key]).int == 1) }
        #expect(values(try redis.command(["LRANGE", keys.queue, "0", "-1"])) == ["plain job"])
    }

    @Test func anIdempotencyKeyHeldByAnotherWorkersLeaseIsDecidedWithItsHashDeclared() throws {
        let keys = TestRedis.keys()
        let redis = try checked()
        try push(redis, key: keys.queue, jobs: ["x", "y", "z"])
        let first = try BlockingJobQueue(redis: redis, keys: keys, workerID: "first")
        let second = try BlockingJobQueue(redis: redis, keys: keys, workerID: "second")
        let a = try first.claim(max: 1)
        let b = try second.claim(max: 2)
        // `first` holds id "x" with a live lease; the second worker's copies of it are duplicates, twice in a batch.
        #expect(try first.claimOnce([(a[0], "x")], windowMilliseconds: 60_000) == [.claimed])
        #expect(try second.claimOnce([(b[0], "x"), (b[1], "x")], windowMilliseconds: 60_000) == [.duplicate, .duplicate])
        // Once `first`'s lease is gone (released), the copy takes over.
        #expect(try first.release(leases: a.map(\.id)) == 1)
        #expect(try second.claimOnce([(b[1], "x")], windowMilliseconds: 60_000) == [.claimed])
        #expect(try redis.command(["GET", keys.once(jobID: "x")]).string == "second\n\(b[1].id)")
    }

    @Test func replayDeclaresTheQueueOfEachArchivedJob() throws {
        let keys = TestRedis.keys()
        let redis = try checked()
        let queues = [keys.queue(named: "r0"), keys.queue(named: "r1")]
        for key in queues { try push(redis, key: key, jobs: [#"{"id":"\#(key)","payload":{}}"#]) }
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w", queueKeys: queues)
        let leases = try queue.claim(max: 2)
        let batch = leases.map { lease in
            var completion = JobCompletion(lease: lease, result: ResultEntry(id: lease.queueKey, outcome: .failed, reason: "x", attempt: 1, worker: "w"))
            completion.archived = ArchivedJob(id: lease.queueKey, outcome: .failed, reason: "x", queue: lease.queueKey, attempt: 1, job: lease.job)
            return completion
        }
        #expect(try queue.complete(batch).applied == 2)
        let chosen = try ArchiveReplay.select(redis: redis, keys: keys, filter: ReplayFilter())
        #expect(try ArchiveReplay.replay(chosen, redis: redis, keys: keys, worker: "w").replayed == 2)
        for key in queues { #expect(try redis.command(["LLEN", key]).int == 1) }
    }

    /// `herald scheduled cancel`: the retry set, the results and each cancelled job's once key, declared; a pending
    /// once key becomes done, another copy's key and a job moved meanwhile are left alone.
    @Test func cancellingScheduledJobsDeclaresEachOnceKeyAndWritesOneCancelledEntryEach() throws {
        let keys = TestRedis.keys()
        let redis = try checked()
        for (n, id) in ["a", "b", "c"].enumerated() {
            let member = JobEnvelope.wrap(job: bytes(#"{"id":"\#(id)","app":"shop","token":"t\#(n)","payload":{}}"#), attempt: n + 1, id: id, queue: keys.queue)
            _ = try redis.command([bytes("ZADD"), bytes(keys.retry), bytes(String(4_000_000_000_000 + n)), member])
        }
        _ = try redis.command(["SET", keys.once(jobID: "a"), "pending"])
        _ = try redis.command(["SET", keys.once(jobID: "b"), "w\n1.1"])
        var filter = ScheduledFilter()
        filter.ids = ["a", "b"]
        let chosen = try ScheduledJobs.select(redis: redis, keys: keys, filter: filter)
        #expect(chosen.map(\.id) == ["a", "b"] && chosen.map(\.attempt) == [1, 2] && chosen.allSatisfy { $0.app == "shop" && $0.queue == keys.queue })
        #expect(try ScheduledJobs.cancel(chosen, redis: redis, keys: keys, worker: "tool") == { var r = CancelReport(); r.cancelled = 2; return r }())
        #expect(try ScheduledJobs.cancel(chosen, redis: redis, keys: keys, worker: "tool").gone == 2, "cancelled once")
        #expect(try redis.command(["ZCARD", keys.retry]).int == 1)
        #expect(try redis.command(["GET", keys.once(jobID: "a")]).string == "done")
        #expect(try redis.command(["GET", keys.once(jobID: "b")]).string == "w\n1.1", "a key held by a sender is not touched")
        let entries = try redis.command(["XRANGE", keys.results, "-", "+"]).array ?? []
        let outcomes = entries.compactMap { $0.array?.last?.array?.compactMap(\.string) }.map { fields in
            Dictionary(uniqueKeysWithValues: stride(from: 0, to: fields.count - 1, by: 2).map { (fields[$0], fields[$0 + 1]) })
        }
        #expect(outcomes.map { $0["id"] } == ["a", "b"] && outcomes.allSatisfy { $0["outcome"] == "cancelled" && $0["app"] == "shop" }, "\(outcomes)")
        #expect(outcomes.map { $0["token"] } == ["t0", "t1"])
    }

    /// The loop front end: claim, heartbeat, complete, claimOnce, reap, the scheduler, release, retire, all checked.
    @Test func theLoopFrontEndRunsEveryScriptWithItsKeysDeclared() throws {
        let keys = TestRedis.keys()
        let setup = try checked()
        let (main, side) = (keys.queue, keys.queue(named: "side"))
        try push(setup, key: main, jobs: ["a", "b", "c"])
        try push(setup, key: side, jobs: ["s"])
        var short = JobQueueOptions()
        short.leaseMilliseconds = 50
        let dead = try BlockingJobQueue(redis: setup, keys: keys, workerID: "dead", queueKeys: [side], options: short)
        #expect(try dead.claim(max: 1).count == 1)
        _ = try setup.command(["ZADD", keys.retry, "1", String(decoding: JobEnvelope.wrap(job: bytes("r"), attempt: 2, id: "r", queue: side), as: UTF8.self)])
        usleep(120_000)

        let loop = try EventLoop.startThread(name: "script-keys")
        defer { loop.stop(); _ = loop.waitUntilStopped() }
        let outcome = Box<[String]>([])
        let done = DispatchSemaphore(value: 0)
        try loop.submit {
            let connection = RedisConnection(url: TestRedis.url, loop: loop)
            connection.start()
            let queue = try JobQueue(connection: KeyCheckedSender(connection), keys: keys, workerID: "loop", queueKeys: [main])
            func note(_ what: String) { outcome.value.append(what) }
            func finish() { connection.close(); done.signal() }
            queue.renewHeartbeat { note("heartbeat \((try? $0.get()) != nil)") }
            queue.reap { result in
                note("reaped \((try? result.get()) ?? -1)")
                queue.moveDueRetries { result in
                    note("moved \((try? result.get())?.moved ?? -1)")
                    queue.claim(max: 2) { result in
                        let leases = (try? result.get()) ?? []
                        note("claimed \(leases.count)")
                        queue.claimOnce(leases.map { ($0, "id") }, windowMilliseconds: 60_000) { result in
                            note("once \((try? result.get()) ?? [])")
                            queue.release(leases: [leases[1].id]) { result in
                                note("released \((try? result.get()) ?? -1)")
                                queue.complete(delivered([leases[0]], worker: "loop")) { result in
                                    note("applied \((try? result.get())?.applied ?? -1)")
                                    queue.retire { result in
                                        note("retired \((try? result.get()) ?? -1)")
                                        finish()
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(outcome.value == ["heartbeat true", "reaped 1", "moved 1", "claimed 2", "once [RedisQueue.OnceVerdict.claimed, RedisQueue.OnceVerdict.duplicate]",
                                  "released 1", "applied 1", "retired 0"])
        #expect(try setup.command(["LLEN", side]).int == 2, "the reaped lease and the retry, in the queue the loop worker does not list")
    }
}

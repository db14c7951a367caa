import Foundation
import Testing
@testable import RedisQueue

/// `DeadLetters` (behind `herald dead`) on a real Redis, key-checked: requeue moves the producer's exact bytes onto
/// the queue and off the list in one script, so two tools at once move a letter once; purge removes only what was
/// chosen; a queue key of another type keeps every letter.
@Suite struct DeadLettersTests {
    private func letter(_ id: String, reason: String, at: Int64, job: String) -> [UInt8] {
        DeadLetterEntry.encode(reason: reason, at: at, id: id, job: Array(job.utf8))
    }

    private func fill(_ redis: KeyCheckedRedis, _ keys: QueueKeys) throws {
        // LPUSH as the completion script does: the newest at the head.
        for (i, (reason, app)) in [("unknown_app: no app named shop", "shop"), ("bad_token: not hexadecimal", "news"),
                                   ("unknown_app: no app named shop", "shop")].enumerated() {
            let job = #"{"id":"j\#(i)","app":"\#(app)","token":"t\#(i)","payload":{}}"#
            _ = try redis.command(["LPUSH", keys.dead, String(decoding: letter("j\(i)", reason: reason, at: 1_000 + Int64(i), job: job), as: UTF8.self)])
        }
    }

    @Test func requeueMovesTheChosenJobsAsTheProducerWroteThemAndOnlyOnce() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try fill(redis, keys)
        var filter = DeadLetterFilter()
        filter.reasons = ["unknown_app"]
        let chosen = try DeadLetters.select(redis: redis, keys: keys, filter: filter)
        #expect(chosen.map { $0.entry.id } == ["j0", "j2"], "oldest first, only the matching reason")
        #expect(chosen.allSatisfy { $0.app == "shop" })
        let first = try DeadLetters.requeue(chosen, redis: redis, keys: keys, queue: keys.queue)
        #expect(first.done == 2 && first.gone == 0 && first.kept == 0)
        // A second tool that read the same list before the first one ran: nothing moves twice.
        let second = try DeadLetters.requeue(chosen, redis: redis, keys: keys, queue: keys.queue)
        #expect(second.done == 0 && second.gone == 2)
        let queued = try #require(try redis.command(["LRANGE", keys.queue, "0", "-1"]).array?.compactMap(\.string))
        #expect(queued.sorted() == [#"{"id":"j0","app":"shop","token":"t0","payload":{}}"#, #"{"id":"j2","app":"shop","token":"t2","payload":{}}"#])
        let left = try DeadLetters.select(redis: redis, keys: keys, filter: DeadLetterFilter())
        #expect(left.map { $0.entry.id } == ["j1"])
    }

    @Test func purgeRemovesOnlyTheChosenLettersByAppAndAge() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try fill(redis, keys)
        var filter = DeadLetterFilter()
        filter.apps = ["shop"]
        filter.until = 1_001
        let chosen = try DeadLetters.select(redis: redis, keys: keys, filter: filter)
        #expect(chosen.map { $0.entry.id } == ["j0"])
        #expect(try DeadLetters.purge(chosen, redis: redis, keys: keys).done == 1)
        #expect(try DeadLetters.select(redis: redis, keys: keys, filter: DeadLetterFilter()).map { $0.entry.id } == ["j1", "j2"])
        var limited = DeadLetterFilter()
        limited.since = 1_001
        #expect(try DeadLetters.select(redis: redis, keys: keys, filter: limited, limit: 1).map { $0.entry.id } == ["j2"], "the newest that match")
    }

    @Test func aQueueKeyOfAnotherTypeKeepsEveryLetterAndIsNamed() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try fill(redis, keys)
        _ = try redis.command(["SET", keys.queue, "not a list"])
        let chosen = try DeadLetters.select(redis: redis, keys: keys, filter: DeadLetterFilter())
        let report = try DeadLetters.requeue(chosen, redis: redis, keys: keys, queue: keys.queue)
        #expect(report.done == 0 && report.kept == 3)
        #expect(report.problems == [QueueKeyProblem(key: keys.queue, found: "string", expected: "list")])
        #expect(try redis.command(["LLEN", keys.dead]).int == 3)
    }

    @Test func aTruncatedJobIsNotRequeueable() throws {
        let entry = DeadLetterEntry.encode(reason: "too_large", at: 1, id: "big", job: Array(repeating: UInt8(ascii: "a"), count: 64), maxJobBytes: 16)
        let cut = try #require(DeadLetter(element: entry))
        #expect(!cut.requeueable && cut.entry.originalLength == 64)
        #expect(try #require(DeadLetter(element: letter("ok", reason: "r", at: 1, job: "{}"))).requeueable)
    }

    /// Dead-letters `jobs` through the completion script, as a worker does: each gets a seq and an index entry.
    private func deadLetter(_ redis: KeyCheckedRedis, _ keys: QueueKeys, jobs: [(id: String, reason: String)], maxLength: Int = 100_000) throws {
        try push(redis, key: keys.queue, jobs: jobs.map {
            #"{"id":"\#($0.id.replacingOccurrences(of: "\"", with: #"\""#))","app":"shop","token":"t","payload":{}}"#
        })
        var options = JobQueueOptions()
        options.deadMaxLength = maxLength
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w", options: options)
        let leases = try queue.claim(max: jobs.count)
        #expect(leases.count == jobs.count)
        // Claimed oldest first; completed in that order, so seqs follow the producer's order.
        let batch = leases.map { lease -> JobCompletion in
            let id = (try? JSONSerialization.jsonObject(with: Data(lease.job)) as? [String: Any])?["id"] as? String ?? "?"
            var completion = JobCompletion(lease: lease, result: ResultEntry(id: id, outcome: .rejected, reason: "r", worker: "w"))
            completion.deadLetter(reason: jobs.first { $0.id == id }?.reason ?? "r", at: 1_000, id: id)
            return completion
        }
        #expect(try queue.complete(batch).applied == jobs.count)
    }

    private func ids(_ letters: [DeadLetter]) -> [String] { letters.compactMap(\.entry.id) }

    @Test func theCompletionScriptStampsIndexesAndUnindexesWhatItTrims() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try deadLetter(redis, keys, jobs: [("a", "bad_token"), ("b", "bad_token"), ("c\"q", "unknown_app")], maxLength: 2)
        let stored = (try redis.command(["LRANGE", keys.dead, "0", "-1"]).array ?? []).compactMap(\.bytes).compactMap(DeadLetterEntry.decode)
        #expect(stored.map(\.seq) == [3, 2], "newest first, the oldest trimmed")
        #expect(try redis.command(["HGET", keys.deadIDs, "b"]).string == "2")
        #expect(try redis.command(["HGET", keys.deadIDs, #"c\"q"#]).string == "3", "the id as the letter writes it")
        #expect(try redis.command(["HEXISTS", keys.deadIDs, "a"]).int == 0, "the trimmed letter left the index")
        #expect(ids(try DeadLetters.find(redis: redis, keys: keys, ids: ["c\"q", "a", "b"])) == ["b", "c\"q"])
    }

    @Test func findUsesTheIndexAndScansOnlyTheLettersWrittenBeforeIt() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        // An older worker's letters (no seq) are the oldest: at the tail.
        for id in ["old1", "old2"] {
            _ = try redis.command(["LPUSH", keys.dead, String(decoding: letter(id, reason: "r", at: 1, job: "{}"), as: UTF8.self)])
        }
        try deadLetter(redis, keys, jobs: (0..<300).map { ("n\($0)", "bad_token") })
        #expect(ids(try DeadLetters.find(redis: redis, keys: keys, ids: ["old1", "n7", "n299", "none"])) == ["old1", "n7", "n299"])
        var filter = DeadLetterFilter()
        filter.ids = ["n150", "old2"]
        #expect(ids(try DeadLetters.select(redis: redis, keys: keys, filter: filter)) == ["old2", "n150"])
        // Removed where they are; the index forgets them.
        let found = try DeadLetters.find(redis: redis, keys: keys, ids: ["n150", "old2"])
        #expect(try DeadLetters.requeue(found, redis: redis, keys: keys, queue: keys.queue).done == 2)
        #expect(try DeadLetters.find(redis: redis, keys: keys, ids: ["n150", "old2"]).isEmpty)
        #expect(try redis.command(["LLEN", keys.dead]).int == 300)
        #expect(try redis.command(["HLEN", keys.deadIDs]).int == 299)
    }

    @Test func aPassPurgesOrRequeuesWhatMatchesAndKeepsTheRestInOrder() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try deadLetter(redis, keys, jobs: (0..<1_000).map { ("p\($0)", $0 % 3 == 0 ? "unknown_app: x" : "bad_token: y") })
        var filter = DeadLetterFilter()
        filter.reasons = ["unknown_app"]
        let requeued = try DeadLetters.sweep(redis: redis, keys: keys, filter: filter, limit: 100, action: .requeue(queue: keys.queue))
        #expect(requeued.done == 100 && requeued.kept == 0 && !requeued.stopped)
        let queued = (try redis.command(["LRANGE", keys.queue, "0", "-1"]).array ?? []).compactMap(\.string)
        #expect(queued.count == 100 && queued.contains(#"{"id":"p999","app":"shop","token":"t","payload":{}}"#), "the newest that match")
        filter.reasons = ["bad_token"]
        let purged = try DeadLetters.sweep(redis: redis, keys: keys, filter: filter, action: .purge)
        #expect(purged.done == 666)
        let left = try DeadLetters.select(redis: redis, keys: keys, filter: DeadLetterFilter())
        #expect(ids(left) == (0..<1_000).filter { $0 % 3 == 0 }.map { "p\($0)" }.prefix(234).map { $0 }, "oldest first, in their order")
        #expect(try redis.command(["HLEN", keys.deadIDs]).int == 234)
        #expect(try redis.command(["EXISTS", keys.deadSweep, keys.deadLock]).int == 0)
        #expect(ids(try DeadLetters.find(redis: redis, keys: keys, ids: ["p0", "p3", "p1"])) == ["p0", "p3"])
    }

    @Test func aStoppedPassPutsBackWhatItHasNotLookedAtAndAnotherPassWaitsItsTurn() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try deadLetter(redis, keys, jobs: (0..<1_000).map { ("s\($0)", "bad_token") })
        var asked = 0
        let stopped = try DeadLetters.sweep(redis: redis, keys: keys, filter: DeadLetterFilter(), action: .purge, stop: {
            asked += 1
            return asked > 2
        })
        #expect(stopped.stopped && stopped.done == 2 * DeadLetters.pageSize)
        #expect(try redis.command(["LLEN", keys.dead]).int == Int64(1_000 - stopped.done))
        #expect(try redis.command(["EXISTS", keys.deadSweep, keys.deadLock]).int == 0)
        #expect(ids(try DeadLetters.select(redis: redis, keys: keys, filter: DeadLetterFilter(), limit: 1)) == ["s599"])

        // A pass that died: its lock held another's token, its sweep list left. The next waits for the lock, then
        // puts the list back before its own pass.
        _ = try redis.command(["SET", keys.deadLock, "someone", "PX", "60000"])
        _ = try redis.command(["RENAME", keys.dead, keys.deadSweep])
        try deadLetter(redis, keys, jobs: [("late", "bad_token")])
        #expect(try DeadLetters.sweep(redis: redis, keys: keys, filter: DeadLetterFilter(), action: .purge).busy)
        #expect(ids(try DeadLetters.find(redis: redis, keys: keys, ids: ["late", "s0"])) == ["s0", "late"], "found in both lists")
        _ = try redis.command(["DEL", keys.deadLock])
        var late = DeadLetterFilter()
        late.ids = []
        late.reasons = ["bad_token"]
        let all = try DeadLetters.sweep(redis: redis, keys: keys, filter: late, action: .purge)
        #expect(all.done == 601 && !all.busy)
        #expect(try redis.command(["EXISTS", keys.dead, keys.deadSweep, keys.deadLock, keys.deadIDs]).int == 0)
    }
}

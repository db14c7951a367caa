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
}

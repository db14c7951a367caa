import Basics
import Foundation
import Testing
@testable import RedisQueue

@Suite struct BoundedTextTests {
    static let megabyte = 1_048_576

    @Test func aMegabyteReasonIsCutInTheResultsEntryAndSaysSo() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue, jobs: ["j"])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        let lease = try #require(try queue.claim(max: 1).first)
        let huge = String(repeating: "r", count: Self.megabyte)
        let completion = JobCompletion(lease: lease, result: ResultEntry(id: "j", outcome: .failed, status: 400, reason: huge,
                                                                         topic: String(repeating: "t", count: Self.megabyte), worker: "w"),
                                       droppedToken: DroppedToken(token: "aa", topic: "t", environment: "production", reason: huge))
        #expect(try queue.complete([completion]).applied == 1)
        let entry = try #require(try redis.command(["XRANGE", keys.results, "-", "+"]).array?.first)
        let fields = entry.array?[1].array?.compactMap(\.string) ?? []
        let map = Dictionary(uniqueKeysWithValues: stride(from: 0, to: fields.count - 1, by: 2).map { (fields[$0], fields[$0 + 1]) })
        let reason = try #require(map["reason"])
        #expect(reason.utf8.count <= ResultEntry.maxReasonBytes && reason.hasSuffix("…(truncated, 1048576 bytes)"))
        #expect(reason.hasPrefix("rrrr"))
        #expect((map["topic"]?.utf8.count ?? .max) <= ResultEntry.maxTextBytes)
        let dropped = try redis.command(["XRANGE", keys.droppedTokens, "-", "+"]).array?.first?.array?[1].array?.compactMap(\.string) ?? []
        #expect(dropped.count == 8 && dropped[7].utf8.count <= ResultEntry.maxReasonBytes)
    }

    @Test func cutsOnAUTF8BoundaryAndLeavesShortTextAlone() {
        let text = String(repeating: "é", count: 1000)  // 2 bytes each
        for limit in [40, 41, 255, 256] {
            let cut = BoundedText.truncate(text, maxBytes: limit)
            #expect(cut.utf8.count <= limit)
            #expect(cut.hasSuffix("…(truncated, 2000 bytes)"))
            #expect(text.hasPrefix(cut.replacingOccurrences(of: "…(truncated, 2000 bytes)", with: "")))
        }
        #expect(BoundedText.truncate("Unregistered", maxBytes: 12) == "Unregistered")
    }

    @Test func deadLetterReasonIsCapped() throws {
        let stored = DeadLetterEntry.encode(reason: String(repeating: "x", count: Self.megabyte), at: 1, job: bytes("{}"))
        let entry = try #require(DeadLetterEntry.decode(stored))
        #expect(entry.reason.utf8.count <= DeadLetterEntry.maxReasonBytes && entry.job == bytes("{}"))
    }
}

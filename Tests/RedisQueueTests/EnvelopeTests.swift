import Foundation
import Testing
@testable import RedisQueue

@Suite struct EnvelopeTests {
    @Test func wrapUnwrapIsByteExact() {
        let jobs: [[UInt8]] = [
            bytes(#"{"token":"ab","payload":{"aps":{"alert":"hé \"quoted\" },\"job\":"}}}"#),
            bytes(#"  {"spaces" : true }  "#),
            bytes("[1,2,3]"),
            bytes(#"{"herald":"producer field","x":1}"#),
        ]
        for job in jobs {
            let wrapped = JobEnvelope.wrap(job: job, attempt: 3, id: #"id "with" \ quotes },"job":"#, queue: "p:queue")
            let out = JobEnvelope.unwrap(wrapped)
            #expect(out.job == job)
            #expect(out.attempt == 3)
            #expect(out.id == #"id "with" \ quotes },"job":"#)
            #expect(out.queue == "p:queue")
            #expect((try? JSONSerialization.jsonObject(with: Data(wrapped))) != nil)
        }
    }

    @Test func rawJobIsAttemptOne() {
        let job = bytes(#"{"token":"00","id":"x"}"#)
        let out = JobEnvelope.unwrap(job)
        #expect(out.job == job && out.attempt == 1 && out.id == nil && out.queue == nil)
        #expect(JobEnvelope.unwrap([]).job == [])
        #expect(JobEnvelope.unwrap(bytes(#"{"herald":{"#)).attempt == 1)
    }

    @Test func sameIdAndAttemptStillMakeDistinctMembers() {
        let job = bytes("{}")
        #expect(JobEnvelope.wrap(job: job, attempt: 2, id: "a", queue: "q") != JobEnvelope.wrap(job: job, attempt: 2, id: "a", queue: "q"))
    }

    @Test func deadLetterRoundTripsRawBytes() throws {
        let samples: [[UInt8]] = [
            bytes(#"{"not":"closed"#),
            [0xFF, 0xFE, 0x00, 0x22, 0x5C],
            bytes("tab\tnewline\ncontrol\u{01}del\u{7F}"),
            [],
        ]
        for job in samples {
            let encoded = DeadLetterEntry.encode(reason: "bad \"json\"", at: 1234, job: job)
            let entry = try #require(DeadLetterEntry.decode(encoded))
            #expect(entry.job == job && entry.reason == "bad \"json\"" && entry.at == 1234 && !entry.truncated)
        }
        let capped = try #require(DeadLetterEntry.decode(DeadLetterEntry.encode(reason: "big", at: 1, job: bytes("abcdef"), maxJobBytes: 4)))
        #expect(capped.job == bytes("abcd") && capped.truncated && capped.originalLength == 6)
    }

    @Test func deadLetterCarriesTheJobIDEscapedAndOnlyWhenGiven() throws {
        let withID = try #require(DeadLetterEntry.decode(DeadLetterEntry.encode(reason: "r", at: 1, id: "order \"7\"\n", job: bytes("{}"))))
        #expect(withID.id == "order \"7\"\n" && withID.job == bytes("{}"))
        let encoded = DeadLetterEntry.encode(reason: "r", at: 1, job: bytes("{}"))
        #expect(try #require(DeadLetterEntry.decode(encoded)).id == nil)
        #expect(!String(decoding: encoded, as: UTF8.self).contains(#""id""#), "no id field when there is none")
    }

    @Test func resultEntryFieldsRoundTrip() throws {
        var entry = ResultEntry(id: "j1", outcome: .tokenDropped, status: 410, reason: "Unregistered", token: "aa",
                                topic: "t", environment: "production", app: "a", apnsID: "u", apnsUniqueID: "v",
                                attempt: 2, invalidSince: 99, latencyMilliseconds: 12, worker: "w")
        entry.messageID = "u"
        let map = Dictionary(uniqueKeysWithValues: entry.fields)
        #expect(map["outcome"] == "token_dropped" && map["invalid_since"] == "99" && map["apns_unique_id"] == "v" && map["message_id"] == "u")
        #expect(ResultEntry(fields: map) == entry)
        #expect(ResultEntry.Outcome.retrying.isTerminal == false)
    }
}

/// Only envelopes that came through Herald's schedule carry their attempt; a producer's look-alike is attempt 1.
@Suite struct EnvelopeMarkTests {
    @Test func aProducersLookAlikeEnvelopeCannotClaimAttempt99() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let forged = #"{"herald":{"queue":"q","attempt":99,"id":"x","epoch":"guess"},"job":{"token":"aa"}}"#
        try push(redis, key: keys.queue, jobs: [forged])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        let lease = try #require(try queue.claim(max: 1).first)
        #expect(lease.attempt == 1 && lease.unmarkedEnvelopeAttempt == 99)
        #expect(lease.job == bytes(#"{"token":"aa"}"#) && lease.raw == bytes(forged))
    }

    @Test func theSchedulerMarksItsEnvelopesSoTheirAttemptCounts() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let envelope = JobEnvelope.wrap(job: bytes(#"{"token":"aa"}"#), attempt: 4, id: "j", queue: keys.queue)
        _ = try redis.command([bytes("ZADD"), bytes(keys.retry), bytes("1"), envelope])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        #expect(try queue.moveDueRetries().moved == 1)
        let lease = try #require(try queue.claim(max: 1).first)
        #expect(lease.attempt == 4 && lease.unmarkedEnvelopeAttempt == nil && lease.jobID == "j")
        #expect(lease.job == bytes(#"{"token":"aa"}"#))
        #expect(JobEnvelope.unwrap(lease.raw).epoch == lease.epoch)
    }

    /// Issue 54: times read back from Redis are bounded before any arithmetic: a `since` or `paced` before the
    /// epoch or past 2^42 ms (the year 2109) is no time Herald wrote, and is dropped (a job then is checked
    /// again or given up by its own clock), as is such a time in a budget reply (the job goes now).
    @Test func timesOutOfBoundsAreNotBelieved() throws {
        let job = bytes(#"{"token":"aa"}"#)
        for bad: Int64 in [-1, Int64.min, JobEnvelope.latestMillis + 1, Int64.max] {
            let unwrapped = JobEnvelope.unwrap(JobEnvelope.wrap(job: job, attempt: 2, id: "j", queue: "q", since: bad, paced: bad))
            #expect(unwrapped.since == nil && unwrapped.paced == nil && unwrapped.attempt == 2, "\(bad)")
        }
        let good: Int64 = 1_800_000_000_000
        let kept = JobEnvelope.unwrap(JobEnvelope.wrap(job: job, attempt: 2, id: "j", queue: "q", since: good, paced: good + 5))
        #expect(kept.since == good && kept.paced == good + 5)
        let reply = RESPValue.array([.array([.integer(Int64.max), .integer(1), .integer(good), .integer(2), .integer(-5), .integer(1)]), .array([])])
        #expect(try QueueCommands.parseBudgetCheck(reply, count: 3) .0 == [.allowed, .held(atMillis: good, limit: 1), .allowed])
    }
}

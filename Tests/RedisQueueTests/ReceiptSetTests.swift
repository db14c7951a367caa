import Foundation
import Testing
@testable import RedisQueue

/// The receipts set (a provider's second phase), key-checked against a real Redis: a ticket goes in only with its
/// job's completion; a take moves it an interval ahead before anyone asks, so a poller killed after the take loses
/// nothing and asks again no sooner than the interval; a settlement writes a ticket's terminal entry and dropped
/// token once however many pollers settle it.
@Suite struct ReceiptSetTests {
    private func accepted(_ lease: Lease, id: String, ticket: String, token: String, dueAt: Int64) -> JobCompletion {
        var completion = JobCompletion(lease: lease)
        let entry = ResultEntry(id: id, outcome: .accepted, status: 200, token: token, app: "rn", attempt: 1, worker: "w1")
        var withTicket = entry
        withTicket.platform = "expo"
        withTicket.messageID = ticket
        completion.result = withTicket
        completion.receipt = PendingReceipt(platform: "expo", ticket: ticket, dueAt: dueAt, sentAt: dueAt - 1000, entry: withTicket, queue: lease.queueKey)
        return completion
    }

    private func claimed(_ keys: QueueKeys, jobs: Int) throws -> (BlockingJobQueue, [Lease]) {
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue, jobs: (0..<jobs).map { #"{"id":"e\#($0)","platform":"expo","to":"ExponentPushToken[t\#($0)]","payload":{}}"# })
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w1")
        return (queue, try queue.claim(max: jobs))
    }

    private func now(_ queue: BlockingJobQueue) throws -> Int64 {
        let time = try queue.redis.command(["TIME"]).array ?? []
        return (Int64(time[0].string ?? "0") ?? 0) * 1000 + (Int64(time[1].string ?? "0") ?? 0) / 1000
    }

    @Test func aTicketGoesInWithItsCompletionAndOnlyThen() throws {
        let keys = TestRedis.keys()
        let (queue, leases) = try claimed(keys, jobs: 2)
        let due = try now(queue) - 1
        #expect(try queue.complete([accepted(leases[0], id: "e0", ticket: "T0", token: "ExponentPushToken[t0]", dueAt: due)]).applied == 1)
        #expect(try queue.redis.command(["ZSCORE", keys.receipts, "expo:T0"]).string == String(due))
        let record = try #require(try queue.redis.command(["HGET", keys.receiptJobs, "expo:T0"]).bytes)
        let waiting = try #require(BlockingReceiptSet.waiting(member: "expo:T0", record: record))
        #expect(waiting.ticket == "T0" && waiting.platform == "expo" && waiting.entry.outcome == .accepted && waiting.entry.token == "ExponentPushToken[t0]")
        #expect(waiting.sentAt == due - 1000)
        // The lease reaped and the job taken by another worker: the late completion writes nothing, no ticket either.
        try queue.redis.command(["DEL", keys.leases(worker: "w1")])
        _ = try queue.redis.command(["LPOP", keys.queue])
        _ = try queue.complete([accepted(leases[1], id: "e1", ticket: "T1", token: "ExponentPushToken[t1]", dueAt: due)])
        #expect(try queue.redis.command(["ZSCORE", keys.receipts, "expo:T1"]).string == nil)
        #expect(try queue.redis.command(["XLEN", keys.results]).int == 1)
    }

    @Test func aTakeMovesTheTicketAheadSoAKilledPollerLosesNothingAndAsksNoSooner() throws {
        let keys = TestRedis.keys()
        let (queue, leases) = try claimed(keys, jobs: 3)
        let due = try now(queue) - 1
        _ = try queue.complete(leases.indices.map { accepted(leases[$0], id: "e\($0)", ticket: "T\($0)", token: "ExponentPushToken[t\($0)]", dueAt: due) })
        let set = BlockingReceiptSet(redis: queue.redis, keys: keys)
        let first = try set.take(limit: 2, intervalMilliseconds: 400)
        #expect(first.due.count == 2)
        // The poller is killed here (nothing settled). Another one within the interval gets only the third.
        let second = try set.take(limit: 10, intervalMilliseconds: 400)
        #expect(second.due.map(\.ticket) == ["T2"])
        #expect(try set.take(limit: 10, intervalMilliseconds: 400).due.isEmpty)
        Thread.sleep(forTimeInterval: 0.5)
        let back = try set.take(limit: 10, intervalMilliseconds: 400)
        #expect(Set(back.due.map(\.ticket)) == ["T0", "T1", "T2"], "every ticket is asked again once the interval passed, none lost")
        #expect(try set.counts(lateMilliseconds: 0, now: back.now).waiting == 3)
    }

    @Test func aSettlementIsWrittenOnceHoweverManyPollersSettleIt() throws {
        let keys = TestRedis.keys()
        let (queue, leases) = try claimed(keys, jobs: 2)
        let due = try now(queue) - 1
        _ = try queue.complete(leases.indices.map { accepted(leases[$0], id: "e\($0)", ticket: "T\($0)", token: "ExponentPushToken[t\($0)]", dueAt: due) })
        let set = BlockingReceiptSet(redis: queue.redis, keys: keys)
        let taken = try set.take(limit: 10, intervalMilliseconds: 60_000).due
        #expect(taken.count == 2)
        let settlements = taken.map { waiting -> BlockingReceiptSet.Settlement in
            var entry = waiting.entry
            entry.worker = "receipts-1"
            if waiting.ticket == "T0" {
                entry.outcome = .tokenDropped
                entry.reason = "DeviceNotRegistered"
                let dropped = DroppedToken(token: entry.token ?? "", topic: "", environment: "", reason: "DeviceNotRegistered", platform: "expo",
                                           app: "rn", hasEnvironments: false)
                return BlockingReceiptSet.Settlement(member: waiting.member, entry: entry, dropped: dropped)
            }
            entry.outcome = .delivered
            return BlockingReceiptSet.Settlement(member: waiting.member, entry: entry, dropped: nil)
        }
        #expect(try set.settle(settlements) == 2)
        // A second poller that took them before the first settled: nothing more is written.
        #expect(try set.settle(settlements) == 0)
        let outcomes = (try queue.redis.command(["XRANGE", keys.results, "-", "+"]).array ?? []).compactMap { entry -> String? in
            let fields = entry.array?[1].array?.compactMap(\.string) ?? []
            return fields.firstIndex(of: "outcome").map { fields[$0 + 1] }
        }
        #expect(outcomes.sorted() == ["accepted", "accepted", "delivered", "token_dropped"])
        #expect(try queue.redis.command(["XLEN", keys.droppedTokens]).int == 1)
        #expect(try queue.redis.command(["ZCARD", keys.receipts]).int == 0)
        #expect(try queue.redis.command(["HLEN", keys.receiptJobs]).int == 0)
    }

    /// With the result index on, a settled ticket's terminal entry replaces its `accepted` one there (`GET /v1/jobs/<id>`).
    @Test func aSettlementReplacesTheAcceptedEntryInTheResultIndex() throws {
        let keys = TestRedis.keys()
        let (queue, leases) = try claimed(keys, jobs: 1)
        _ = try queue.complete([accepted(leases[0], id: "e0", ticket: "T0", token: "ExponentPushToken[t0]", dueAt: try now(queue) - 1)])
        let set = BlockingReceiptSet(redis: queue.redis, keys: keys)
        set.resultIndexTTLSeconds = 60
        let waiting = try #require(try set.take(limit: 10, intervalMilliseconds: 60_000).due.first)
        #expect(waiting.queue == keys.queue)
        var entry = waiting.entry
        entry.outcome = .delivered
        #expect(try set.settle([BlockingReceiptSet.Settlement(member: waiting.member, entry: entry, dropped: nil, queue: waiting.queue)]) == 1)
        let json = try #require(try queue.redis.command(["HGET", keys.resultIndex(jobID: "e0"), "ExponentPushToken[t0]"]).string)
        let indexed = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: String])
        #expect(indexed["outcome"] == "delivered" && indexed["message_id"] == "T0" && indexed["queue"] == keys.queue && indexed["stream_id"] != nil)
        let ttl = try queue.redis.command(["TTL", keys.resultIndex(jobID: "e0")]).int ?? -2
        #expect(ttl > 50 && ttl <= 60)
    }

    @Test func aReceiptsKeyOfAnotherTypeRefusesTheWholeBatchUnwritten() throws {
        let keys = TestRedis.keys()
        let (queue, leases) = try claimed(keys, jobs: 1)
        try queue.redis.command(["SET", keys.receipts, "not a zset"])
        #expect(throws: RedisError.self) {
            _ = try queue.complete([accepted(leases[0], id: "e0", ticket: "T0", token: "ExponentPushToken[t0]", dueAt: 1)])
        }
        #expect(try queue.redis.command(["XLEN", keys.results]).int == 0)
        #expect(try queue.redis.command(["HLEN", keys.leases(worker: "w1")]).int == 1, "the lease is kept for the next try")
    }
}

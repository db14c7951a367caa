import Foundation

/// The receipts set of one shard, blocking (`herald scheduler`'s receipts poller, tools and tests): takes the
/// tickets due, settles those a receipt (or the bound) decided, and counts what waits. Not thread-safe.
public final class BlockingReceiptSet {
    public let redis: any BlockingRedisCommands
    public let keys: QueueKeys
    public var resultsMaxLength = 1_000_000
    /// `results.index_ttl_seconds`: a settled ticket's terminal entry replaces its `accepted` one in the job's result
    /// index, as a worker's completion does; 0 leaves the index alone.
    public var resultIndexTTLSeconds = 0

    public init(redis: any BlockingRedisCommands, keys: QueueKeys) {
        self.redis = redis
        self.keys = keys
    }

    /// A ticket taken to be asked about: its member, platform, ticket id, its `accepted` entry and when it was sent.
    public struct Waiting: Sendable {
        public let member: String
        public let platform: String
        public let ticket: String
        public let entry: ResultEntry
        public let sentAt: Int64
        /// The queue the job was claimed from, as its result index names it.
        public let queue: String
    }

    /// How one ticket ends: its terminal entry and, for a dropped token, the dropped-tokens entry.
    public struct Settlement: Sendable {
        public let member: String
        public let entry: ResultEntry
        public let dropped: DroppedToken?
        /// The queue its result index names (the ticket's `Waiting.queue`).
        public let queue: String
        public init(member: String, entry: ResultEntry, dropped: DroppedToken?, queue: String = "") {
            self.member = member
            self.entry = entry
            self.dropped = dropped
            self.queue = queue
        }
    }

    /// Up to `limit` tickets due now, each pushed `intervalMilliseconds` ahead; Redis's time; the soonest next due.
    public func take(limit: Int, intervalMilliseconds: Int64) throws(RedisError) -> (now: Int64, due: [Waiting], nextDue: Int64?) {
        let reply = try redis.evalScript(ReceiptScripts.take, keys: [Array(keys.receipts.utf8), Array(keys.receiptJobs.utf8)],
                                         args: [Array(String(limit).utf8), Array(String(intervalMilliseconds).utf8)])
        guard let parts = reply.array, parts.count == 3, let now = parts[0].int, let items = parts[1].array else {
            throw .protocolError("receipts take reply: \(reply)")
        }
        var due: [Waiting] = []
        var index = 0
        while index + 1 < items.count {
            if let member = items[index].string, let record = items[index + 1].bytes, let waiting = Self.waiting(member: member, record: record) {
                due.append(waiting)
            }
            index += 2
        }
        return (now, due, parts[2].string.flatMap { Int64($0) } ?? parts[2].int)
    }

    /// Reads a record back (`PendingReceipt`); nil for one that is not Herald's.
    static func waiting(member: String, record: [UInt8]) -> Waiting? {
        guard let colon = member.firstIndex(of: ":"),
              let object = try? JSONSerialization.jsonObject(with: Data(record)) as? [String: String],
              let entry = ResultEntry(fields: object), let sentAt = object["sent_at"].flatMap({ Int64($0) }) else { return nil }
        return Waiting(member: member, platform: String(member[..<colon]), ticket: String(member[member.index(after: colon)...]),
                       entry: entry, sentAt: sentAt, queue: object["queue"] ?? "")
    }

    /// Writes each settlement once (only while its ticket is still in the set); returns how many applied.
    @discardableResult
    public func settle(_ settlements: [Settlement]) throws(RedisError) -> Int {
        guard !settlements.isEmpty else { return 0 }
        var keys = [self.keys.receipts, self.keys.receiptJobs, self.keys.results, self.keys.droppedTokens].map { Array($0.utf8) }
        var args: [[UInt8]] = [Array(String(resultsMaxLength).utf8), Array(String(resultIndexTTLSeconds).utf8), Array(String(settlements.count).utf8)]
        for settlement in settlements {
            args.append(Array(settlement.member.utf8))
            if resultIndexTTLSeconds > 0 && !settlement.entry.id.isEmpty {
                keys.append(Array(self.keys.resultIndex(jobID: settlement.entry.id).utf8))
                args.append(Array(String(keys.count).utf8))
            } else {
                args.append(Array("0".utf8))
            }
            args.append(Array(settlement.entry.indexField.utf8))
            args.append(Array(settlement.entry.indexJSON(queue: settlement.queue).utf8))
            let fields = settlement.entry.fields
            args.append(Array(String(fields.count * 2).utf8))
            for (field, value) in fields { args.append(Array(field.utf8)); args.append(Array(value.utf8)) }
            let dropped = settlement.dropped?.fields ?? []
            args.append(Array(String(dropped.count * 2).utf8))
            for (field, value) in dropped { args.append(Array(field.utf8)); args.append(Array(value.utf8)) }
        }
        guard let applied = try redis.evalScript(ReceiptScripts.settle, keys: keys, args: args).int else { throw .protocolError("receipts settle reply") }
        return Int(applied)
    }

    /// Tickets waiting, and those whose ask is late by more than `lateMilliseconds` (no poller asked in time).
    public func counts(lateMilliseconds: Int64, now: Int64) throws(RedisError) -> (waiting: Int, overdue: Int) {
        let replies = try redis.pipeline(rawCommands: [
            [Array("ZCARD".utf8), Array(keys.receipts.utf8)],
            [Array("ZCOUNT".utf8), Array(keys.receipts.utf8), Array("-inf".utf8), Array(String(now - lateMilliseconds).utf8)],
        ])
        return (Int(replies[0].int ?? 0), Int(replies[1].int ?? 0))
    }
}

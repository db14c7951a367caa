import Foundation
import Reactor
import RedisQueue

/// Creating, reading and controlling campaigns over every shard, blocking (`herald campaigns`, the driver's
/// intake, tests), with `CampaignCalls`. A create or a control runs one script per shard, each idempotent, so one
/// cut short is finished by running it again.
public final class Campaigns {
    public let redis: any BlockingRedisCommands
    public let calls: CampaignCalls
    public var clock: () -> Int64

    public init(redis: any BlockingRedisCommands, shards: QueueShards, clock: @escaping () -> Int64 = wallClockMillis) {
        self.redis = redis
        self.calls = CampaignCalls(shards: shards)
        self.clock = clock
    }

    public var keys: [DeviceKeys] { calls.keys }

    public enum Action: String, Sendable, CaseIterable {
        case pause, resume, cancel
    }

    private func run(_ calls: [DeviceCalls.ScriptCall]) throws(RedisError) -> [RESPValue] {
        var replies: [RESPValue] = []
        for call in calls { replies.append(try redis.evalScript(call.script, keys: call.keys, args: call.args)) }
        return replies
    }

    /// Creates the campaign in every shard; false when it existed with the same document (then nothing changes).
    /// Throws `bad_queue` before writing anything when its queue is not configured, `id_taken` when the id is
    /// another document's.
    @discardableResult
    public func create(_ campaign: Campaign) throws -> Bool {
        switch CampaignCalls.created(try run(try calls.create(campaign, now: clock()))) {
        case .made: return true
        case .existed: return false
        case .taken: throw CampaignCalls.idTaken(campaign.id)
        }
    }

    /// The campaign's document as first created (nil when there is none).
    public func campaign(_ id: String) throws(RedisError) -> Campaign? {
        CampaignCalls.campaign(try redis.command(calls.document(id)))
    }

    /// The campaign's shards summed; nil when no shard has it.
    public func status(_ id: String) throws(RedisError) -> CampaignStatus? {
        // One command per shard (not one pipeline): on Redis Cluster each shard is its own slot.
        var replies: [RESPValue] = []
        for command in calls.status(id) { replies.append(try redis.command(command)) }
        return CampaignCalls.status(id, replies: replies, now: clock())
    }

    /// Pauses (the driver skips it), resumes or cancels the campaign in every shard; its status after, nil when
    /// there is no such campaign.
    public func control(_ id: String, _ action: Action) throws(RedisError) -> CampaignStatus? {
        guard let campaign = try campaign(id) else { return nil }
        _ = try run(calls.control(campaign, action, now: clock()))
        return try status(id)
    }

    /// The ids of the campaigns still running or paused in any shard.
    public func open() throws(RedisError) -> [String] { Set(try openByShard().joined()).sorted() }

    /// What `openStatuses` read: the open campaigns' statuses, and the keys that answered an error (a `<p>:campaigns`
    /// or a campaign's hash of the wrong type), named rather than failing the read.
    public struct OpenStatuses: Sendable {
        public var statuses: [CampaignStatus] = []
        /// Keys that answered an error: a campaign whose hash did in any shard is left out of `statuses`, a shard whose
        /// `<p>:campaigns` did contributes no campaign.
        public var keyErrors: [KeyReplyError] = []
    }

    /// The status of every campaign running or paused in any shard (`herald campaigns list`, the dashboard's
    /// metrics): one pipeline of a ZRANGE per shard, then one of a HGETALL per shard and open campaign (with none
    /// open, only the ZRANGEs). A key of the wrong type costs only its campaign (or its shard's list), named in
    /// `keyErrors`. `documents` keeps the parsed documents from one read to the next (the dashboard's).
    public func openStatuses(documents: CampaignDocuments = CampaignDocuments()) throws(RedisError) -> OpenStatuses {
        var read = OpenStatuses()
        // A pipeline over shards is fine on Redis Cluster too: its client sends each command to its slot's node.
        let lists = keys.map { ["ZRANGE", $0.campaigns, "0", "-1"] }
        let listed = try redis.pipeline(lists)
        read.keyErrors = KeyReplyError.collect(lists, listed)
        let ids = Set(listed.flatMap { ($0.array ?? []).compactMap(\.string) }).sorted()
        documents.keep(only: Set(ids))
        guard !ids.isEmpty else { return read }
        let hashes = ids.map { id in keys.map { ["HGETALL", $0.campaign(id)] } }
        let replies = try redis.pipeline(hashes.flatMap { $0 })
        let now = clock()
        var next = 0
        for (id, commands) in zip(ids, hashes) {
            let mine = Array(replies[next..<next + commands.count])
            next += commands.count
            let errors = KeyReplyError.collect(commands, mine)
            guard errors.isEmpty else {
                read.keyErrors += errors
                continue
            }
            if let status = CampaignCalls.status(id, replies: mine, now: now, documents: documents) { read.statuses.append(status) }
        }
        return read
    }

    /// The ids of the campaigns running or paused in each shard.
    public func openByShard() throws(RedisError) -> [[String]] {
        var shards: [[String]] = []
        for shard in keys {
            shards.append((try redis.command(["ZRANGE", shard.campaigns, "0", "-1"]).array ?? []).compactMap(\.string))
        }
        return shards
    }
}

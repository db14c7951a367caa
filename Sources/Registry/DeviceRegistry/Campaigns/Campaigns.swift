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

    /// The status of every campaign running or paused in any shard (`herald campaigns list`, the dashboard's
    /// metrics): a ZRANGE per shard, then a HGETALL per shard and open campaign; with none open, only the ZRANGEs.
    public func openStatuses() throws(RedisError) -> [CampaignStatus] {
        var statuses: [CampaignStatus] = []
        for id in try open() { if let status = try status(id) { statuses.append(status) } }
        return statuses
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

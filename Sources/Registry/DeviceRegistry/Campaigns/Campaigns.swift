import Foundation
import Reactor
import RedisQueue

/// Creating, reading and controlling campaigns over every shard, blocking (`herald campaigns`, the driver's
/// intake, tests). Each shard holds a copy of the campaign with its own cursor and counters; a create or a
/// control runs one script per shard, each idempotent, so one cut short is finished by running it again.
public final class Campaigns {
    public let redis: any BlockingRedisCommands
    public let shards: QueueShards
    public let keys: [DeviceKeys]
    public var clock: () -> Int64

    public init(redis: any BlockingRedisCommands, shards: QueueShards, clock: @escaping () -> Int64 = wallClockMillis) {
        self.redis = redis
        self.shards = shards
        self.keys = shards.shards.map { DeviceKeys($0.keys) }
        self.clock = clock
    }

    /// The index range of an audience: every member named `name` (as `DeviceCalls.indexRange`).
    static func range(_ audience: Campaign.Audience) -> (min: String, max: String) {
        ("[\(audience.name)\n", "(\(audience.name)\u{0B}")
    }

    /// The queue key of shard `index` the campaign's jobs go on; nil when `campaign.queue` is not configured.
    public func queueKey(_ campaign: Campaign, shard index: Int) -> String? {
        guard let name = campaign.queue else { return shards.shards[index].queues.first }
        guard let wanted = (try? QueueKeys(prefix: shards.basePrefix))?.queue(named: name),
              let position = shards.configuredQueues.firstIndex(of: wanted) else { return nil }
        return shards.shards[index].queues[position]
    }

    /// Creates the campaign in every shard; false when it existed (then nothing changes: the id's first
    /// document stands). Throws `bad_queue` before writing anything when its queue is not configured.
    @discardableResult
    public func create(_ campaign: Campaign) throws -> Bool {
        let queues = try shards.shards.indices.map { index in
            guard let key = queueKey(campaign, shard: index) else {
                throw DeviceError("bad_queue", "queue \(campaign.queue ?? "") is not one of redis.queues (<prefix>:queue:<name>)")
            }
            return key
        }
        let range = Self.range(campaign.audience)
        let now = String(clock())
        var created = false
        for (index, shard) in keys.enumerated() {
            let reply = try redis.evalScript(
                CampaignScripts.create,
                keys: [shard.campaign(campaign.id), shard.campaigns, campaign.audience.index(shard, app: campaign.app)].map { Array($0.utf8) },
                args: [Array(campaign.id.utf8), campaign.document, Array(now.utf8), Array(queues[index].utf8),
                       Array(range.min.utf8), Array(range.max.utf8)])
            if reply.int == 1 { created = true }
        }
        return created
    }

    /// The campaign's document as first created (nil when there is none).
    public func campaign(_ id: String) throws(RedisError) -> Campaign? {
        guard let doc = try redis.command(["HGET", keys[0].campaign(id), "doc"]).bytes else { return nil }
        return try? Campaign.parse(doc)
    }

    /// The campaign's shards summed; nil when no shard has it.
    public func status(_ id: String) throws(RedisError) -> CampaignStatus? {
        var status = CampaignStatus(id: id)
        var found = false
        for shard in keys {
            let pairs = (try redis.command(["HGETALL", shard.campaign(id)]).array ?? []).compactMap(\.string)
            guard pairs.count >= 2 else { continue }
            found = true
            status.add(Dictionary(stride(from: 0, to: pairs.count - 1, by: 2).map { (pairs[$0], pairs[$0 + 1]) }) { $1 })
        }
        return found ? status : nil
    }

    public enum Action: String, Sendable, CaseIterable {
        case pause, resume, cancel
    }

    /// Pauses (the driver skips it), resumes or cancels the campaign in every shard; its status after, nil when
    /// there is no such campaign.
    public func control(_ id: String, _ action: Action) throws(RedisError) -> CampaignStatus? {
        guard let campaign = try campaign(id) else { return nil }
        let range = Self.range(campaign.audience)
        let now = String(clock())
        for shard in keys {
            _ = try redis.evalScript(
                CampaignScripts.control,
                keys: [shard.campaign(id), shard.campaigns, campaign.audience.index(shard, app: campaign.app)].map { Array($0.utf8) },
                args: [id, action.rawValue, now, range.min, range.max].map { Array($0.utf8) })
        }
        return try status(id)
    }

    /// The ids of the campaigns still running or paused in any shard.
    public func open() throws(RedisError) -> [String] {
        var ids = Set<String>()
        for shard in keys {
            for member in try redis.command(["ZRANGE", shard.campaigns, "0", "-1"]).array ?? [] {
                if let id = member.string { ids.insert(id) }
            }
        }
        return ids.sorted()
    }
}

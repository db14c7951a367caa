import RedisQueue

/// The campaigns' Redis commands and the reading of their replies, apart from how they are sent: the blocking
/// `Campaigns` runs them, `herald api`'s `DeviceRegistryLoop` sends them on its event loop. Each shard holds a copy
/// of a campaign (its own cursor and counters), so a create or a control is one script per shard and a status one
/// HGETALL per shard, summed.
public struct CampaignCalls: Sendable {
    public let shards: QueueShards
    public let keys: [DeviceKeys]

    public init(shards: QueueShards) {
        self.shards = shards
        keys = shards.shards.map { DeviceKeys($0.keys) }
    }

    /// The index range of an owner or topic: every member named `name` (as `DeviceCalls.indexRange`).
    static func range(_ name: String) -> (min: String, max: String) {
        ("[\(name)\n", "(\(name)\u{0B}")
    }

    /// The queue key of shard `index` the campaign's jobs go on; nil when `campaign.queue` is not configured.
    public func queueKey(_ campaign: Campaign, shard index: Int) -> String? {
        guard let name = campaign.queue else { return shards.shards[index].queues.first }
        guard let wanted = (try? QueueKeys(prefix: shards.basePrefix))?.queue(named: name),
              let position = shards.configuredQueues.firstIndex(of: wanted) else { return nil }
        return shards.shards[index].queues[position]
    }

    /// The create script of every shard; `bad_queue` when the campaign's queue is not configured.
    public func create(_ campaign: Campaign, now: Int64) throws(DeviceError) -> [DeviceCalls.ScriptCall] {
        var calls: [DeviceCalls.ScriptCall] = []
        for (index, shard) in keys.enumerated() {
            guard let queue = queueKey(campaign, shard: index) else {
                throw DeviceError("bad_queue", "queue \(campaign.queue ?? "") is not one of redis.queues (<prefix>:queue:<name>)")
            }
            let counted = campaign.audience.counted(shard, app: campaign.app)
            calls.append(DeviceCalls.ScriptCall(
                script: CampaignScripts.create,
                keys: ([shard.campaign(campaign.id), shard.campaigns, shard.campaignTally, shards.shards[index].keys.results] + counted.keys)
                    .map { Array($0.utf8) },
                args: [Array(campaign.id.utf8), campaign.document, Array(String(now).utf8), Array(queue.utf8)]
                    + ([counted.mode] + counted.args).map { Array($0.utf8) }))
        }
        return calls
    }

    /// What the shards' creates did: `made` when some shard made the campaign, `existed` when every shard had it
    /// with this document, `taken` when a shard has the id with another document.
    public enum Created: Sendable, Equatable {
        case made, existed, taken
    }

    public static func created(_ replies: [RESPValue]) -> Created {
        if replies.contains(where: { $0.int == -1 }) { return .taken }
        return replies.contains { $0.int == 1 } ? .made : .existed
    }

    /// The refusal of a document whose id another campaign's document holds.
    public static func idTaken(_ id: String) -> DeviceError {
        DeviceError("id_taken", "campaign \(id) exists with another document (a create with the same id is idempotent only with the same document)")
    }

    /// The campaign's document as first created (on the first shard).
    public func document(_ id: String) -> [[UInt8]] { ["HGET", keys[0].campaign(id), "doc"].map { Array($0.utf8) } }

    public static func campaign(_ reply: RESPValue) -> Campaign? { reply.bytes.flatMap { try? Campaign.parse($0) } }

    /// Every shard's hash of the campaign.
    public func status(_ id: String) -> [[[UInt8]]] { keys.map { ["HGETALL", $0.campaign(id)].map { Array($0.utf8) } } }

    /// The shards' hashes summed at `now` (ms); nil when no shard has the campaign. Its document is parsed once
    /// (every shard holds the same), or not at all when `documents` has it from an earlier read.
    public static func status(_ id: String, replies: [RESPValue], now: Int64, documents: CampaignDocuments = CampaignDocuments()) -> CampaignStatus? {
        var status = CampaignStatus(id: id)
        var found = false
        for reply in replies {
            let pairs = (reply.array ?? []).compactMap(\.string)
            guard pairs.count >= 2 else { continue }
            found = true
            let fields = Dictionary(stride(from: 0, to: pairs.count - 1, by: 2).map { (pairs[$0], pairs[$0 + 1]) }) { $1 }
            status.add(fields, campaign: fields["doc"].flatMap { documents.campaign(id, document: $0) }, shards: replies.count, now: now)
        }
        return found ? status : nil
    }

    /// The control script of every shard.
    public func control(_ campaign: Campaign, _ action: Campaigns.Action, now: Int64) -> [DeviceCalls.ScriptCall] {
        return keys.map { shard in
            let counted = campaign.audience.counted(shard, app: campaign.app)
            return DeviceCalls.ScriptCall(
                script: CampaignScripts.control,
                keys: ([shard.campaign(campaign.id), shard.campaigns, shard.campaignSent(campaign.id), shard.campaignTally] + counted.keys)
                    .map { Array($0.utf8) },
                args: ([campaign.id, action.rawValue, String(now)] + campaign.audience.cancelCount).map { Array($0.utf8) })
        }
    }
}

/// Campaign documents parsed, by id, kept from one read of the statuses to the next (`herald dashboard` keeps one):
/// a document never changes while its id exists, so a status read parses it once rather than at every read and in
/// every shard. The stored text is compared before a parsed one is reused, so an id that ended and was created again
/// with another document is parsed anew. Not thread-safe: one reader's.
public final class CampaignDocuments {
    private var parsed: [String: (document: String, campaign: Campaign)] = [:]

    public init() {}

    /// Campaigns held.
    public var count: Int { parsed.count }

    /// The campaign `document` (its hash's `doc`) reads as; nil when it does not parse.
    func campaign(_ id: String, document: String) -> Campaign? {
        if let known = parsed[id], known.document == document { return known.campaign }
        guard let campaign = try? Campaign.parse(Array(document.utf8)) else { return nil }
        parsed[id] = (document, campaign)
        return campaign
    }

    /// Forgets every campaign but `ids` (those still open), so what it holds stays bounded by what is open.
    func keep(only ids: Set<String>) {
        parsed = parsed.filter { ids.contains($0.key) }
    }
}

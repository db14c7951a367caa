import PushCore
import RedisQueue

/// What a completion batch tells the registry (`RegistryScripts.settle`): the devices whose tokens a provider
/// answered gone, and the ones delivered to. One call per list and shard, sent by the worker on the connection its
/// completion goes on, just before it (no round trip of its own); safe to send again with a repeated batch.
public struct RegistryUpdate: Sendable {
    public let shard: Int
    public let keys: [[UInt8]]
    public let args: [[UInt8]]

    /// The calls for `batch`, empty when it names no registered platform's token (a broadcast, a rejected job).
    public static func updates(for batch: [JobCompletion], shards: [DeviceKeys], now: Int64, eventsMax: Int) -> [RegistryUpdate] {
        updates(results: batch.flatMap(\.results), dropped: batch.flatMap(\.droppedTokens), shards: shards, now: now, eventsMax: eventsMax)
    }

    /// The calls for terminal entries and their dropped tokens (a completion's, or the receipts poller's settlements).
    public static func updates(results: [ResultEntry], dropped: [DroppedToken], shards: [DeviceKeys], now: Int64, eventsMax: Int) -> [RegistryUpdate] {
        var lists: [ListKey: (drops: [String], delivered: [String])] = [:]
        var statuses: [String: Int] = [:]
        if !dropped.isEmpty {
            for entry in results where entry.outcome == .tokenDropped { if let token = entry.token { statuses[token] = entry.status } }
        }
        for gone in dropped {
            guard let app = gone.app, let platform = gone.platform else { continue }
            let status = statuses[gone.token] ?? 0
            let key = ListKey(shard: DeviceRegistry.shard(ofToken: gone.token, count: shards.count), app: app, platform: platform)
            lists[key, default: ([], [])].drops += [gone.token, gone.reason, status > 0 ? "\(status) \(gone.reason)" : "",
                                                    gone.invalidSince.map(String.init) ?? ""]
        }
        for entry in results where entry.outcome == .delivered {
            guard let token = entry.token, let app = entry.app, let platform = entry.platform else { continue }
            let key = ListKey(shard: DeviceRegistry.shard(ofToken: token, count: shards.count), app: app, platform: platform)
            lists[key, default: ([], [])].delivered.append(token)
        }
        return lists.map { key, value in
            let rest = [String(value.drops.count / 4)] + value.drops + [String(value.delivered.count)] + value.delivered
            let call = DeviceRegistry.call(shards[key.shard], app: key.app, platform: key.platform, now: now, eventsMax: eventsMax, rest)
            return RegistryUpdate(shard: key.shard, keys: call.keys, args: call.args)
        }
    }

    private struct ListKey: Hashable {
        let shard: Int
        let app: String
        let platform: String
    }
}

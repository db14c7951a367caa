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
        var lists: [ListKey: (drops: [String], delivered: [String])] = [:]
        for completion in batch {
            for dropped in completion.droppedTokens {
                guard let app = dropped.app, let platform = dropped.platform else { continue }
                let status = completion.results.first { $0.token == dropped.token }?.status ?? 0
                let key = ListKey(shard: DeviceRegistry.shard(ofToken: dropped.token, count: shards.count), app: app, platform: platform)
                lists[key, default: ([], [])].drops += [dropped.token, dropped.reason, status > 0 ? "\(status) \(dropped.reason)" : "",
                                                        dropped.invalidSince.map(String.init) ?? ""]
            }
            for entry in completion.results where entry.outcome == .delivered {
                guard let token = entry.token, let app = entry.app, let platform = entry.platform else { continue }
                let key = ListKey(shard: DeviceRegistry.shard(ofToken: token, count: shards.count), app: app, platform: platform)
                lists[key, default: ([], [])].delivered.append(token)
            }
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

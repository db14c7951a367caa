import Foundation
import ProviderKit
import Reactor
import PushCore
import RedisQueue

/// The device registry over every shard, blocking (`herald api`'s registry thread, `herald devices`, tests and the
/// bench): register, unregister, read, list, sweep, count. A device lives in the shard its token hashes to
/// (CRC-32, as a job id picks its shard), so its record, indexes and events are written by one script in one slot.
/// Not thread-safe: one per thread.
public final class DeviceRegistry {
    public let redis: any BlockingRedisCommands
    public let shards: [DeviceKeys]
    public let settings: Configuration.RegistrySettings
    /// Milliseconds since the epoch; a test's manual clock ages devices without waiting.
    public var clock: () -> Int64

    public init(redis: any BlockingRedisCommands, shards: QueueShards, settings: Configuration.RegistrySettings = .init(),
                clock: @escaping () -> Int64 = wallClockMillis) {
        self.redis = redis
        self.shards = shards.shards.map { DeviceKeys($0.keys) }
        self.settings = settings
        self.clock = clock
    }

    /// The shard a token's device lives in.
    public static func shard(ofToken token: String, count: Int) -> Int {
        count <= 1 ? 0 : Int(CRC32.checksum(Array(token.utf8)) % UInt32(count))
    }

    /// The commands of every operation and the reading of their replies (shared with `DeviceRegistryLoop`).
    public var calls: DeviceCalls { DeviceCalls(shards: shards, eventsMax: settings.eventsMaxLength) }

    /// The script call for one list: its keys and the four common arguments first.
    public static func call(_ keys: DeviceKeys, app: String, platform: String, now: Int64, eventsMax: Int, _ rest: [String])
        -> (keys: [[UInt8]], args: [[UInt8]]) {
        (keys.scriptKeys(app: app, platform: platform).map { Array($0.utf8) },
         ([platform, app, String(now), String(eventsMax)] + rest).map { Array($0.utf8) })
    }

    private func run(_ call: DeviceCalls.ScriptCall) throws(RedisError) -> RESPValue {
        try redis.evalScript(call.script, keys: call.keys, args: call.args)
    }

    /// Registers or refreshes a device (idempotent: the same call again only moves `seen`). Returns the event
    /// written: `registered`, `refreshed` or `moved`.
    @discardableResult
    public func register(_ id: DeviceID, _ attributes: DeviceAttributes, history: DeviceHistory = DeviceHistory()) throws(RedisError) -> String {
        DeviceCalls.registered(try run(calls.register(id, attributes, history: history, now: clock())))
    }

    /// Unregisters a device (`reason` kept on its record and event). False when it was not registered.
    @discardableResult
    public func unregister(_ id: DeviceID, reason: String = "unregistered") throws(RedisError) -> Bool {
        DeviceCalls.unregistered(try run(calls.unregister(id, reason: reason, now: clock())))
    }

    public func device(_ id: DeviceID) throws(RedisError) -> Device? {
        DeviceCalls.device(id, replies: try redis.pipeline(rawCommands: calls.device(id)))
    }

    /// The devices of `owner` in `app` (of `platform`'s, when given), on every shard, at most `limit` (active and
    /// stale; removed ones leave the index).
    public func devices(app: String, owner: String, platform: Platform? = nil, limit: Int? = nil) throws(RedisError) -> [Device] {
        try indexed(app: app, name: owner, platform: platform, limit: limit) { $0.owners(app: app) }
    }

    /// The active and stale devices of `app` subscribed to `topic` (of `platform`'s, when given), at most `limit`.
    public func devices(app: String, topic: String, platform: Platform? = nil, limit: Int? = nil) throws(RedisError) -> [Device] {
        try indexed(app: app, name: topic, platform: platform, limit: limit) { $0.topics(app: app) }
    }

    private func indexed(app: String, name: String, platform: Platform?, limit: Int?, key: (DeviceKeys) -> String) throws(RedisError) -> [Device] {
        var out: [Device] = []
        for shard in shards {
            let left = limit.map { $0 - out.count }
            if let left, left <= 0 { break }
            for id in DeviceCalls.indexed(app: app, try redis.command(DeviceCalls.indexRange(key(shard), name: name, platform: platform, limit: left))) {
                if let device = try device(id) { out.append(device) }
            }
        }
        return out
    }

    /// The lists (app and platform) the registry holds, over every shard, sorted.
    public func lists() throws(RedisError) -> [(app: String, platform: Platform)] {
        var seen = Set<String>()
        for shard in shards {
            for member in try redis.command(["SMEMBERS", shard.lists]).array ?? [] {
                if let text = member.string { seen.insert(text) }
            }
        }
        return seen.sorted().compactMap { member in
            guard let list = DeviceKeys.list(member), let platform = Platform(rawValue: list.platform) else { return nil }
            return (list.app, platform)
        }
    }

    /// One page of an app's devices (every state; `platform` narrows it), in shard and list order: a cursor is
    /// `<shard>:<platform>:<HSCAN cursor>`, "" to start; nil `next` when done. Pages may differ in size (HSCAN).
    public func page(app: String, platform: Platform? = nil, cursor: String = "", count: Int = 500) throws(RedisError)
        -> (devices: [Device], next: String?) {
        var page = DeviceCalls.Page(app: app, platform: platform, cursor: cursor, count: count, shardCount: shards.count)
        var out: [Device] = []
        while !page.done && out.isEmpty {
            let read = page.read(try redis.command(page.command(shards)), shards)
            guard let hmget = read.delivered else { continue }
            out = DeviceCalls.Page.devices(read.ids, records: read.records, delivered: try redis.command(hmget))
        }
        return (out, page.cursor)
    }

    /// What one sweep did.
    public struct SweepReport: Sendable, Equatable {
        public var madeStale = 0
        public var removed = 0
        public var purged = 0
        /// Some list had more due than one call takes: sweep again soon.
        public var more = false
        public init() {}
    }

    /// One bounded pass over every list of every shard (`settings.sweepBatch` of each kind per list).
    @discardableResult
    public func sweep() throws(RedisError) -> SweepReport {
        var report = SweepReport()
        let now = clock()
        for shard in shards {
            for member in try redis.command(["SMEMBERS", shard.lists]).array ?? [] {
                guard let list = member.string.flatMap(DeviceKeys.list), let platform = Platform(rawValue: list.platform) else { continue }
                let app = list.app
                let call = Self.call(shard, app: app, platform: platform.rawValue, now: now, eventsMax: settings.eventsMaxLength,
                                     Self.sweepBounds(settings, platform: platform, now: now))
                let counts = try redis.evalScript(RegistryScripts.sweep, keys: call.keys, args: call.args).array?.compactMap(\.int) ?? []
                guard counts.count == 3 else { throw .protocolError("registry sweep reply") }
                report.madeStale += Int(counts[0])
                report.removed += Int(counts[1])
                report.purged += Int(counts[2])
                if counts.contains(where: { $0 >= Int64(settings.sweepBatch) }) { report.more = true }
            }
        }
        return report
    }

    static let dayMs: Int64 = 86_400_000

    /// The sweep script's arguments after the common four: stale, remove and purge boundaries, the batch.
    public static func sweepBounds(_ settings: Configuration.RegistrySettings, platform: Platform, now: Int64) -> [String] {
        let aging = settings.aging(platform)
        return [String(now - Int64(aging.staleAfterDays) * dayMs), String(now - Int64(aging.removeAfterDays) * dayMs),
                String(now - Int64(settings.removedRetentionDays) * dayMs), String(settings.sweepBatch)]
    }

    /// Devices per list and state, and removals by reason: the metrics' figures.
    public struct Counts: Sendable, Equatable {
        public var devices: [ListCount] = []
        public var removals: [Removal] = []
        public init() {}
    }

    public struct ListCount: Sendable, Equatable {
        public let app: String
        public let platform: String
        public var active = 0, stale = 0, removed = 0
        public init(app: String, platform: String, active: Int = 0, stale: Int = 0, removed: Int = 0) {
            self.app = app
            self.platform = platform
            self.active = active
            self.stale = stale
            self.removed = removed
        }
    }

    public struct Removal: Sendable, Equatable {
        public let app: String
        public let platform: String
        public let reason: String
        public var count: Int
        public init(app: String, platform: String, reason: String, count: Int) {
            self.app = app
            self.platform = platform
            self.reason = reason
            self.count = count
        }
    }

    /// Counted by Redis (ZCARD per list, the removals hash), summed over the shards.
    public func counts() throws(RedisError) -> Counts {
        var byList: [String: ListCount] = [:]
        var removals: [String: Removal] = [:]
        for shard in shards {
            let members = (try redis.command(["SMEMBERS", shard.lists]).array ?? []).compactMap(\.string)
            var commands: [[String]] = []
            for member in members {
                guard let (platform, app) = DeviceKeys.list(member) else { continue }
                commands += [["ZCARD", shard.active(app: app, platform: platform)], ["ZCARD", shard.stale(app: app, platform: platform)],
                             ["ZCARD", shard.removed(app: app, platform: platform)]]
            }
            commands.append(["HGETALL", shard.removals])
            let replies = try redis.pipeline(commands)
            var at = 0
            for member in members {
                guard let (platform, app) = DeviceKeys.list(member) else { continue }
                var count = byList[member] ?? ListCount(app: app, platform: platform)
                count.active += Int(replies[at].int ?? 0)
                count.stale += Int(replies[at + 1].int ?? 0)
                count.removed += Int(replies[at + 2].int ?? 0)
                byList[member] = count
                at += 3
            }
            let pairs = replies[at].array ?? []
            var index = 0
            while index + 1 < pairs.count {
                if let field = pairs[index].string, let value = pairs[index + 1].string.flatMap({ Int($0) }) {
                    let parts = field.split(separator: "\n", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
                    if parts.count == 3 {
                        removals[field, default: Removal(app: parts[0], platform: parts[1], reason: parts[2], count: 0)].count += value
                    }
                }
                index += 2
            }
        }
        var counts = Counts()
        counts.devices = byList.keys.sorted().compactMap { byList[$0] }
        counts.removals = removals.keys.sorted().compactMap { removals[$0] }
        return counts
    }
}

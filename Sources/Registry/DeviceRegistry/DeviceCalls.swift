import PushCore
import RedisQueue

/// The registry's Redis commands and the reading of their replies, apart from how they are sent: the blocking
/// `DeviceRegistry` pipelines them, `herald api`'s `DeviceRegistryLoop` sends them on its event loop. One place
/// says what each operation asks of Redis and what an answer means.
public struct DeviceCalls: Sendable {
    public let shards: [DeviceKeys]
    public let eventsMax: Int

    public init(shards: [DeviceKeys], eventsMax: Int) {
        self.shards = shards
        self.eventsMax = eventsMax
    }

    /// A script call: what `evalScript` takes.
    public struct ScriptCall {
        public let script: RedisScript
        public let keys: [[UInt8]]
        public let args: [[UInt8]]
    }

    func keys(_ id: DeviceID) -> DeviceKeys { shards[DeviceRegistry.shard(ofToken: id.token, count: shards.count)] }

    private func script(_ script: RedisScript, _ id: DeviceID, now: Int64, _ rest: [String]) -> ScriptCall {
        let call = DeviceRegistry.call(keys(id), app: id.app, platform: id.platform.rawValue, now: now, eventsMax: eventsMax, rest)
        return ScriptCall(script: script, keys: call.keys, args: call.args)
    }

    public func register(_ id: DeviceID, _ attributes: DeviceAttributes, history: DeviceHistory = DeviceHistory(), now: Int64) -> ScriptCall {
        script(RegistryScripts.register, id, now: now, [id.token, attributes.recordJSON] + history.arguments)
    }

    /// The event `register` wrote: `registered`, `refreshed` or `moved`.
    public static func registered(_ reply: RESPValue) -> String { reply.string ?? "" }

    public func unregister(_ id: DeviceID, reason: String, now: Int64) -> ScriptCall {
        script(RegistryScripts.unregister, id, now: now, [id.token, reason])
    }

    /// Whether `unregister` removed a registered device.
    public static func unregistered(_ reply: RESPValue) -> Bool { reply.int == 1 }

    /// A device's record and its last delivery, in that order.
    public func device(_ id: DeviceID) -> [[[UInt8]]] {
        let keys = keys(id)
        return [["HGET", keys.records(app: id.app, platform: id.platform.rawValue), id.token].map { Array($0.utf8) },
                ["HGET", keys.delivered(app: id.app, platform: id.platform.rawValue), id.token].map { Array($0.utf8) }]
    }

    public static func device(_ id: DeviceID, replies: [RESPValue]) -> Device? {
        guard replies.count == 2, let record = replies[0].bytes else { return nil }
        return Device(id: id, record: record, delivered: replies[1].string.flatMap { Int64($0) })
    }

    /// An index (`DeviceKeys.owners` or `topics`) of one shard: the members named `name` (of `platform`'s devices
    /// only, when given: members are `<name>\n<platform>\n<token>`, so that is a narrower range), at most `limit`.
    public static func indexRange(_ key: String, name: String, platform: Platform? = nil, limit: Int? = nil) -> [[UInt8]] {
        let prefix = platform.map { "\(name)\n\($0.rawValue)" } ?? name
        return (["ZRANGEBYLEX", key, "[\(prefix)\n", "(\(prefix)\u{0B}"] + (limit.map { ["LIMIT", "0", String($0)] } ?? [])).map { Array($0.utf8) }
    }

    /// The devices an index range names.
    public static func indexed(app: String, _ reply: RESPValue) -> [DeviceID] {
        (reply.array ?? []).compactMap { member in
            guard let text = member.string else { return nil }
            let parts = text.split(separator: "\n", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, let platform = Platform(rawValue: String(parts[1])) else { return nil }
            return DeviceID(app: app, platform: platform, token: String(parts[2]))
        }
    }

    /// Where a listing of an app's devices is: shard, list (platform) and HSCAN cursor. A cursor's text is
    /// `<shard>:<platform>:<HSCAN cursor>`, "" to start.
    public struct Page {
        public let app: String
        let platforms: [Platform]
        let shardCount: Int
        public let count: Int
        var shard = 0, list = 0, scanCursor = "0"

        public init(app: String, platform: Platform?, cursor: String, count: Int, shardCount: Int) {
            self.app = app
            platforms = platform.map { [$0] } ?? Platform.allCases
            self.shardCount = shardCount
            self.count = count
            let parts = cursor.split(separator: ":").map(String.init)
            if parts.count == 3, let s = Int(parts[0]), s >= 0, let p = Platform(rawValue: parts[1]), let l = platforms.firstIndex(of: p) {
                shard = s; list = l; scanCursor = parts[2]
            }
        }

        public var done: Bool { shard >= shardCount }
        var platform: Platform { platforms[list] }
        /// The cursor of what is left, nil when nothing is.
        public var cursor: String? { done ? nil : "\(shard):\(platform.rawValue):\(scanCursor)" }

        /// The HSCAN of where the page is.
        public func command(_ shards: [DeviceKeys]) -> [[UInt8]] {
            ["HSCAN", shards[shard].records(app: app, platform: platform.rawValue), scanCursor, "COUNT", String(count)].map { Array($0.utf8) }
        }

        /// Reads an HSCAN reply and moves past it: the tokens and records it held, and the HMGET of their last
        /// deliveries (nil when it held none).
        public mutating func read(_ reply: RESPValue, _ shards: [DeviceKeys]) -> (ids: [DeviceID], records: [[UInt8]], delivered: [[UInt8]]?) {
            let items = reply.array?.last?.array ?? []
            var ids: [DeviceID] = [], records: [[UInt8]] = []
            var index = 0
            while index + 1 < items.count {
                if let token = items[index].string, let record = items[index + 1].bytes {
                    ids.append(DeviceID(app: app, platform: platform, token: token))
                    records.append(record)
                }
                index += 2
            }
            let hmget = ids.isEmpty ? nil
                : (["HMGET", shards[shard].delivered(app: app, platform: platform.rawValue)] + ids.map(\.token)).map { Array($0.utf8) }
            scanCursor = reply.array?.first?.string ?? "0"
            if scanCursor == "0" {
                list += 1
                if list == platforms.count { list = 0; shard += 1 }
            }
            return (ids, records, hmget)
        }

        /// The devices of a read, with the HMGET's reply.
        public static func devices(_ ids: [DeviceID], records: [[UInt8]], delivered: RESPValue?) -> [Device] {
            let stamps = delivered?.array ?? []
            return ids.indices.compactMap { offset in
                let stamp = offset < stamps.count ? stamps[offset].string.flatMap { Int64($0) } : nil
                return Device(id: ids[offset], record: records[offset], delivered: stamp)
            }
        }
    }
}

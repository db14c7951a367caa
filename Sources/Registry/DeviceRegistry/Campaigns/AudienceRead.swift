import PushCore
import RedisQueue

/// How a shard's part of an audience is read a chunk at a time from a cursor (a string the campaign's hash keeps).
/// A user or topic is one lex range of the owners or topics index: the cursor is the last member read, each device
/// read once. An app is every platform's active set in turn, read with ZSCAN: the cursor is
/// `<platform index>:<ZSCAN cursor>`, and since ZSCAN may return an element twice (a rehash mid-scan), such reads
/// are deduplicated by the campaign's sent set (`dedupes`), so each device is still sent once.
extension Campaign.Audience {
    /// What a read gave: the devices named, how many entries were read, the cursor after them, whether it ended.
    struct Chunk {
        var ids: [DeviceID] = []
        var read = 0
        var cursor: String
        var done = false
    }

    /// Whether the step script must check each device against the campaign's sent set.
    var dedupes: Bool { if case .app = self { true } else { false } }

    /// The lex index a user or topic audience is a range of; nil for an app.
    func index(_ keys: DeviceKeys, app: String) -> String? {
        switch self {
        case .user: keys.owners(app: app)
        case .topic: keys.topics(app: app)
        case .app: nil
        }
    }

    /// How the create script counts the audience: `lex` (ZLEXCOUNT of the index's range) or `card` (ZCARD summed
    /// over every platform's active set), and the keys it counts.
    func counted(_ keys: DeviceKeys, app: String) -> (mode: String, keys: [String]) {
        if let index = index(keys, app: app) { return ("lex", [index]) }
        return ("card", Platform.allCases.map { keys.active(app: app, platform: $0.rawValue) })
    }

    /// Reads at most about `limit` entries after `cursor` (ZSCAN's COUNT is a hint: a small set comes whole).
    func read(_ redis: any BlockingRedisCommands, _ keys: DeviceKeys, app: String, cursor: String, limit: Int) throws(RedisError) -> Chunk {
        if let index = index(keys, app: app) {
            let range = CampaignCalls.range(self)
            let reply = try redis.command(["ZRANGEBYLEX", index, cursor.isEmpty ? range.min : "(" + cursor, range.max, "LIMIT", "0", String(limit)])
            let members = (reply.array ?? []).compactMap(\.string)
            return Chunk(ids: DeviceCalls.indexed(app: app, reply), read: members.count, cursor: members.last ?? cursor,
                         done: members.count < limit)
        }
        let platforms = Platform.allCases
        let parts = cursor.split(separator: ":", maxSplits: 1).map(String.init)
        var list = parts.count == 2 ? Int(parts[0]) ?? 0 : 0
        var scan = parts.count == 2 ? parts[1] : "0"
        var chunk = Chunk(cursor: cursor)
        // Past empty lists to the next entries, or to the end.
        while list < platforms.count && chunk.read == 0 {
            let reply = try redis.command(["ZSCAN", keys.active(app: app, platform: platforms[list].rawValue), scan, "COUNT", String(limit)])
            let items = (reply.array?.last?.array ?? []).compactMap(\.string)
            for token in stride(from: 0, to: items.count - 1, by: 2).map({ items[$0] }) {
                chunk.ids.append(DeviceID(app: app, platform: platforms[list], token: token))
            }
            chunk.read = chunk.ids.count
            scan = reply.array?.first?.string ?? "0"
            if scan == "0" { list += 1 }
        }
        chunk.cursor = "\(list):\(scan)"
        chunk.done = list >= platforms.count
        return chunk
    }
}

import PushCore
import RedisQueue

/// How a shard's part of an audience is read a chunk at a time from a cursor (a string the campaign's hash keeps).
/// A user or topic is one lex range of the owners or topics index: the cursor is the last member read, each device
/// read once; several topics are their ranges in turn (`<topic index>:<last member>`). An app is every platform's
/// active set in turn, read with ZSCAN: the cursor is
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

    /// Whether the step script must check each device against the campaign's sent set: an app's scan may name a
    /// device twice, and several topics may share one.
    var dedupes: Bool {
        switch self {
        case .app, .topics: true
        case .user, .topic: false
        }
    }

    /// The lex index a user or topic audience is a range of (every range of `topics`); nil for an app.
    func index(_ keys: DeviceKeys, app: String) -> String? {
        switch self {
        case .user: keys.owners(app: app)
        case .topic, .topics: keys.topics(app: app)
        case .app: nil
        }
    }

    /// How the create script counts the audience, with the keys and arguments it takes: `lex` (ZLEXCOUNT of each
    /// range of the index: a device in two topics counts twice) or `card` (ZCARD summed over every platform's
    /// active set).
    func counted(_ keys: DeviceKeys, app: String) -> (mode: String, keys: [String], args: [String]) {
        if let index = index(keys, app: app) {
            return ("lex", [index], names.flatMap { name in let range = CampaignCalls.range(name); return [range.min, range.max] })
        }
        return ("card", Platform.allCases.map { keys.active(app: app, platform: $0.rawValue) }, [])
    }

    /// Whether the audience as counted at creation holds a device each time it is read: `topics` counts it once per
    /// topic, so the devices found in the sent set (`repeated`) were counted in it (an app's rescans were not).
    public var countsRepeats: Bool {
        if case .topics = self { return true }
        return false
    }

    /// What a shard has left to read of the audience it counted at creation, from its hash's counters (`audience`
    /// and what was read: `sent`, `skipped`, `unrendered`, and `repeated` where the audience counts repeats).
    public func left(_ count: (String) -> Int) -> Int {
        Self.left(audience: count("audience"), sent: count("sent"), skipped: count("skipped"), unrendered: count("unrendered"),
                  repeated: count("repeated"), countsRepeats: countsRepeats)
    }

    /// What is left to read of an audience counted at creation: its size less what was read (`sent`, `skipped`,
    /// `unrendered`, and `repeated` when the audience counts repeats, `countsRepeats`), never below 0. A shard's
    /// pacing and the status's `waiting` both take it (the control script's cancel counts the same in Lua).
    public static func left(audience: Int, sent: Int, skipped: Int, unrendered: Int, repeated: Int, countsRepeats: Bool) -> Int {
        max(0, audience - sent - skipped - unrendered - (countsRepeats ? repeated : 0))
    }

    /// How a cancel counts the devices never read: after the cursor in the one range (`lex`), or the audience less
    /// what was read (`read`, then "1" when `repeated` was read from it too) when there are several ranges or none.
    var cancelCount: [String] {
        guard names.count == 1, !dedupes else { return ["read", countsRepeats ? "1" : "0"] }
        let range = CampaignCalls.range(names[0])
        return ["lex", range.min, range.max]
    }

    /// Reads at most about `limit` entries after `cursor` (ZSCAN's COUNT is a hint: a small set comes whole).
    func read(_ redis: any BlockingRedisCommands, _ keys: DeviceKeys, app: String, cursor: String, limit: Int) throws(RedisError) -> Chunk {
        if case .topics(let names) = self {
            // `<topic index>:<last member read>`, each topic's range in turn.
            let parts = cursor.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            var topic = parts.count == 2 ? Int(parts[0]) ?? 0 : 0
            var within = parts.count == 2 ? parts[1] : ""
            var chunk = Chunk(cursor: cursor)
            while topic < names.count && chunk.read == 0 {
                let part = try Self.range(redis, keys.topics(app: app), name: names[topic], app: app, after: within, limit: limit)
                chunk.ids = part.ids
                chunk.read = part.read
                within = part.cursor
                if part.done { topic += 1; within = "" }
            }
            chunk.cursor = "\(topic):\(within)"
            chunk.done = topic >= names.count
            return chunk
        }
        if let index = index(keys, app: app) {
            return try Self.range(redis, index, name: names[0], app: app, after: cursor, limit: limit)
        }
        let platforms = Platform.allCases
        // `<platform index>:<ZSCAN cursor>:<run_id>`. A ZSCAN cursor means something only to the Redis process that
        // gave it (a restart or a failover brings a new hash seed, and resuming there may skip devices): under
        // another process the platform's scan starts again, the sent set keeping every device sent once.
        let parts = cursor.split(separator: ":", maxSplits: 2).map(String.init)
        var list = parts.count >= 2 ? Int(parts[0]) ?? 0 : 0
        var scan = parts.count >= 2 ? parts[1] : "0"
        let run = try Self.runID(redis)
        if parts.count == 3 && parts[2] != run { scan = "0" }
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
        chunk.cursor = "\(list):\(scan):\(run)"
        chunk.done = list >= platforms.count
        return chunk
    }

    /// The Redis process's `run_id` (INFO server): new at every start, and another on a failed-over replica.
    static func runID(_ redis: any BlockingRedisCommands) throws(RedisError) -> String {
        let info = try redis.command(["INFO", "server"]).string ?? ""
        let line = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("run_id:") } ?? ""
        return String(line.dropFirst("run_id:".count))
    }

    /// At most `limit` members of `index` named `name` after the member `after` ("" from the first).
    private static func range(_ redis: any BlockingRedisCommands, _ index: String, name: String, app: String, after: String,
                              limit: Int) throws(RedisError) -> Chunk {
        let range = CampaignCalls.range(name)
        let reply = try redis.command(["ZRANGEBYLEX", index, after.isEmpty ? range.min : "(" + after, range.max, "LIMIT", "0", String(limit)])
        let members = (reply.array ?? []).compactMap(\.string)
        return Chunk(ids: DeviceCalls.indexed(app: app, reply), read: members.count, cursor: members.last ?? after, done: members.count < limit)
    }
}

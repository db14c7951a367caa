import RedisQueue

/// The registry's durable path for removals: every shard's `<p>:dropped-tokens` stream, written by the completion
/// script (and the receipts' settle script) atomically with the outcome, followed from a cursor per shard
/// (`DeviceKeys.droppedCursor`) by every worker's sweeper. The worker's own settle call (`RegistryUpdate`) removes a
/// device at once; this catches what that call missed (a worker killed between the two, a cluster master down, the
/// receipts poller), so a device answered gone is removed even then. Applying an entry twice removes nothing twice.
public enum DroppedFollow {
    /// Entries read a step.
    public static let batch = 1_000

    /// The read after `cursor` (nil: none yet, the stream's newest entry is read to start from there, so history from
    /// before the registry was on is left alone).
    public static func read(_ keys: DeviceKeys, cursor: String?) -> [[UInt8]] {
        guard let cursor else { return ["XREVRANGE", keys.droppedTokens, "+", "-", "COUNT", "1"].map { Array($0.utf8) } }
        return ["XRANGE", keys.droppedTokens, "(" + cursor, "+", "COUNT", String(batch)].map { Array($0.utf8) }
    }

    /// The dropped tokens of a read and the id of its last entry (nil when it had none).
    public static func entries(_ reply: RESPValue) -> (dropped: [DroppedToken], last: String?) {
        let entries = StreamEntry.entries(reply)
        let dropped = entries.compactMap { entry -> DroppedToken? in
            guard let token = entry["token"], let app = entry["app"], let platform = entry["platform"] else { return nil }
            return DroppedToken(token: token, topic: entry["topic"] ?? "", environment: entry["environment"] ?? "",
                                reason: entry["reason"] ?? "", invalidSince: entry["invalid_since"].flatMap { Int64($0) },
                                platform: platform, app: app, hasEnvironments: false)
        }
        return (dropped, entries.last?.id)
    }

    /// The cursor move after a read: from what was read to its last entry (or, starting, to the newest or `0-0`).
    public static func advance(_ keys: DeviceKeys, from cursor: String?, to last: String?) -> (keys: [[UInt8]], args: [[UInt8]])? {
        guard cursor == nil || last != nil else { return nil }
        return ([Array(keys.droppedCursor.utf8)], [Array((cursor ?? "").utf8), Array((last ?? "0-0").utf8)])
    }
}

extension DeviceRegistry {
    /// One step of `DroppedFollow` over every shard, blocking (tests, tools). Returns the devices removed.
    @discardableResult
    public func followDropped() throws(RedisError) -> Int {
        var removed = 0
        for shard in shards {
            let cursor = try redis.command(["GET", shard.droppedCursor].map { Array($0.utf8) }).string
            let read = DroppedFollow.entries(try redis.command(DroppedFollow.read(shard, cursor: cursor)))
            if cursor != nil {
                for update in RegistryUpdate.updates(results: [], dropped: read.dropped, shards: shards, now: clock(), eventsMax: settings.eventsMaxLength) {
                    removed += Int(try redis.evalScript(RegistryScripts.settle, keys: update.keys, args: update.args).array?.first?.int ?? 0)
                }
            }
            if let move = DroppedFollow.advance(shard, from: cursor, to: read.last) {
                _ = try redis.evalScript(RegistryScripts.advance, keys: move.keys, args: move.args)
            }
        }
        return removed
    }
}

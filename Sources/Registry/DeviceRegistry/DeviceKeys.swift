import RedisQueue

/// The registry's keys in one shard (docs/queue-design.md, "Device registry"): beside the queue's, under the
/// shard's prefix, so on Redis Cluster a shard's devices share its hash tag's slot and every script stays in it.
/// A device lives in the shard its token hashes to (`DeviceRegistry.shard(ofToken:)`); its keys are per app and
/// platform (a "list"), so every key a script touches is known to the caller from the device it names.
public struct DeviceKeys: Sendable, Equatable {
    public let prefix: String

    public init(prefix: String) { self.prefix = prefix }
    public init(_ keys: QueueKeys) { self.prefix = keys.prefix }

    /// HASH token -> the device's record (JSON, `Device`), removed devices too until purged.
    public func records(app: String, platform: String) -> String { "\(prefix):devices:\(app):\(platform)" }
    /// ZSET token -> last seen (ms) of the active devices: what audiences send to; the sweeper ages them.
    public func active(app: String, platform: String) -> String { "\(prefix):devices:\(app):\(platform):active" }
    /// ZSET token -> last seen (ms) of the stale devices: addressable by token, left out of audiences.
    public func stale(app: String, platform: String) -> String { "\(prefix):devices:\(app):\(platform):stale" }
    /// ZSET token -> when it was removed (ms): records kept for `GET` until `removed_retention_days`.
    public func removed(app: String, platform: String) -> String { "\(prefix):devices:\(app):\(platform):removed" }
    /// HASH token -> when Herald last delivered to it (ms); apart from the record so a completion writes one field.
    public func delivered(app: String, platform: String) -> String { "\(prefix):devices:\(app):\(platform):delivered" }
    /// ZSET (all scores 0) `<owner>\n<platform>\n<token>`: the app's devices by owner, read as a lex range.
    public func owners(app: String) -> String { "\(prefix):devices:\(app):owners" }
    /// ZSET (all scores 0) `<topic>\n<platform>\n<token>`: the app's active and stale devices by topic.
    public func topics(app: String) -> String { "\(prefix):devices:\(app):topics" }
    /// SET `<platform>:<app>`: the lists this shard holds, for the sweeper, the metrics and listing an app.
    public var lists: String { "\(prefix):devices:lists" }

    /// A member of `lists` read back (the scripts write it; a platform has no colon, an app may): nil for another shape.
    public static func list(_ member: String) -> (platform: String, app: String)? {
        guard let colon = member.firstIndex(of: ":") else { return nil }
        return (String(member[..<colon]), String(member[member.index(after: colon)...]))
    }
    /// HASH `<app>\n<platform>\n<reason>` -> devices removed for that reason (`herald_devices_removed_total`).
    public var removals: String { "\(prefix):devices:removals" }
    /// STREAM of registered, refreshed, moved, stale and removed devices (`DeviceEvent`).
    public var events: String { "\(prefix):device-events" }
    /// STRING: the id of the last `<p>:dropped-tokens` entry of this shard the registry has applied (`DroppedFollow`).
    public var droppedCursor: String { "\(prefix):devices:dropped-cursor" }
    /// This shard's dropped-tokens stream (the queue's key, `QueueKeys.droppedTokens`).
    public var droppedTokens: String { "\(prefix):dropped-tokens" }

    /// The seven keys of one list and the three shared ones, in the order every registry script takes them.
    public func scriptKeys(app: String, platform: String) -> [String] {
        [records(app: app, platform: platform), active(app: app, platform: platform), stale(app: app, platform: platform),
         removed(app: app, platform: platform), delivered(app: app, platform: platform), owners(app: app), topics(app: app),
         lists, removals, events]
    }
}

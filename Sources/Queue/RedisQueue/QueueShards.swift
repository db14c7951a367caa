/// Herald's key space split into shards: each shard is a complete `QueueKeys` set (queues, retry set, leases,
/// results, archive, ...) under its own prefix, so on Redis Cluster each lives on whichever node owns its hash
/// tag's slot and every script stays inside one slot. One shard under the plain prefix is today's layout.
///
/// Configured queue keys are written for the base prefix (`herald:queue:urgent`); a shard's copy replaces that
/// prefix with its own (`{herald:0}:queue:urgent`), so one configuration names the queues of every shard.
public struct QueueShards: Sendable, Equatable {
    /// The configured prefix the queue keys are written for.
    public let basePrefix: String
    public let shards: [Shard]
    /// The queue keys as configured (for the base prefix), in priority order; shard i's `queues[j]` is its
    /// copy of `configuredQueues[j]`.
    public let configuredQueues: [String]

    public struct Shard: Sendable, Equatable {
        public let index: Int
        public let keys: QueueKeys
        /// This shard's queue keys in priority order.
        public let queues: [String]
    }

    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// The default prefixes for `count` shards: `prefix` itself for one (today's keys exactly), else
    /// `{<prefix>:<i>}`, a hash tag per shard.
    public static func defaultPrefixes(prefix: String, count: Int) -> [String] {
        count <= 1 ? [prefix] : (0..<count).map { "{\(prefix):\($0)}" }
    }

    /// `prefixes`: one per shard (see `defaultPrefixes`). `queues`: configured keys in priority order (nil or
    /// empty: `<basePrefix>:queue`); with several shards, or a shard prefix other than `basePrefix`, every one
    /// must start with `<basePrefix>:`.
    public init(basePrefix: String, prefixes: [String], queues: [String]? = nil) throws(Problem) {
        guard !prefixes.isEmpty else { throw Problem(description: "at least one shard is needed") }
        guard QueueKeys.isValid(basePrefix) else { throw Problem(description: QueueKeys.InvalidKey(key: basePrefix).description) }
        var seen = Set<String>()
        for prefix in prefixes where !seen.insert(prefix).inserted {
            throw Problem(description: "shard prefix \(prefix.debugDescription) is given twice: every shard needs its own")
        }
        let configured = (queues?.isEmpty ?? true) ? ["\(basePrefix):queue"] : queues!
        let renames = prefixes != [basePrefix]
        var built: [Shard] = []
        for (index, prefix) in prefixes.enumerated() {
            let keys: QueueKeys
            do { keys = try QueueKeys(prefix: prefix) } catch { throw Problem(description: "shard prefix: \(error.description)") }
            var shardQueues: [String] = []
            for queue in configured {
                guard QueueKeys.isValid(queue) else { throw Problem(description: QueueKeys.InvalidKey(key: queue).description) }
                if !renames { shardQueues.append(queue); continue }
                guard let rest = Self.suffix(of: queue, under: basePrefix) else {
                    throw Problem(description: "queue \(queue.debugDescription) is not under the prefix \(basePrefix.debugDescription): with shards, every queue key is written <prefix>:<name> and each shard gets its own copy <shard prefix>:<name>")
                }
                shardQueues.append(prefix + rest)
            }
            built.append(Shard(index: index, keys: keys, queues: shardQueues))
        }
        self.basePrefix = basePrefix
        self.configuredQueues = configured
        self.shards = built
    }

    /// One shard under `prefix` with `queues` as they are: today's layout.
    public init(single keys: QueueKeys, queues: [String]? = nil) throws(Problem) {
        try self.init(basePrefix: keys.prefix, prefixes: [keys.prefix], queues: queues)
    }

    public var count: Int { shards.count }

    /// `:<name>` when `key` is `<prefix>:<name>`.
    private static func suffix(of key: String, under prefix: String) -> Substring? {
        guard key.hasPrefix(prefix + ":") else { return nil }
        return key.dropFirst(prefix.count)
    }

    /// A key written for the base prefix (a queue, `<prefix>:results`, ...) as shard `index` has it; nil when
    /// it is not under the base prefix (and so names no per-shard key).
    public func key(_ key: String, inShard index: Int) -> String? {
        let prefix = shards[index].keys.prefix
        if count == 1 && prefix == basePrefix { return key }
        return Self.suffix(of: key, under: basePrefix).map { prefix + $0 }
    }

    /// The configured queue key a shard's queue key stands for (the inverse of the per-shard copy), for
    /// per-queue settings and for summing lengths across shards; the key itself when no shard has it.
    public func configuredQueue(_ shardQueue: String) -> String {
        for shard in shards {
            if let position = shard.queues.firstIndex(of: shardQueue) { return configuredQueues[position] }
        }
        return shardQueue
    }

    /// The shard whose queues include `shardQueue` (a lease's `queueKey`).
    public func shardIndex(ofQueue shardQueue: String) -> Int? {
        shards.firstIndex { $0.queues.contains(shardQueue) }
    }

    /// The shard a producer's job goes to: `crc32(id) % count` (IEEE CRC-32 of the id's UTF-8 bytes, as zlib,
    /// Python's `zlib.crc32`, Go's `hash/crc32` and Java's `CRC32` compute it), so copies of one id meet in one
    /// shard and its idempotency key.
    public func shard(forJobID id: String) -> Int {
        count == 1 ? 0 : Int(CRC32.checksum(Array(id.utf8)) % UInt32(count))
    }
}

/// IEEE CRC-32 (the zlib/PNG one): the documented producer recipe for picking a shard.
public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

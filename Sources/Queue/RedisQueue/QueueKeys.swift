/// Every Redis key Herald uses, from one prefix (default `herald`). A prefix in braces such as `{herald}` puts
/// every key in one Redis Cluster slot, which the Lua scripts need there (each declares every key it touches,
/// and a script's keys must share a slot).
public struct QueueKeys: Sendable, Equatable {
    public let prefix: String

    public struct InvalidKey: Error, Sendable, Equatable, CustomStringConvertible {
        public let key: String
        public var description: String {
            "invalid Redis key \(key.debugDescription): must be non-empty, without quotes, backslashes or control characters"
        }
    }

    public init(prefix: String = "herald") throws(InvalidKey) {
        guard Self.isValid(prefix) else { throw InvalidKey(key: prefix) }
        self.prefix = prefix
    }

    /// The default job list: producers LPUSH, workers take from the other end.
    public var queue: String { "\(prefix):queue" }
    /// A further job list, `<prefix>:queue:<name>`, for priority lanes.
    public func queue(named name: String) -> String { "\(prefix):queue:\(name)" }
    public var retry: String { "\(prefix):retry" }
    public var results: String { "\(prefix):results" }
    public var droppedTokens: String { "\(prefix):dropped-tokens" }
    /// STREAM of broadcast channels APNs answered ChannelNotRegistered for.
    public var droppedChannels: String { "\(prefix):dropped-channels" }
    public var dead: String { "\(prefix):dead" }
    /// ZSET `<platform>:<ticket id>` -> when its receipt is next asked for (ms): jobs a provider took with a ticket.
    public var receipts: String { "\(prefix):receipts" }
    /// HASH `<platform>:<ticket id>` -> its job's `accepted` entry as JSON with `sent_at` (`PendingReceipt`).
    public var receiptJobs: String { "\(prefix):receipts:jobs" }
    /// HASH id (as written in the letter, JSON-escaped) -> the seqs of its letters: `herald dead --id` without a scan.
    public var deadIDs: String { "\(prefix):dead:ids" }
    /// STRING counter: the seq the next dead letter is stamped with.
    public var deadSeq: String { "\(prefix):dead:seq" }
    /// LIST: the letters a running `herald dead purge|requeue` has still to look at (`<p>:dead` renamed).
    public var deadSweep: String { "\(prefix):dead:sweep" }
    /// STRING: the token of the `herald dead purge|requeue` pass running, with an expiry.
    public var deadLock: String { "\(prefix):dead:lock" }
    /// SET of queue keys an operator paused (`herald queue pause`): the claim script takes nothing from them.
    public var paused: String { "\(prefix):paused" }
    /// STREAM of jobs that ended `failed` or `token_dropped`, bytes and reason, for `herald replay`.
    public var archive: String { "\(prefix):archive" }
    public var workers: String { "\(prefix):workers" }
    /// STRING: a random value made by the first claim, gone only when Redis loses its data (restart without
    /// persistence, FLUSHALL); tells such a loss from a lease taken by another worker.
    public var epoch: String { "\(prefix):epoch" }
    /// `<prefix>:leases:` + worker id: the HASH lease id -> "<queue key>\n<job bytes>".
    public var leasesPrefix: String { "\(prefix):leases:" }
    public func leases(worker: String) -> String { leasesPrefix + worker }
    /// STRING per producer job id while idempotency is on (`QueueScripts.claimOnce`): who is sending it, or
    /// `pending`/`done`; it expires after the window. Ids may hold any bytes: the key is never parsed.
    public func once(jobID: String) -> String { "\(prefix):once:\(jobID)" }
    /// HASH per job id while `results.index_ttl_seconds` is set: token (or channel, or "") -> that token's latest
    /// result entry as JSON with its stream id; expires that long after the job's last entry (`GET /v1/jobs/<id>`).
    public func resultIndex(jobID: String) -> String { "\(prefix):result:\(jobID)" }

    /// Queue keys and worker ids travel inside JSON headers and lease values unescaped.
    public static func isValid(_ key: String) -> Bool {
        !key.isEmpty && !key.unicodeScalars.contains { $0 == "\"" || $0 == "\\" || $0.value < 0x20 || $0.value == 0x7F }
    }
}

import RedisQueue

/// The last minutes of the results stream as the dashboard shows them: outcomes per 10-second slot (the
/// throughput chart), latencies for p50/p99, the commonest failure reasons, the dropped-token rate and the
/// apps whose jobs are being parked. Fed incrementally (`read` takes only entries newer than the last seen),
/// so a poll costs what arrived since the previous one, bounded per call.
public struct ResultsWindow: Sendable {
    public static let slotMilliseconds: Int64 = 10_000
    public static let windowMilliseconds: Int64 = 10 * 60_000
    /// Terminal latencies kept for the percentiles (the newest), and non-delivered reasons kept.
    static let sampleLimit = 20_000

    public private(set) var lastID: String?
    /// The last entry read from each results stream (one per shard).
    private var cursors: [String: String] = [:]
    /// Outcome counts per slot start (ms since the epoch), oldest first.
    public private(set) var slots: [(start: Int64, counts: [String: Int])] = []
    private var latencies: [(at: Int64, ms: Int)] = []
    private var reasons: [(at: Int64, reason: String)] = []
    private var lastParked: [String: Int64] = [:]
    private var lastDelivered: [String: Int64] = [:]
    /// Outcomes of every entry read (the stream from the window's start on).
    public private(set) var totals: [String: Int] = [:]

    public init() {}

    /// Reads what is new in the results stream: at first the last `windowMilliseconds`, then everything after
    /// the last entry seen, at most `maxEntries` per call.
    public mutating func read(redis: any BlockingRedisCommands, keys: QueueKeys, now: Int64, maxEntries: Int = 50_000) throws(RedisError) {
        try read(redis: redis, shards: [keys], now: now, maxEntries: maxEntries)
    }

    /// The same over every shard's results stream, each followed from its own last entry.
    public mutating func read(redis: any BlockingRedisCommands, shards: [QueueKeys], now: Int64, maxEntries: Int = 50_000) throws(RedisError) {
        for keys in shards {
            let stream = keys.results
            var entries: [StreamEntry]
            if let last = cursors[stream] {
                entries = []
                var cursor = last
                while entries.count < maxEntries {
                    let batch = StreamEntry.entries(try redis.command(["XRANGE", stream, "(" + cursor, "+", "COUNT", "5000"]))
                    entries += batch
                    guard let last = batch.last, batch.count == 5000 else { break }
                    cursor = last.id
                }
            } else {
                entries = StreamEntry.entries(try redis.command(["XREVRANGE", stream, "+", "\(now - Self.windowMilliseconds)",
                                                                 "COUNT", "\(maxEntries)"])).reversed()
            }
            cursors[stream] = entries.last?.id ?? cursors[stream] ?? "0-0"
            add(entries, now: now)
        }
    }

    public mutating func add(_ entries: [StreamEntry], now: Int64) {
        for entry in entries {
            let at = entry.milliseconds
            let outcome = entry["outcome"] ?? "unknown"
            totals[outcome, default: 0] += 1
            let start = at - at % Self.slotMilliseconds
            if let index = slots.lastIndex(where: { $0.start == start }) {
                slots[index].counts[outcome, default: 0] += 1
            } else {
                slots.append((start, [outcome: 1]))
                slots.sort { $0.start < $1.start }
            }
            let app = entry["app"] ?? ""
            if outcome == "delivered" { lastDelivered[app] = at }
            if outcome != "retrying", let ms = entry["latency_ms"].flatMap({ Int($0) }), outcome != "rejected" { latencies.append((at, ms)) }
            if outcome != "delivered", let reason = entry["reason"], !reason.isEmpty {
                reasons.append((at, reason))
                if outcome == "retrying" && (reason.hasPrefix("AppPaused:") || reason.hasPrefix("Unavailable:")) { lastParked[app] = at }
            }
            lastID = entry.id
        }
        let oldest = now - Self.windowMilliseconds
        slots.removeAll { $0.start < oldest - Self.slotMilliseconds }
        latencies.removeAll { $0.at < now - 60_000 }
        if latencies.count > Self.sampleLimit { latencies.removeFirst(latencies.count - Self.sampleLimit) }
        reasons.removeAll { $0.at < now - 5 * 60_000 }
        if reasons.count > Self.sampleLimit { reasons.removeFirst(reasons.count - Self.sampleLimit) }
    }

    /// Latency percentile (0...1) of the terminal outcomes of the last minute, in milliseconds.
    public func latencyPercentile(_ p: Double) -> Int? {
        guard !latencies.isEmpty else { return nil }
        let sorted = latencies.map(\.ms).sorted()
        let rank = Int((p * Double(sorted.count - 1)).rounded())
        return sorted[min(sorted.count - 1, max(0, rank))]
    }

    /// The most frequent non-delivered reasons of the last five minutes.
    public func topReasons(_ limit: Int = 8) -> [(reason: String, count: Int)] {
        var counts: [String: Int] = [:]
        for (_, reason) in reasons { counts[reason, default: 0] += 1 }
        return counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.prefix(limit).map { ($0.key, $0.value) }
    }

    /// Entries of `outcome` in the last `milliseconds`.
    public func count(_ outcome: String, lastMilliseconds milliseconds: Int64, now: Int64) -> Int {
        slots.filter { $0.start >= now - milliseconds - Self.slotMilliseconds + 1 }.reduce(0) { $0 + ($1.counts[outcome] ?? 0) }
    }

    /// Apps whose jobs were parked (paused destination) in the last minute with nothing delivered since.
    public func pausedApps(now: Int64) -> [String] {
        lastParked.filter { app, at in at > now - 60_000 && at > (lastDelivered[app] ?? 0) }.keys.sorted()
    }
}

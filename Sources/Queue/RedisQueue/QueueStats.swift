/// A snapshot for `herald stats`, read with a handful of pipelined commands.
public struct QueueStats: Sendable, Equatable {
    public var queueLengths: [String: Int] = [:]
    /// Workers with a live heartbeat / with an expired one (their leases wait for the reaper).
    public var liveWorkers = 0
    public var expiredWorkers = 0
    /// Jobs leased by any worker (sum of the lease hashes' lengths).
    public var leasesInFlight = 0
    public var retryDueNow = 0
    public var retryDueNextMinute = 0
    public var retryDueNextHour = 0
    public var retryDueLater = 0
    public var deadLetters = 0
    public var resultsLength = 0
    public var droppedTokensLength = 0
    public var droppedChannelsLength = 0
    /// Entries in the failed-job archive (`herald replay` reads it).
    public var archiveLength = 0
    public var outcomesLastMinute: [String: Int] = [:]
    public var outcomesLastHour: [String: Int] = [:]
    /// True when the last hour held more than `resultsScanLimit` entries: the outcome counts cover only the newest.
    public var outcomesTruncated = false
    /// Keys that answered an error (counted as 0 above), each named.
    public var keyErrors: [KeyReplyError] = []

    public init() {}

    /// Reads the stats. The outcome counts come from XREVRANGE over the last hour, at most `resultsScanLimit`
    /// entries (a bounded cost however busy the stream is).
    public static func read(redis: any BlockingRedisCommands, keys: QueueKeys, queueKeys: [String]? = nil,
                            resultsScanLimit: Int = 20_000) throws(RedisError) -> QueueStats {
        let queues = queueKeys ?? [keys.queue]
        guard let time = try redis.command(["TIME"]).array, time.count == 2,
              let seconds = time[0].int, let micros = time[1].int else { throw .protocolError("TIME reply") }
        let now = seconds * 1000 + micros / 1000
        var commands: [[String]] = queues.map { ["LLEN", $0] }
        commands += [
            ["ZCOUNT", keys.workers, "(\(now)", "+inf"],
            ["ZCOUNT", keys.workers, "-inf", "\(now)"],
            ["ZRANGE", keys.workers, "0", "-1"],
            ["ZCOUNT", keys.retry, "-inf", "\(now)"],
            ["ZCOUNT", keys.retry, "(\(now)", "\(now + 60_000)"],
            ["ZCOUNT", keys.retry, "(\(now + 60_000)", "\(now + 3_600_000)"],
            ["ZCOUNT", keys.retry, "(\(now + 3_600_000)", "+inf"],
            // A purge or requeue pass holds the letters it has not looked at in `dead:sweep`: they are listed still.
            ["LLEN", keys.dead],
            ["LLEN", keys.deadSweep],
            ["XLEN", keys.results],
            ["XLEN", keys.droppedTokens],
            ["XLEN", keys.droppedChannels],
            ["XLEN", keys.archive],
            ["XREVRANGE", keys.results, "+", "\(now - 3_600_000)", "COUNT", "\(resultsScanLimit)"],
        ]
        let replies = try redis.pipeline(commands)
        var stats = QueueStats()
        stats.keyErrors = KeyReplyError.collect(commands, replies)
        for (index, queue) in queues.enumerated() { stats.queueLengths[queue] = Int(replies[index].int ?? 0) }
        var i = queues.count
        func next() -> RESPValue { defer { i += 1 }; return replies[i] }
        stats.liveWorkers = Int(next().int ?? 0)
        stats.expiredWorkers = Int(next().int ?? 0)
        let workers = (next().array ?? []).compactMap(\.string)
        stats.retryDueNow = Int(next().int ?? 0)
        stats.retryDueNextMinute = Int(next().int ?? 0)
        stats.retryDueNextHour = Int(next().int ?? 0)
        stats.retryDueLater = Int(next().int ?? 0)
        stats.deadLetters = Int(next().int ?? 0)
        stats.deadLetters += Int(next().int ?? 0)
        stats.resultsLength = Int(next().int ?? 0)
        stats.droppedTokensLength = Int(next().int ?? 0)
        stats.droppedChannelsLength = Int(next().int ?? 0)
        stats.archiveLength = Int(next().int ?? 0)
        let entries = StreamEntry.entries(next())
        stats.outcomesTruncated = entries.count >= resultsScanLimit
        for entry in entries {
            let outcome = entry["outcome"] ?? "unknown"
            stats.outcomesLastHour[outcome, default: 0] += 1
            if entry.milliseconds > now - 60_000 { stats.outcomesLastMinute[outcome, default: 0] += 1 }
        }
        if !workers.isEmpty {
            let hlen = workers.map { ["HLEN", keys.leases(worker: $0)] }
            let lengths = try redis.pipeline(hlen)
            stats.keyErrors += KeyReplyError.collect(hlen, lengths)
            stats.leasesInFlight = lengths.reduce(0) { $0 + Int($1.int ?? 0) }
        }
        return stats
    }
}

extension QueueStats {
    /// Every shard's stats (in shard order, queue lengths under the shard's own keys) and their sum (queue
    /// lengths under the configured keys). Every worker heartbeats in every shard, so the worker counts are
    /// the largest shard's, not a sum.
    public static func read(redis: any BlockingRedisCommands, shards: QueueShards,
                            resultsScanLimit: Int = 20_000) throws(RedisError) -> (total: QueueStats, perShard: [QueueStats]) {
        var perShard: [QueueStats] = []
        for shard in shards.shards {
            perShard.append(try read(redis: redis, keys: shard.keys, queueKeys: shard.queues, resultsScanLimit: resultsScanLimit))
        }
        var total = QueueStats()
        for stats in perShard {
            for (queue, length) in stats.queueLengths { total.queueLengths[shards.configuredQueue(queue), default: 0] += length }
            total.liveWorkers = max(total.liveWorkers, stats.liveWorkers)
            total.expiredWorkers = max(total.expiredWorkers, stats.expiredWorkers)
            total.leasesInFlight += stats.leasesInFlight
            total.retryDueNow += stats.retryDueNow
            total.retryDueNextMinute += stats.retryDueNextMinute
            total.retryDueNextHour += stats.retryDueNextHour
            total.retryDueLater += stats.retryDueLater
            total.deadLetters += stats.deadLetters
            total.resultsLength += stats.resultsLength
            total.droppedTokensLength += stats.droppedTokensLength
            total.droppedChannelsLength += stats.droppedChannelsLength
            total.archiveLength += stats.archiveLength
            total.outcomesLastMinute.merge(stats.outcomesLastMinute, uniquingKeysWith: +)
            total.outcomesLastHour.merge(stats.outcomesLastHour, uniquingKeysWith: +)
            total.outcomesTruncated = total.outcomesTruncated || stats.outcomesTruncated
            total.keyErrors += stats.keyErrors
        }
        return (total, perShard)
    }
}

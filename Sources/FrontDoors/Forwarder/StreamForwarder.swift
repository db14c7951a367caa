import Foundation
import RedisQueue

/// What `herald forward` reads and how it shares the work.
public struct ForwarderSettings: Sendable {
    /// Stream keys, e.g. `<prefix>:results` and `<prefix>:dropped-tokens`.
    public var streams: [String]
    /// One consumer group per receiver: forwarders in the same group share the entries, each goes to one.
    public var group = "herald-forward"
    /// Unique per forwarder process (a restarted one may keep its name and picks up its own pending entries).
    public var consumer: String
    public var batchSize = 100
    /// How long one read waits for new entries.
    public var blockMilliseconds = 1_000
    /// Entries another forwarder read and has not acknowledged for this long are taken over (it died).
    public var claimIdleMilliseconds = 60_000
    /// Back-off between failed POSTs of one batch: doubling from the first to the cap, each randomised to 50-100 %.
    public var retryInitialMilliseconds = 500
    public var retryMaxMilliseconds = 30_000
    /// When the group does not exist yet: start at the stream's oldest entry (true) or only new ones.
    public var fromStart = false

    public init(streams: [String], consumer: String) {
        self.streams = streams
        self.consumer = consumer
    }
}

/// What a forwarder did so far, for its log and tests.
public struct ForwarderCounters: Sendable, Equatable {
    public var posted = 0
    public var entriesAcknowledged = 0
    public var failedPosts = 0
    public var claimedFromOthers = 0
    public init() {}
}

/// Forwards stream entries to a webhook: reads with a consumer group, POSTs a batch per stream, acknowledges
/// (XACK) only after a 2xx, retries a failing batch with back-off until it goes through, and takes over entries
/// that a dead forwarder left pending (XAUTOCLAIM after `claimIdleMilliseconds`). So each entry reaches the
/// receiver at least once: a forwarder that dies after the POST and before the XACK has it posted again by the
/// next owner (receivers deduplicate by `stream_id`). Blocking; one thread.
public final class StreamForwarder {
    public private(set) var counters = ForwarderCounters()
    private let redis: any BlockingRedisCommands
    private let client: WebhookClient
    private let settings: ForwarderSettings
    private let log: (String) -> Void
    private let shouldStop: () -> Bool

    public init(redis: any BlockingRedisCommands, client: WebhookClient, settings: ForwarderSettings,
                log: @escaping (String) -> Void = { _ in }, shouldStop: @escaping () -> Bool) {
        self.redis = redis
        self.client = client
        self.settings = settings
        self.log = log
        self.shouldStop = shouldStop
    }

    /// Makes each stream's consumer group unless it exists (and the stream, so a group can wait for it).
    public func ensureGroups() throws(RedisError) {
        for stream in settings.streams {
            do {
                _ = try redis.command(["XGROUP", "CREATE", stream, settings.group, settings.fromStart ? "0" : "$", "MKSTREAM"])
            } catch let error {
                guard case .server(let message) = error, message.hasPrefix("BUSYGROUP") else { throw error }
            }
        }
    }

    /// Runs until `shouldStop`: first this consumer's own pending entries (a restart under the same name), then
    /// entries of dead forwarders and new ones. Redis errors end it (the command exits non-zero; a supervisor
    /// restarts it, and the pending entries wait in Redis meanwhile).
    public func run() throws(RedisError) {
        try ensureGroups()
        for stream in settings.streams {
            while !shouldStop() {
                let entries = try readGroup(streams: [stream], id: "0", block: nil)
                if entries.isEmpty { break }
                for (key, batch) in entries { deliver(batch, stream: key) }
            }
        }
        while !shouldStop() { try step() }
    }

    /// One round: take over stale entries of each stream, else wait for new ones; deliver what came.
    public func step() throws(RedisError) {
        var took = false
        for stream in settings.streams where !shouldStop() {
            let stale = try autoclaim(stream)
            if !stale.isEmpty {
                counters.claimedFromOthers += stale.count
                log("took over \(stale.count) entries of \(stream) left unacknowledged by another forwarder")
                deliver(stale, stream: stream)
                took = true
            }
        }
        if took || shouldStop() { return }
        for (stream, batch) in try readGroup(streams: settings.streams, id: ">", block: settings.blockMilliseconds) where !shouldStop() {
            deliver(batch, stream: stream)
        }
    }

    /// XREADGROUP: entries by stream. An entry trimmed away while pending comes back without fields: it is
    /// acknowledged at once (there is nothing left to send).
    private func readGroup(streams: [String], id: String, block: Int?) throws(RedisError) -> [(String, [StreamEntry])] {
        var command = ["XREADGROUP", "GROUP", settings.group, settings.consumer, "COUNT", String(settings.batchSize)]
        if let block { command += ["BLOCK", String(block)] }
        command += ["STREAMS"] + streams + Array(repeating: id, count: streams.count)
        let reply = try redis.command(command)
        var out: [(String, [StreamEntry])] = []
        for pair in reply.array ?? [] {
            guard let parts = pair.array, parts.count == 2, let stream = parts[0].string, let items = parts[1].array else { continue }
            var entries: [StreamEntry] = []
            var gone: [String] = []
            for item in items {
                if let entry = StreamEntry(item) { entries.append(entry) } else if let id = item.array?.first?.string { gone.append(id) }
            }
            if !gone.isEmpty { try acknowledge(gone, stream: stream) }
            if !entries.isEmpty { out.append((stream, entries)) }
        }
        return out
    }

    private func autoclaim(_ stream: String) throws(RedisError) -> [StreamEntry] {
        let reply = try redis.command(["XAUTOCLAIM", stream, settings.group, settings.consumer, String(settings.claimIdleMilliseconds), "0-0",
                                       "COUNT", String(settings.batchSize)])
        guard let parts = reply.array, parts.count >= 2 else { throw .protocolError("XAUTOCLAIM reply: \(reply)") }
        // Redis 7 lists the ids of entries deleted meanwhile third; they are dropped from the pending list already.
        return StreamEntry.entries(parts[1])
    }

    private func acknowledge(_ ids: [String], stream: String) throws(RedisError) {
        _ = try redis.command(["XACK", stream, settings.group] + ids)
        counters.entriesAcknowledged += ids.count
    }

    /// POSTs until a 2xx (then XACK) or until asked to stop (the entries stay pending for the next owner).
    /// Between tries the entries are touched (XCLAIM to itself, idle reset) so no other forwarder takes them
    /// over from a live one while the receiver is down.
    private func deliver(_ entries: [StreamEntry], stream: String) {
        let body = ForwardBody.encode(stream: stream, entries: entries)
        let ids = entries.map(\.id)
        var delay = settings.retryInitialMilliseconds
        while !shouldStop() {
            let answer = client.post(body)
            if answer.isSuccess {
                counters.posted += 1
                do {
                    try acknowledge(ids, stream: stream)
                } catch {
                    // Posted but not acknowledged: they stay pending and are posted again (at least once).
                    log("posted \(ids.count) entries of \(stream) but could not acknowledge them: \(error)")
                }
                return
            }
            counters.failedPosts += 1
            switch answer {
            case .status(let code, let text): log("webhook answered \(code) for \(ids.count) entries of \(stream); retrying in \(delay) ms: \(text.prefix(200))")
            case .transportError(let text): log("webhook unreachable for \(ids.count) entries of \(stream); retrying in \(delay) ms: \(text)")
            }
            sleep(milliseconds: Int(Double(delay) * Double.random(in: 0.5...1)))
            delay = min(settings.retryMaxMilliseconds, delay * 2)
            _ = try? redis.command(["XCLAIM", stream, settings.group, settings.consumer, "0"] + ids + ["JUSTID"])
        }
    }

    /// Sleeps in short steps so a stop request is seen within 100 ms.
    private func sleep(milliseconds: Int) {
        var left = milliseconds
        while left > 0 && !shouldStop() {
            let step = min(left, 100)
            usleep(UInt32(step) * 1000)
            left -= step
        }
    }
}

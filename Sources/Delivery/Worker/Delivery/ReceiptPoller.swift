import PushCore
import DeviceRegistry
import ProviderKit
import Reactor
import RedisQueue

/// The receipts poller (docs/queue-design.md, "Receipts"): takes the tickets due from a shard's receipts set, asks
/// each ticket's provider (a `ReceiptPhase`) for their receipts, one ask per app and `batch` tickets, and writes each
/// decided ticket's terminal entry once. Provider-neutral: it knows a provider only as a `ReceiptPhase`. Run by
/// `herald scheduler` (given a configuration with such apps), off every worker's send path. Blocking; one thread.
public final class ReceiptPoller {
    private let configuration: Configuration
    /// The loaded credentials of the apps whose provider has a second phase, by app name.
    private let apps: [String: AppCredentials]
    private let logger: Logger
    public let pollerID: String
    /// Asks made and tickets named in them (tests hold them to the schedule).
    public private(set) var asks = 0, asked = 0

    public init(configuration: Configuration, credentials: [AppCredentials], pollerID: String, logger: Logger) {
        self.configuration = configuration
        var apps: [String: AppCredentials] = [:]
        for loaded in credentials where Self.phase(configuration, loaded.app.platform) != nil { apps[loaded.app.name] = loaded }
        self.apps = apps
        self.pollerID = pollerID
        self.logger = logger
    }

    /// The apps of `configuration` the poller needs, their credentials loaded.
    public static func credentials(_ configuration: Configuration) throws -> [AppCredentials] {
        try configuration.apps.filter { phase(configuration, $0.platform) != nil }.map { try AppCredentials.load($0, configuration: configuration) }
    }

    /// Whether any configured app's provider has a second phase.
    public static func needed(_ configuration: Configuration) -> Bool { configuration.apps.contains { phase(configuration, $0.platform) != nil } }

    static func phase(_ configuration: Configuration, _ platform: Platform) -> (any ReceiptPhase.Type)? {
        configuration.providers.provider(for: platform) as? any ReceiptPhase.Type
    }

    /// The shortest interval among the second phases: how far a take pushes a ticket's next ask.
    private var interval: Int64 {
        Platform.allCases.compactMap { Self.phase(configuration, $0)?.receiptSchedule(configuration).intervalMilliseconds }.min() ?? 60_000
    }

    /// The most tickets one take holds: the smallest ask's, so every ticket taken is asked for at once after its
    /// take (its next ask is then an interval after this one, never sooner).
    private var takeLimit: Int {
        Platform.allCases.compactMap { Self.phase(configuration, $0)?.receiptSchedule(configuration).batch }.min() ?? 1000
    }

    /// Takes in one pass at most: a backlog (a poller down for hours, a burst reaching its delay) is worked off over
    /// several passes, so the scheduler moves retries and reaps leases between them, and a stop is heard.
    public static let takesPerPass = 10

    /// One pass over a shard: the due tickets taken a batch at a time (at most `takesPerPass`), each batch asked for
    /// and its decided tickets settled before the next take. Returns how many settled and when the soonest remaining
    /// ticket is due (ms, Redis's clock; `now` when more are due at once), nil when none.
    public func pass(_ set: BlockingReceiptSet, shouldStop: () -> Bool = { false }) throws(RedisError) -> (settled: Int, nextDue: Int64?, now: Int64) {
        set.resultsMaxLength = configuration.worker.resultsMaxLength
        set.resultIndexTTLSeconds = configuration.results.indexTTLSeconds
        var settled = 0
        for take in 1...Self.takesPerPass {
            let (now, due, nextDue) = try set.take(limit: takeLimit, intervalMilliseconds: interval)
            var settlements: [BlockingReceiptSet.Settlement] = []
            var groups: [String: [BlockingReceiptSet.Waiting]] = [:]
            for waiting in due { groups[waiting.platform + "\n" + (waiting.entry.app ?? ""), default: []].append(waiting) }
            for (_, group) in groups.sorted(by: { $0.key < $1.key }) {
                settlements += decide(group, now: now)
            }
            // The devices first: a poller killed between the two removes them again next time (safe), never not at all.
            try forgetDropped(settlements, redis: set.redis)
            settled += try set.settle(settlements)
            if due.count < takeLimit { return (settled, nextDue, now) }
            if take == Self.takesPerPass || shouldStop() { return (settled, now, now) }
        }
        return (settled, nil, 0)
    }

    /// One app's tickets: asked in batches; a receipt decides, and past the bound an answer without one decides too.
    /// A ticket whose ask failed (the provider unreachable, the access token refused) or could not be made (its app
    /// is not in this configuration) is not taken for one Expo never receipted: it waits for an ask that is answered,
    /// and only past twice the bound ends `delivered` with `ReceiptNotSeen` saying so (the set does not grow forever).
    private func decide(_ group: [BlockingReceiptSet.Waiting], now: Int64) -> [BlockingReceiptSet.Settlement] {
        guard let first = group.first, let platform = Platform(rawValue: first.platform), let phase = Self.phase(configuration, platform) else {
            return group.map { notSeen($0, because: "no provider with receipts for platform '\($0.platform)'") }
        }
        let schedule = phase.receiptSchedule(configuration)
        var verdicts: [String: ReceiptVerdict] = [:]
        var answered: Set<String> = []
        if let app = apps[first.entry.app ?? ""] {
            var start = 0
            while start < group.count {
                let chunk = group[start..<min(start + schedule.batch, group.count)].map(\.ticket)
                start += chunk.count
                asks += 1
                asked += chunk.count
                switch phase.askReceipts(chunk, app: app, configuration: configuration) {
                case .success(let got):
                    verdicts.merge(got) { a, _ in a }
                    answered.formUnion(chunk)
                case .failure(let failure):
                    logger.warning("receipts ask failed; the tickets wait for the next ask", [
                        "app": .string(app.app.name), "platform": .string(platform.rawValue), "tickets": .int(chunk.count),
                        "error": .string(failure.description),
                    ])
                }
            }
        }
        return group.compactMap { waiting in
            if let verdict = verdicts[waiting.ticket] { return settled(waiting, verdict) }
            let age = now - waiting.sentAt
            if answered.contains(waiting.ticket) {
                guard age >= schedule.boundMilliseconds else { return nil }
                return notSeen(waiting, because: "no receipt within \(schedule.boundMilliseconds / 1000) s of the ticket")
            }
            guard age >= 2 * schedule.boundMilliseconds else { return nil }
            return notSeen(waiting, because: "no ask for it answered within \(2 * schedule.boundMilliseconds / 1000) s of the ticket")
        }
    }

    private func notSeen(_ waiting: BlockingReceiptSet.Waiting, because why: String) -> BlockingReceiptSet.Settlement {
        BlockingReceiptSet.Settlement(member: waiting.member, entry: entry(waiting, .delivered, reason: "ReceiptNotSeen: " + why), dropped: nil,
                                      queue: waiting.queue)
    }

    /// `registry.enabled`: a receipt's `DeviceNotRegistered` removes its device as a completion's would (safe again
    /// for a ticket settled twice: the device is removed once).
    private func forgetDropped(_ settlements: [BlockingReceiptSet.Settlement], redis: any BlockingRedisCommands) throws(RedisError) {
        guard configuration.registry.enabled, !settlements.isEmpty, let layout = try? configuration.redis.queueShards() else { return }
        let updates = RegistryUpdate.updates(results: settlements.map(\.entry), dropped: settlements.compactMap(\.dropped),
                                             shards: layout.shards.map { DeviceKeys($0.keys) }, now: wallClockMillis(),
                                             eventsMax: configuration.registry.eventsMaxLength)
        for update in updates { _ = try redis.evalScript(RegistryScripts.settle, keys: update.keys, args: update.args) }
    }

    private func settled(_ waiting: BlockingReceiptSet.Waiting, _ verdict: ReceiptVerdict) -> BlockingReceiptSet.Settlement {
        switch verdict {
        case .delivered:
            return BlockingReceiptSet.Settlement(member: waiting.member, entry: entry(waiting, .delivered, reason: nil), dropped: nil, queue: waiting.queue)
        case .fail(let reason):
            return BlockingReceiptSet.Settlement(member: waiting.member, entry: entry(waiting, .failed, reason: reason), dropped: nil, queue: waiting.queue)
        case .dropToken(let reason):
            let e = entry(waiting, .tokenDropped, reason: reason)
            let dropped = DroppedToken(token: e.token ?? "", topic: e.topic ?? "", environment: e.environment ?? "", reason: reason,
                                       platform: e.platform, app: e.app, hasEnvironments: e.environment != nil)
            return BlockingReceiptSet.Settlement(member: waiting.member, entry: e, dropped: dropped, queue: waiting.queue)
        }
    }

    /// The terminal entry: the ticket's `accepted` entry with its outcome, the receipt's reason and this poller.
    private func entry(_ waiting: BlockingReceiptSet.Waiting, _ outcome: ResultEntry.Outcome, reason: String?) -> ResultEntry {
        var entry = waiting.entry
        entry.outcome = outcome
        entry.reason = reason
        entry.worker = pollerID
        entry.latencyMilliseconds = nil
        entry.retryAt = nil
        return entry
    }
}

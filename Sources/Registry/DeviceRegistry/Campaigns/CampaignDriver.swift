import Foundation
import ProviderKit
import PushCore
import RedisQueue

/// The fan-out (docs/campaigns.md): takes documents producers LPUSHed on `<p>:campaigns:new`, and turns each open
/// campaign's audience into jobs a chunk at a time, per shard, from the cursor on, never holding more than a
/// chunk. `herald scheduler` runs a pass per loop; several schedulers may run at once (the `step` script's
/// compare-and-set lets one of them push a chunk). Not thread-safe: one per thread.
public final class CampaignDriver {
    public let campaigns: Campaigns
    public let providers: [any PushProvider.Type]
    /// Index members read per campaign, shard and pass: the most one `step` pushes.
    public let chunk: Int
    public let logger: Logger?
    /// A campaign waits while its queue (in the shard) holds this many jobs or more, so that what pause and cancel
    /// cannot take back (jobs already queued) stays bounded, and other producers' jobs are not buried.
    public var maxQueued: Int
    /// The configured apps, when the scheduler has the configuration: a document of another app is refused `bad_app`.
    public var apps: Set<String>?
    /// The workers' `worker.max_schedule_days`, with `apps`: a dated `deliver_at_local` further ahead is refused.
    public var maxScheduleDays: Int?
    /// Per app, its default time zone and quiet hours (`registry.apps`): without them, devices without a zone are at
    /// UTC and only a campaign's own `quiet_hours` apply.
    public var localTime: [String: Configuration.RegistrySettings.AppLocalTime] = [:]
    /// Runs between reading a chunk and its `step` (tests: a driver killed there, another driver racing it).
    public var beforeStep: (() throws -> Void)?
    /// Documents read and notifications parsed once per campaign id (a campaign's document never changes).
    private var known: [String: (campaign: Campaign, notification: NeutralNotification)] = [:]

    public init(campaigns: Campaigns, providers: [any PushProvider.Type], chunk: Int = 500, logger: Logger? = nil) {
        self.campaigns = campaigns
        self.providers = providers
        self.chunk = max(1, chunk)
        maxQueued = 10 * max(1, chunk)
        self.logger = logger
    }

    private var redis: any BlockingRedisCommands { campaigns.redis }

    /// What one pass did.
    public struct Pass: Sendable, Equatable {
        public var taken = 0
        public var refused = 0
        public var pushed = 0
        /// An unpaced campaign pushed (or the tally read a full batch): pass again without sleeping.
        public var more = false
        /// A paced campaign's next chunk is due, or a full queue may have room, in this many milliseconds (10 to
        /// 1000): pass again then.
        public var nextDueMs: Int?
        public init() {}

        /// How long `herald scheduler` sleeps after this pass when its other work (retries, receipts) is next due
        /// in `otherwise` ms: nil (pass again at once) only while campaigns have more to push; else 10 ms at least,
        /// so a receipt or retry due now never makes the loop spin over every shard.
        public func sleepMilliseconds(otherwise: Int) -> Int? {
            if more { return nil }
            return max(10, min(otherwise, nextDueMs ?? otherwise))
        }
    }

    /// One pass: the new documents, then a chunk of every running campaign in every shard.
    public func pass(shouldStop: () -> Bool = { false }) throws -> Pass {
        var pass = try takeNew()
        let open = try campaigns.openByShard()
        let ids = Set(open.joined())
        // Finished campaigns' documents are not kept: the cache holds the open ones only.
        known = known.filter { ids.contains($0.key) }
        // Per shard, the campaigns whose outcomes are looked for: running, or paused less than the tally window ago.
        var counted = open.map { _ in [String]() }
        for id in ids.sorted() where !shouldStop() {
            for shard in campaigns.keys.indices {
                let step: Step
                do {
                    step = try advanceStep(id, shard: shard)
                } catch let error as RedisError where !error.isUnreachable {
                    // One campaign's broken key (a wrong type) stops that campaign, not every other, nor the tally.
                    logger?.error("campaign not advanced", ["campaign": .string(id), "shard": .int(shard), "error": .string("\(error)")])
                    counted[shard].append(id)
                    continue
                }
                if step.counted { counted[shard].append(id) }
                if let wait = step.nextDueMs { pass.nextDueMs = min(pass.nextDueMs ?? wait, wait) }
                guard let pushed = step.pushed else { continue }
                pass.pushed += pushed
                if step.nextDueMs == nil { pass.more = true }
            }
        }
        for shard in campaigns.keys.indices where !shouldStop() {
            if try tally(shard: shard, open: counted[shard]) == tallyBatch { pass.more = true }
        }
        return pass
    }

    /// Creates a campaign from every document on the first shard's `<p>:campaigns:new`, oldest first. A document
    /// is removed only after it was created (or refused onto `<p>:campaigns:refused` with the reason): a driver
    /// that dies between creates it again, which the create's idempotency makes harmless.
    public func takeNew(max: Int = 100) throws -> Pass {
        var pass = Pass()
        let shard = campaigns.keys[0]
        for _ in 0..<max {
            guard let document = try redis.command(["LINDEX", shard.newCampaigns, "-1"]).bytes else { break }
            do {
                let campaign = try Campaign.parse(document)
                if let apps { try campaign.check(apps: apps, maxScheduleDays: maxScheduleDays, now: campaigns.clock()) }
                try campaigns.create(campaign)
                pass.taken += 1
                logger?.info("campaign created", ["campaign": .string(campaign.id), "app": .string(campaign.app)])
                _ = try redis.command([Array("LREM".utf8), Array(shard.newCampaigns.utf8), Array("-1".utf8), document])
            } catch let error as DeviceError {
                try refuse(document, code: error.code, message: error.description, on: shard)
                pass.refused += 1
            } catch let error as RedisError where !error.isUnreachable {
                // Redis refused the create (a key of the wrong type): taken off the list like a bad document, so
                // it is not retried forever.
                try refuse(document, code: "redis_error", message: "\(error)", on: shard)
                pass.refused += 1
            }
        }
        return pass
    }

    /// Moves a document from `<p>:campaigns:new` to `<p>:campaigns:refused` with the reason (`refuse` script). A
    /// document that is not UTF-8 is kept as `document_base64`, byte for byte, rather than with its bad bytes replaced.
    private func refuse(_ document: [UInt8], code: String, message: String, on shard: DeviceKeys) throws {
        var refusal: [String: Any] = ["error": code, "message": message]
        if let text = String(bytes: document, encoding: .utf8) { refusal["document"] = text } else {
            refusal["document_base64"] = Data(document).base64EncodedString()
        }
        let data = try JSONSerialization.data(withJSONObject: refusal, options: [.sortedKeys, .withoutEscapingSlashes])
        let moved = try redis.evalScript(CampaignScripts.refuse, keys: [shard.newCampaigns, shard.refusedCampaigns].map { Array($0.utf8) },
                                         args: [document, Array(data)])
        if moved.int == 1 { logger?.warning("campaign refused", ["error": .string(code), "message": .string(message)]) }
    }

    /// The campaign's document and notification, read once.
    private func loaded(_ id: String) throws -> (campaign: Campaign, notification: NeutralNotification)? {
        if let hit = known[id] { return hit }
        guard let campaign = try campaigns.campaign(id) else { return nil }
        let entry = (campaign, try NeutralNotification.read(campaign.notification))
        known[id] = entry
        return entry
    }

    /// Reads the next chunk of shard `shard`'s part of the audience after its cursor, renders a job for every
    /// active device in it and hands them to `step` with the cursor it read. The jobs pushed; nil when the
    /// campaign does not run in that shard or another driver moved its cursor first.
    public func advance(_ id: String, shard index: Int) throws -> Int? { try advanceStep(id, shard: index).pushed }

    /// What `advanceStep` did in one shard: the jobs pushed (nil: none, not running or raced), when to come back
    /// (ms) for a paced campaign or a full queue, and whether the shard's tally still looks for its outcomes
    /// (running, or paused less than `tallyWindowMs` ago).
    private struct Step {
        var pushed: Int?
        var nextDueMs: Int?
        var counted = true
    }

    /// `advance`, and when to come back (ms) for a paced campaign or a full queue.
    private func advanceStep(_ id: String, shard index: Int) throws -> Step {
        let shard = campaigns.keys[index]
        let names = ["state", "cursor", "queue", "audience", "created", "paced", "paused_at", "sent", "skipped", "unrendered", "repeated",
                     "due_max"]
        let fields = try redis.command(["HMGET", shard.campaign(id)] + names).array ?? []
        let now = campaigns.clock()
        if fields.first?.string == CampaignStatus.State.paused.rawValue {
            // Counted for a window after the pause, or after the latest time its held jobs are due.
            let since = fields.count == names.count ? fields[6].string.flatMap { Int64($0) } : nil
            let dueMax = fields.count == names.count ? fields[11].string.flatMap { Int64($0) } ?? 0 : 0
            return Step(counted: since.map { max($0, dueMax) + CampaignScripts.tallyWindowMs > now } ?? true)
        }
        guard fields.count == names.count, fields[0].string == CampaignStatus.State.running.rawValue,
              let cursor = fields[1].string, let queue = fields[2].string,
              let (campaign, notification) = try loaded(id) else { return Step(counted: false) }
        guard try redis.command(["LLEN", queue]).int ?? 0 < maxQueued else { return Step(nextDueMs: 100) }
        var limit = chunk, pacedFrom: Double?, interval = 0.0
        let counters = Dictionary(uniqueKeysWithValues: zip(names, fields).map { ($0, $1.string.flatMap { Int($0) } ?? 0) })
        let created = fields[4].string.flatMap { Int64($0) } ?? now
        if let rate = campaign.shardRate(left: campaign.audience.left { counters[$0] ?? 0 },
                                         created: created, now: now, shards: campaigns.keys.count) {
            // The pacing clock: where the sends so far would end at the rate, never further back than one chunk
            // (a campaign paused or starved does not make up for it in a burst).
            interval = 1000 / rate
            let from = max(fields[5].string.flatMap { Double($0) } ?? Double(created),
                           Double(now) - Double(chunk) * interval)
            let allowed = Int(min(Double(chunk), max(0, (Double(now) - from) / interval)))
            guard allowed > 0 else { return Step(nextDueMs: Self.chunkWait(chunk, interval)) }
            limit = min(chunk, allowed)
            pacedFrom = from
        }
        let chunkRead = try campaign.audience.read(redis, shard, app: campaign.app, cursor: cursor, limit: limit)
        let ids = chunkRead.ids
        let records = ids.isEmpty ? [] : try redis.pipeline(rawCommands: ids.map { id in
            ["HGET", shard.records(app: id.app, platform: id.platform.rawValue), id.token].map { Array($0.utf8) }
        })
        let dedupes = campaign.audience.dedupes
        let made = rendered(ids, records: records, campaign: campaign, notification: notification,
                            created: created, now: now)
        let skipped = chunkRead.read - ids.count + made.skipped
        let paced = pacedFrom.map { String(Campaign.milliseconds($0 + Double(chunkRead.read) * interval)) } ?? ""
        let args: [[UInt8]] = [campaign.id, cursor, chunkRead.cursor, chunkRead.done ? "1" : "0", String(skipped),
                               String(made.unrendered), String(now), paced, dedupes ? "1" : "0"].map { Array($0.utf8) }
            + made.rejections + made.jobs
        try beforeStep?()
        let reply = try redis.evalScript(CampaignScripts.step,
                                         keys: [shard.campaign(id), queue, shard.campaigns, shard.campaignSent(id), shard.campaignTally,
                                                campaigns.calls.shards.shards[index].keys.results]
                                            .map { Array($0.utf8) }, args: args)
        guard let pushed = reply.int else { throw RedisError.protocolError("campaign step reply \(reply)") }
        if chunkRead.done && pushed >= 0 {
            logger?.info("campaign shard done", ["campaign": .string(campaign.id), "shard": .int(index)])
        }
        return Step(pushed: pushed >= 0 ? Int(pushed) : nil, nextDueMs: pacedFrom == nil ? nil : Self.chunkWait(chunk, interval))
    }

    /// The step's part of a chunk's devices (their records in `records`): for each active one its device
    /// (`<platform>\n<token>` where the audience deduplicates, else ""), its `deliver_at` ("" for at once) and its job;
    /// a `rejected` result entry's fields for one its provider cannot render for (after its device or "", and their
    /// count), and the others counted skipped. `deliver_at` is worked out once per time zone in the chunk.
    private func rendered(_ ids: [DeviceID], records: [RESPValue], campaign: Campaign, notification: NeutralNotification, created: Int64, now: Int64)
        -> (jobs: [[UInt8]], rejections: [[UInt8]], skipped: Int, unrendered: Int) {
        let dedupes = campaign.audience.dedupes
        let app = localTime[campaign.app]
        let quiet = campaign.quietHours(app: app, timeSensitive: notification.timeSensitive)
        var dues: [String: Int64?] = [:]
        var jobs: [[UInt8]] = [], rejections: [[UInt8]] = []
        var skipped = 0, unrendered = 0
        for (offset, id) in ids.enumerated() {
            guard let record = records[offset].bytes, let device = Device(id: id, record: record, delivered: nil),
                  device.state == DeviceState.active else { skipped += 1; continue }
            let member = dedupes ? "\(id.platform.rawValue)\n\(id.token)" : ""
            let zone = device.attributes.timeZone ?? app?.timeZone ?? "UTC"
            let due: Int64?
            if let known = dues[zone] { due = known } else {
                due = campaign.deliverAt(zone: LocalTime.zone(zone) ?? .gmt, quiet: quiet, created: created, now: now)
                dues[zone] = .some(due)
            }
            var envelope: [String: JSONValue] = [:]
            if let due { envelope["deliver_at"] = .number(String(due)) }
            if let expiration = campaign.expiration { envelope["expiration"] = .number(String(expiration)) }
            do {
                let job = try providers.provider(for: id.platform).render(notification, for: Self.renderDevice(device, campaign: campaign.id, envelope: envelope))
                jobs += [Array(member.utf8), Array((due.map(String.init) ?? "").utf8), job]
            } catch {
                unrendered += 1
                logger?.warning("campaign device not rendered", ["campaign": .string(campaign.id), "device": .string(id.description),
                                                                 "error": .string("\(error)")])
                var entry = ResultEntry(id: Campaign.jobID(campaign: campaign.id, platform: id.platform, token: id.token), outcome: .rejected,
                                        reason: "\(error.code): \(error.description)", token: id.token, app: id.app, worker: "campaigns")
                entry.platform = id.platform.rawValue
                let fields = entry.fields.flatMap { [$0.0, $0.1] }
                rejections += ([member, String(fields.count)] + fields).map { Array($0.utf8) }
            }
        }
        return (jobs, rejections, skipped, unrendered)
    }

    /// How long a chunk takes at a pace (one device every `interval` ms), within 10 ms and a second.
    private static func chunkWait(_ chunk: Int, _ interval: Double) -> Int { Int(min(1000, max(10, Double(chunk) * interval))) }

    /// Results entries read per shard and pass by `tally`.
    public var tallyBatch = 1000

    /// Counts the terminal outcomes of campaigns' jobs in shard `index`'s `<p>:results` after the tally's cursor
    /// (at most `tallyBatch` entries) onto their campaigns' hashes, with the cursor compare-and-set as `step`: each
    /// entry counted once. The entries read. Entries trimmed from the stream before they were read are not counted.
    /// While no campaign is counted in the shard (`open`: running or recently paused, the shard's open ids when nil) and the last one's
    /// `tallyWindowMs` has passed, nothing is read past the tally hash and nothing written: the next `create` moves
    /// the cursor to the stream's end, so a later campaign starts counting there, not at the backlog. Entries
    /// trimmed after the cursor before they were read (Redis 7's `max-deleted-entry-id`) mark the open campaigns
    /// and those counted in the batch `uncounted`, and are logged.
    @discardableResult
    public func tally(shard index: Int, open: [String]? = nil) throws -> Int {
        let shard = campaigns.keys[index]
        let results = campaigns.calls.shards.shards[index].keys.results
        let state = try redis.command(["HMGET", shard.campaignTally, "results", "until", "passed"]).array ?? []
        func field(_ at: Int) -> String? { at < state.count ? state[at].string : nil }
        let cursor = field(0) ?? "0-0"
        let open = try open ?? (redis.command(["ZRANGE", shard.campaigns, "0", "-1"]).array ?? []).compactMap(\.string)
        let now = campaigns.clock(), until = field(1).flatMap { Int64($0) } ?? 0
        if until < now && open.isEmpty { return 0 }
        // While campaigns are counted, `until` stays half a window ahead: the create script takes a shard whose
        // `until` has passed as idle and starts the counting at the stream's end.
        if !open.isEmpty && until < now + CampaignScripts.tallyWindowMs / 2 {
            _ = try redis.evalScript(CampaignScripts.keepCounting, keys: [Array(shard.campaignTally.utf8)], args: [Array(String(now).utf8)])
        }
        // Before the entries are read, so that a trim in between shows as a gap, not as entries read (XINFO fails
        // while the stream does not exist: then there is nothing to read either).
        let stream = try? StreamCount(redis, results)
        let entries = try redis.command(["XRANGE", results, "(" + cursor, "+", "COUNT", String(tallyBatch)]).array ?? []
        guard let last = entries.last?.array?.first?.string else { return 0 }
        let passed = field(2).flatMap { Int($0) } ?? (cursor == "0-0" ? 0 : nil)
        let gap = stream?.trimmed(after: cursor, passed: passed) ?? false
        var counts: [String: [Int]] = [:]
        for entry in entries {
            let fields = (entry.array?.last?.array ?? []).compactMap(\.string)
            var id: String?, outcome: String?
            for at in stride(from: 0, to: fields.count - 1, by: 2) {
                if fields[at] == "id" { id = fields[at + 1] } else if fields[at] == "outcome" { outcome = fields[at + 1] }
            }
            guard let id, let campaign = Campaign.campaignID(ofJob: id), let slot = outcome.flatMap(Self.slot) else { continue }
            counts[campaign, default: [0, 0, 0, 0]][slot] += 1
        }
        if gap { for id in open where counts[id] == nil { counts[id] = [0, 0, 0, 0] } }
        let ids = counts.keys.sorted()
        let reply = try redis.evalScript(CampaignScripts.tally,
                                         keys: ([shard.campaignTally] + ids.map { shard.campaign($0) }).map { Array($0.utf8) },
                                         args: ([cursor, last, gap ? "1" : "0", stream?.passed(after: passed, gap: gap, read: entries.count).map(String.init) ?? ""]
                                                + ids.flatMap { counts[$0]!.map(String.init) }).map { Array($0.utf8) })
        guard reply.int != nil else { throw RedisError.protocolError("campaign tally reply \(reply)") }
        if gap && reply.int == 1 {
            logger?.warning("campaign outcomes trimmed before they were counted",
                            ["shard": .int(index), "after": .string(cursor), "campaigns": .string(ids.joined(separator: ","))])
        }
        return entries.count
    }

    /// What Redis 7's XINFO STREAM says of a results stream, to tell entries trimmed before the tally read them:
    /// with every entry up to the cursor gone (the first entry after it), more entries deleted than the cursor
    /// had passed (`passed`: entries ever added up to it, kept in the tally hash) means some after it went unread.
    /// Redis 6.2 does not count `entries-added`: nothing is told there.
    struct StreamCount {
        var added: Int?
        var length = 0
        var first = "0-0"

        init(_ redis: any BlockingRedisCommands, _ results: String) throws {
            let info = try redis.command(["XINFO", "STREAM", results]).array ?? []
            for at in stride(from: 0, to: info.count - 1, by: 2) {
                switch info[at].string {
                case "entries-added": added = info[at + 1].int.map(Int.init)
                case "length": length = info[at + 1].int.map(Int.init) ?? 0
                case "recorded-first-entry-id": first = info[at + 1].string ?? first
                default: break
                }
            }
        }

        func trimmed(after cursor: String, passed: Int?) -> Bool {
            guard let added, let passed, CampaignDriver.streamID(first, isAfter: cursor) else { return false }
            return added - length > passed
        }

        /// The entries ever added up to the cursor after reading `read` more (nil when not known).
        func passed(after passed: Int?, gap: Bool, read: Int) -> Int? {
            guard added != nil, let passed else { return nil }
            return (gap ? (added! - length) : passed) + read
        }
    }

    /// Compares stream ids (`<ms>-<seq>`) as numbers.
    static func streamID(_ id: String, isAfter other: String) -> Bool {
        func parts(_ id: String) -> (UInt64, UInt64) {
            let halves = id.split(separator: "-", maxSplits: 1)
            return (halves.first.flatMap { UInt64($0) } ?? 0, halves.count > 1 ? UInt64(halves[1]) ?? 0 : 0)
        }
        return parts(id) > parts(other)
    }

    /// Where a terminal outcome is counted: delivered, dropped, failed, other; nil for one that is not terminal.
    static func slot(_ outcome: String) -> Int? {
        switch ResultEntry.Outcome(rawValue: outcome) {
        case .delivered?: 0
        case .tokenDropped?, .channelDropped?: 1
        case .failed?, .rejected?: 2
        case let other? where other.isTerminal: 3
        default: nil
        }
    }

    /// The device as rendering takes it, with the job id that names the campaign.
    static func renderDevice(_ device: Device, campaign: String, envelope: [String: JSONValue] = [:]) -> RenderDevice {
        RenderDevice(app: device.id.app, token: device.id.token,
                     subscription: device.attributes.subscription.flatMap { JSONValue(parsing: Array($0.utf8)) },
                     environment: device.attributes.environment.flatMap(ServiceEnvironment.init(rawValue:)),
                     locale: device.attributes.locale, id: Campaign.jobID(campaign: campaign, platform: device.id.platform, token: device.id.token),
                     envelope: envelope)
    }
}

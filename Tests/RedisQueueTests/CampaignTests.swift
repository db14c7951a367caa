import Foundation
import Testing
import DeviceRegistry
import HeraldTestSupport
import HeraldProviders
import ProviderKit
import PushCore
@testable import RedisQueue

/// Campaigns against a real Redis, key-checked: a topic's active devices become one job each over three shards,
/// a step cut short or raced neither skips nor repeats a device, pause, resume and cancel, and creating by id
/// (through `herald campaigns`' store and through `<p>:campaigns:new`) is idempotent and refuses bad documents.
@Suite struct CampaignTests {
    static let day: Int64 = 86_400_000
    static let notification = #"{"title": "Goal", "body": "2:1", "localized": {"de": {"title": "Tor"}}}"#

    struct World {
        let registry: DeviceRegistry
        let campaigns: Campaigns
        let clock: ManualClock
        let shards: QueueShards

        /// A driver whose queue is never full (no worker takes from it here) unless a test says so.
        func driver(chunk: Int) -> CampaignDriver {
            let driver = CampaignDriver(campaigns: campaigns, providers: heraldProviders, chunk: chunk)
            driver.maxQueued = .max
            return driver
        }

        /// Every job on every shard's queues, parsed.
        func queued() throws -> [JSONValue] {
            var out: [JSONValue] = []
            for shard in shards.shards {
                for queue in shard.queues {
                    for item in try registry.redis.command(["LRANGE", queue, "0", "-1"]).array ?? [] {
                        if let bytes = item.bytes, let job = JSONValue(parsing: bytes) { out.append(job) }
                    }
                }
            }
            return out
        }
    }

    func world(_ keys: QueueKeys = TestRedis.keys(#function), shards count: Int = 3, url: RedisURL = TestRedis.url) throws -> World {
        let clock = ManualClock()
        let shards = try QueueShards(basePrefix: keys.prefix, prefixes: QueueShards.defaultPrefixes(prefix: keys.prefix, count: count))
        let redis = try TestRedis.blocking(url)
        return World(registry: DeviceRegistry(redis: redis, shards: shards) { clock.wallMillis },
                     campaigns: Campaigns(redis: redis, shards: shards) { clock.wallMillis }, clock: clock, shards: shards)
    }

    static func document(id: String, audience: String = #"{"topic": "scores"}"#, extra: String = "") -> [UInt8] {
        Array(#"{"id": "\#(id)", "app": "shop", "audience": \#(audience), "notification": \#(notification)\#(extra)}"#.utf8)
    }

    /// Registers `count` devices of every platform that renders from a token alone, subscribed to `topic`.
    func register(_ world: World, _ count: Int, topic: String, tokenPrefix: String, owner: String? = nil) throws -> [DeviceID] {
        let platforms = heraldProviders.map { $0.platform }.filter { !$0.traits.carriesSubscription }
        var ids: [DeviceID] = []
        for index in 0..<count {
            let platform = platforms[index % platforms.count]
            let token = String(format: "%@%08x", tokenPrefix, index)
            let id = DeviceID(app: "shop", platform: platform, token: token)
            try world.registry.register(id, DeviceAttributes(owner: owner, topics: [topic], locale: index % 2 == 0 ? "de" : nil))
            ids.append(id)
        }
        return ids
    }

    /// Runs passes until one moves nothing; fails after `limit` passes.
    @discardableResult
    func drain(_ driver: CampaignDriver, limit: Int = 1000) throws -> Int {
        var passes = 0
        while try driver.pass().more {
            passes += 1
            guard passes < limit else { Issue.record("the driver never finished"); break }
        }
        return passes
    }

    @Test func aTopicCampaignPushesOneJobPerActiveDeviceOverEveryShardAndEnds() throws {
        let world = try world()
        let stale = try register(world, 40, topic: "scores", tokenPrefix: "aa")
        world.clock.advance(milliseconds: 31 * Self.day)
        let active = try register(world, 600, topic: "scores", tokenPrefix: "bb")
        let removed = try register(world, 30, topic: "scores", tokenPrefix: "cc")
        _ = try register(world, 50, topic: "news", tokenPrefix: "dd")
        for id in removed { try world.registry.unregister(id) }
        #expect(try world.registry.sweep().madeStale == stale.count)

        #expect(try world.campaigns.create(Campaign.parse(Self.document(id: "goal-1"))))
        let passes = try drain(world.driver(chunk: 64))
        #expect(passes > 600 / 64 / 3, "a chunk at a time")

        let jobs = try world.queued()
        let ids = jobs.compactMap { job -> String? in if case .string(let id)? = job["id"] { id } else { nil } }
        let expected = Set(active.map { Campaign.jobID(campaign: "goal-1", platform: $0.platform, token: $0.token) })
        #expect(ids.count == active.count && Set(ids) == expected, "one job per active device, no other")
        #expect(ids.allSatisfy { Campaign.campaignID(ofJob: $0) == "goal-1" })
        // Each job is in its device's shard, so its result entry and idempotency key are where the device is.
        for shard in world.shards.shards {
            for item in try world.registry.redis.command(["LRANGE", shard.queues[0], "0", "-1"]).array ?? [] {
                let job = try #require(item.bytes.flatMap { JSONValue(parsing: $0) })
                guard case .string(let token)? = job["token"] ?? job["to"] ?? job["message"]?["token"] else { continue }
                #expect(DeviceRegistry.shard(ofToken: token, count: 3) == shard.index)
            }
        }
        let status = try #require(try world.campaigns.status("goal-1"))
        #expect(status.state == .done && status.audience == active.count + stale.count)
        #expect(status.sent == active.count && status.skipped == stale.count && status.unrendered == 0)
        #expect(status.json["waiting"] as? Int == 0 && status.finishedAt == world.clock.wallMillis)
        #expect(try world.campaigns.open().isEmpty)
        #expect(try drain(world.driver(chunk: 64)) == 0, "a finished campaign pushes nothing more")
    }

    @Test func aUserCampaignReachesEveryDeviceOfThatOwnerOnly() throws {
        let world = try world()
        let mine = try register(world, 7, topic: "x", tokenPrefix: "ee", owner: "u1")
        _ = try register(world, 5, topic: "x", tokenPrefix: "ff", owner: "u10")
        try world.campaigns.create(Campaign.parse(Self.document(id: "hello", audience: #"{"user": "u1"}"#)))
        try drain(world.driver(chunk: 2))
        let ids = try world.queued().compactMap { job -> String? in if case .string(let id)? = job["id"] { id } else { nil } }
        #expect(Set(ids) == Set(mine.map { Campaign.jobID(campaign: "hello", platform: $0.platform, token: $0.token) }) && ids.count == mine.count)
    }

    @Test func aStepCutShortIsRedoneAndARacedOneIsPushedOnce() throws {
        let world = try world(shards: 1)
        let devices = try register(world, 100, topic: "scores", tokenPrefix: "ab")
        try world.campaigns.create(Campaign.parse(Self.document(id: "race")))
        let driver = world.driver(chunk: 30), rival = world.driver(chunk: 30)

        // Dies between reading its chunk and the step: nothing was pushed, and the chunk is read again.
        struct Killed: Error {}
        driver.beforeStep = { throw Killed() }
        #expect(throws: Killed.self) { try driver.advance("race", shard: 0) }
        #expect(try world.queued().isEmpty && world.campaigns.status("race")?.sent == 0)

        // Another driver takes the same chunk first: this one's step is refused and pushes nothing.
        driver.beforeStep = { _ = try rival.advance("race", shard: 0) }
        #expect(try driver.advance("race", shard: 0) == nil)
        #expect(try world.queued().count == 30)
        driver.beforeStep = nil

        try drain(driver)
        let ids = try world.queued().compactMap { job -> String? in if case .string(let id)? = job["id"] { id } else { nil } }
        #expect(ids.count == devices.count && Set(ids).count == devices.count)
        #expect(try world.campaigns.status("race")?.sent == devices.count)
    }

    @Test func pauseStopsTheFanOutResumeGoesOnAndCancelCountsTheDevicesNeverSent() throws {
        let world = try world(shards: 1)
        _ = try register(world, 90, topic: "scores", tokenPrefix: "ac")
        try world.campaigns.create(Campaign.parse(Self.document(id: "ctl")))
        let driver = world.driver(chunk: 20)
        #expect(try driver.advance("ctl", shard: 0) == 20)
        #expect(try world.campaigns.control("ctl", .pause)?.state == .paused)
        #expect(try driver.pass().pushed == 0)
        #expect(try world.campaigns.control("ctl", .resume)?.state == .running)
        #expect(try driver.advance("ctl", shard: 0) == 20)
        let cancelled = try #require(try world.campaigns.control("ctl", .cancel))
        #expect(cancelled.state == .cancelled && cancelled.sent == 40 && cancelled.cancelled == 50)
        #expect(try driver.pass().pushed == 0 && world.queued().count == 40)
        #expect(try world.campaigns.control("ctl", .resume)?.state == .cancelled, "a cancelled campaign stays cancelled")
        #expect(try world.campaigns.control("nope", .pause) == nil)
    }

    @Test func aControlCutShortShowsItsShardsMixedAndRunningItAgainFinishesIt() throws {
        let world = try world()
        try world.campaigns.create(Campaign.parse(Self.document(id: "mixed")))
        // What a pause that reached only the first shard leaves.
        _ = try world.registry.redis.command(["HSET", world.campaigns.keys[0].campaign("mixed"), "state", "paused"])
        let status = try #require(try world.campaigns.status("mixed"))
        #expect(status.state == .paused && status.json["shard_states"] as? [String: Int] == ["paused": 1, "running": 2], "\(status.json)")
        #expect(try world.campaigns.control("mixed", .pause)?.json["shard_states"] as? [String: Int] == ["paused": 3])
    }

    @Test func creatingTwiceKeepsTheFirstAndTheRedisWayCreatesOrRefusesWithoutLosingADocument() throws {
        let world = try world()
        #expect(try world.campaigns.create(Campaign.parse(Self.document(id: "once"))))
        #expect(try !world.campaigns.create(Campaign.parse(Self.document(id: "once"))))
        let taken = #expect(throws: DeviceError.self, "another document under a taken id is refused, not dropped") {
            try world.campaigns.create(Campaign.parse(Self.document(id: "once", audience: #"{"topic": "other"}"#)))
        }
        #expect(taken?.code == "id_taken")
        #expect(try world.campaigns.status("once")?.audienceNames == ["scores"])

        let base = world.campaigns.keys[0]
        _ = try world.registry.redis.command(["LPUSH", base.newCampaigns, String(decoding: Self.document(id: "viaredis"), as: UTF8.self)])
        _ = try world.registry.redis.command(["LPUSH", base.newCampaigns, #"{"id": "bad", "app": "shop"}"#])
        _ = try world.registry.redis.command(["LPUSH", base.newCampaigns, String(decoding: Self.document(id: "viaredis"), as: UTF8.self)])
        _ = try world.registry.redis.command(["LPUSH", base.newCampaigns,
                                              String(decoding: Self.document(id: "viaredis", audience: #"{"user": "u1"}"#), as: UTF8.self)])
        _ = try world.registry.redis.command(["LPUSH", base.newCampaigns,
                                              #"{"id": "typo", "app": "shpo", "audience": {"topic": "t"}, "notification": {"title": "x"}}"#])
        let driver = world.driver(chunk: 10)
        driver.apps = ["shop"]
        let pass = try driver.takeNew()
        #expect(pass.taken == 2 && pass.refused == 3)
        #expect(try world.campaigns.status("typo") == nil, "an app not configured is refused")
        #expect(try world.registry.redis.command(["LLEN", base.newCampaigns]).int == 0)
        #expect(try world.campaigns.status("viaredis")?.state == .running && world.campaigns.status("viaredis")?.audienceKind == "topic")
        let refused = try world.registry.redis.command(["LRANGE", base.refusedCampaigns, "0", "-1"]).array ?? []
        #expect(refused.compactMap { $0.bytes.flatMap { JSONValue(parsing: $0)?["error"] } } == [.string("bad_app"), .string("id_taken"), .string("bad_audience")])
    }


    @Test func aDocumentThatIsNotUTF8IsRefusedOnceWithItsBytesKept() throws {
        let world = try world(shards: 1)
        let redis = world.registry.redis
        let shard = world.campaigns.keys[0]
        let bytes: [UInt8] = Array(#"{"id": "x"#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8)
        _ = try redis.command([Array("LPUSH".utf8), Array(shard.newCampaigns.utf8), bytes])
        #expect(try world.driver(chunk: 10).takeNew().refused == 1 && world.driver(chunk: 10).takeNew().refused == 0)
        #expect(try redis.command(["LLEN", shard.newCampaigns]).int == 0 && redis.command(["LLEN", shard.refusedCampaigns]).int == 1)
        let refusal = try #require(try redis.command(["LINDEX", shard.refusedCampaigns, "0"]).bytes.flatMap { JSONValue(parsing: $0) })
        #expect(refusal["document_base64"] == .string(Data(bytes).base64EncodedString()) && refusal["document"] == nil, "\(refusal)")
    }

    @Test func terminalOutcomesInTheResultsStreamsAreCountedOnceOntoTheirCampaign() throws {
        let world = try world(shards: 2)
        let devices = try register(world, 40, topic: "scores", tokenPrefix: "ad")
        try world.campaigns.create(Campaign.parse(Self.document(id: "count")))
        let driver = world.driver(chunk: 100)
        try drain(driver)
        let redis = world.registry.redis
        let outcomes = ["delivered", "token_dropped", "failed", "duplicate"]
        for (index, device) in devices.enumerated() {
            let results = world.shards.shards[DeviceRegistry.shard(ofToken: device.token, count: 2)].keys.results
            let id = Campaign.jobID(campaign: "count", platform: device.platform, token: device.token)
            _ = try redis.command(["XADD", results, "*", "id", id, "outcome", "retrying"])
            _ = try redis.command(["XADD", results, "*", "id", id, "outcome", outcomes[index % 4]])
            _ = try redis.command(["XADD", results, "*", "id", "order-\(index)", "outcome", "delivered"])
            _ = try redis.command(["XADD", results, "*", "id", "other/\(device.platform.rawValue)/x", "outcome", "delivered"])
            // A producer's own id of the campaign's shape, without the reserved marker: not the campaign's.
            _ = try redis.command(["XADD", results, "*", "id", "count/\(device.platform.rawValue)/\(device.token)", "outcome", "delivered"])
        }
        driver.tallyBatch = 7
        try drain(driver)
        try drain(world.driver(chunk: 100))
        let status = try #require(try world.campaigns.status("count"))
        #expect(status.delivered == 10 && status.dropped == 10 && status.failed == 10 && status.otherOutcomes == 10, "\(status)")
        #expect(status.json["in_flight"] as? Int == 0)
        #expect(try redis.command(["EXISTS", world.campaigns.keys[0].campaign("other")]).int == 0, "no hash for an id that is no campaign")

        // A day after the campaign was done its outcomes are no longer looked for, and an idle scheduler writes
        // nothing however the results grow; the next campaign's create starts the counting at the stream's end.
        world.clock.advance(milliseconds: CampaignScripts.tallyWindowMs + 1)
        let late = world.shards.shards[1].keys.results
        let tallied = try redis.command(["HGETALL", world.campaigns.keys[1].campaignTally])
        _ = try redis.command(["XADD", late, "*", "id", Campaign.jobID(campaign: "count", platform: devices[0].platform, token: "after"),
                               "outcome", "delivered"])
        _ = try redis.command(["XADD", late, "*", "id", Campaign.jobID(campaign: "next", platform: devices[0].platform, token: "before"),
                               "outcome", "delivered"])
        #expect(try driver.pass() == CampaignDriver.Pass() && redis.command(["HGETALL", world.campaigns.keys[1].campaignTally]) == tallied)
        #expect(try world.campaigns.status("count")?.delivered == 10)
        let end = try #require(try redis.command(["XREVRANGE", late, "+", "-", "COUNT", "1"]).array?.first?.array?.first?.string)
        try world.campaigns.create(Campaign.parse(Self.document(id: "next", audience: #"{"topic": "nobody"}"#)))
        #expect(try redis.command(["HGET", world.campaigns.keys[1].campaignTally, "results"]).string == end)
        try drain(driver)
        #expect(try world.campaigns.status("next")?.delivered == 0, "an outcome from before the campaign is not its")
        world.clock.advance(milliseconds: -(CampaignScripts.tallyWindowMs + 1))

        // A late entry is counted once; a tally from a cursor another driver moved since writes nothing.
        let results = world.shards.shards[0].keys.results
        _ = try redis.command(["XADD", results, "*", "id", Campaign.jobID(campaign: "count", platform: devices[0].platform, token: "late"),
                               "outcome", "delivered"])
        #expect(try world.driver(chunk: 100).tally(shard: 0) == 1 && driver.tally(shard: 0) == 0)
        let shard = world.campaigns.keys[0]
        let stale = try redis.evalScript(CampaignScripts.tally, keys: [bytes(shard.campaignTally), bytes(shard.campaign("count"))],
                                         args: ["0-0", "9999999999999-0", "0", "", "5", "0", "0", "0"].map(bytes))
        #expect(stale.int == -2)
        #expect(try world.campaigns.status("count")?.delivered == 11)
    }


    @Test func outcomesTrimmedBeforeTheyWereCountedMarkTheOpenCampaignUncounted() throws {
        let world = try world(shards: 1)
        let redis = world.registry.redis
        let results = world.shards.shards[0].keys.results
        try world.campaigns.create(Campaign.parse(Self.document(id: "short", audience: #"{"topic": "nobody"}"#)))
        try world.campaigns.create(Campaign.parse(Self.document(id: "open")))
        _ = try world.campaigns.control("open", .pause)
        let driver = world.driver(chunk: 10)
        let outcome = { (token: String) in
            _ = try redis.command(["XADD", results, "*", "id", Campaign.jobID(campaign: "short", platform: .fcm, token: token), "outcome", "delivered"])
        }
        try outcome("a")
        try drain(driver)
        #expect(try world.campaigns.status("short")?.delivered == 1 && world.campaigns.status("open")?.json["uncounted"] as? Bool == false)
        for token in ["b", "c", "d"] { try outcome(token) }
        _ = try redis.command(["XTRIM", results, "MAXLEN", "1"])
        try drain(driver)
        let status = try #require(try world.campaigns.status("open"))
        #expect(status.json["uncounted"] as? Bool == true, "\(status.json)")
        #expect(try world.campaigns.status("short")?.delivered == 2, "what was left is counted")
        try outcome("e")
        try drain(driver)
        #expect(try world.campaigns.status("short")?.delivered == 3 && world.campaigns.status("short")?.json["uncounted"] as? Bool == true)
    }

    @Test func aCampaignPausedLongerThanTheTallyWindowIsNoLongerCountedUntilResumed() throws {
        let world = try world(shards: 1)
        let redis = world.registry.redis
        let results = world.shards.shards[0].keys.results
        let tally = world.campaigns.keys[0].campaignTally
        _ = try register(world, 3, topic: "scores", tokenPrefix: "c0")
        try world.campaigns.create(Campaign.parse(Self.document(id: "held")))
        _ = try world.campaigns.control("held", .pause)
        let outcome = { _ = try redis.command(["XADD", results, "*", "id", Campaign.jobID(campaign: "held", platform: .fcm, token: "t"), "outcome", "delivered"]) }
        let driver = world.driver(chunk: 10)
        try outcome()
        try drain(driver)
        #expect(try world.campaigns.status("held")?.delivered == 1, "counted within the window after the pause")

        world.clock.advance(milliseconds: CampaignScripts.tallyWindowMs + 1)
        try outcome()
        let before = try redis.command(["HGETALL", tally])
        #expect(try driver.pass() == CampaignDriver.Pass() && redis.command(["HGETALL", tally]) == before, "nothing read, nothing written")
        #expect(try world.campaigns.status("held")?.delivered == 1)
        // Another campaign created now starts at the stream's end, not behind the paused one's backlog.
        try world.campaigns.create(Campaign.parse(Self.document(id: "fresh", audience: #"{"topic": "nobody"}"#)))
        let end = try redis.command(["XREVRANGE", results, "+", "-", "COUNT", "1"]).array?.first?.array?.first?.string
        #expect(try redis.command(["HGET", tally, "results"]).string == end)

        // Resumed: counted again.
        _ = try world.campaigns.control("held", .resume)
        try outcome()
        try drain(driver)
        #expect(try world.campaigns.status("held")?.delivered == 2)
        // A campaign that runs without pushing (its queue full) keeps the counting on half a window ahead.
        try world.campaigns.create(Campaign.parse(Self.document(id: "blocked")))
        world.clock.advance(milliseconds: CampaignScripts.tallyWindowMs * 2)
        let blocked = world.driver(chunk: 10)
        blocked.maxQueued = 0
        _ = try blocked.pass()
        let until = try redis.command(["HGET", tally, "until"]).string.flatMap { Int64($0) } ?? 0
        #expect(until >= world.clock.wallMillis + CampaignScripts.tallyWindowMs / 2)
    }

    @Test func aSchedulerThatSawNoCampaignOpenSkipsNoOutcomeOfOneCreatedSince() throws {
        let world = try world(shards: 1)
        let redis = world.registry.redis
        let results = world.shards.shards[0].keys.results
        _ = try redis.command(["XADD", results, "*", "id", Campaign.jobID(campaign: "raced", platform: .apns, token: "backlog"), "outcome", "delivered"])
        let stale = world.driver(chunk: 100)
        #expect(try stale.tally(shard: 0) == 0, "idle: nothing open, no window")
        // Another scheduler creates a campaign and a worker writes an outcome of it while this one still acts on
        // its read of no campaign open.
        try world.campaigns.create(Campaign.parse(Self.document(id: "raced", audience: #"{"topic": "nobody"}"#)))
        _ = try redis.command(["XADD", results, "*", "id", Campaign.jobID(campaign: "raced", platform: .apns, token: "t"), "outcome", "delivered"])
        #expect(try stale.tally(shard: 0, open: []) == 0)
        try drain(world.driver(chunk: 100))
        #expect(try world.campaigns.status("raced")?.delivered == 1, "counted once, the backlog before it not at all")
    }

    @Test func aPacedCampaignSendsAtItsRateAndFinishWithinDerivesTheRateFromTheAudience() throws {
        let world = try world(shards: 1)
        _ = try register(world, 300, topic: "scores", tokenPrefix: "ae")
        try world.campaigns.create(Campaign.parse(Self.document(id: "capped", extra: #", "rate_per_second": 100"#)))
        let driver = world.driver(chunk: 200)
        #expect(try driver.advance("capped", shard: 0) == nil, "nothing before its time")
        world.clock.advance(milliseconds: 250)
        #expect(try driver.advance("capped", shard: 0) == 25)
        #expect(try driver.advance("capped", shard: 0) == nil)
        world.clock.advance(milliseconds: 1000)
        #expect(try driver.advance("capped", shard: 0) == 100)
        // Idle for a minute: one chunk at most, no burst of the minute's worth.
        world.clock.advance(milliseconds: 60_000)
        #expect(try driver.advance("capped", shard: 0) == 175, "the rest, at most a chunk")
        #expect(try world.campaigns.status("capped")?.state == .done)

        // 300 devices in 60 s: 5 a second.
        try world.campaigns.create(Campaign.parse(Self.document(id: "within", extra: #", "finish_within": 60"#)))
        let status = try #require(try world.campaigns.status("within"))
        #expect(status.ratePerSecond == 5 && status.estimatedEndAt == status.createdAt + 60_000, "\(status.json)")
        world.clock.advance(milliseconds: 2000)
        #expect(try driver.advance("within", shard: 0) == 10)
        // A pass over a paced campaign does not spin: it says when the next chunk is due (a second at most).
        world.clock.advance(milliseconds: 400)
        let pass = try driver.pass()
        #expect(pass.pushed == 2 && !pass.more && pass.nextDueMs == 1000, "\(pass)")
    }

    /// The rate follows what is left over the time left: a shard held back 20 s (Redis restarting, say) catches up
    /// evenly, at most a chunk at once, and still reads its last device at the deadline rather than 20 s late; past
    /// the deadline only `rate_per_second` paces what is left.
    @Test func aPacedCampaignHeldBackStillFinishesAtItsDeadline() throws {
        let world = try world(shards: 1)
        _ = try register(world, 300, topic: "scores", tokenPrefix: "ag")
        try world.campaigns.create(Campaign.parse(Self.document(id: "held", extra: #", "finish_within": 60"#)))
        let created = world.clock.wallMillis
        let driver = world.driver(chunk: 50)
        var pushed = 0, biggest = 0, doneAt: Int64?
        for second in 1...70 {
            world.clock.advance(milliseconds: 1000)
            if (20..<40).contains(second) { continue }
            let pushedNow = try driver.advance("held", shard: 0) ?? 0
            pushed += pushedNow
            biggest = max(biggest, pushedNow)
            if second == 40 {
                let status = try #require(try world.campaigns.status("held"))
                #expect(status.ratePerSecond > 5 && abs(status.estimatedEndAt - (created + 60_000)) <= 1000, "\(status.json)")
            }
            if doneAt == nil, try world.campaigns.status("held")?.state == .done { doneAt = world.clock.wallMillis - created }
        }
        #expect(pushed == 300 && biggest <= 50)
        #expect(doneAt.map { (59_000...60_000).contains($0) } == true, "done \(doneAt ?? -1) ms after it was created")

        _ = try register(world, 300, topic: "late", tokenPrefix: "ah")
        try world.campaigns.create(Campaign.parse(Self.document(id: "late", audience: #"{"topic": "late"}"#, extra: #", "finish_within": 10"#)))
        world.clock.advance(milliseconds: 30_000)
        #expect(try driver.advance("late", shard: 0) == 50 && driver.advance("late", shard: 0) == 50, "past its deadline, unpaced")
    }

    @Test func pacingTooSlowForAnIntervalIsRefusedAndTheSlowestTakenNeitherTrapsTheDriverNorTheStatus() throws {
        for extra in [#", "rate_per_second": 1e-15"#, #", "rate_per_second": 5e-324"#, #", "rate_per_second": 0.0009"#,
                      #", "finish_within": 1e-300"#, #", "finish_within": 0.5"#, #", "finish_by": 1e-300"#,
                      #", "finish_within": 60, "finish_by": 2000000000"#] {
            let refused = #expect(throws: DeviceError.self, "\(extra)") { try Campaign.parse(Self.document(id: "slow", extra: extra)) }
            #expect(refused?.code == "bad_pacing")
        }
        let world = try world()
        _ = try register(world, 6, topic: "scores", tokenPrefix: "af")
        try world.campaigns.create(Campaign.parse(Self.document(id: "slowest", extra: #", "rate_per_second": 0.001, "finish_by": 32503680000"#)))
        let pass = try world.driver(chunk: 500).pass()
        #expect(pass.pushed == 0 && !pass.more && pass.nextDueMs == 1000, "\(pass)")
        let status = try #require(try world.campaigns.status("slowest"))
        #expect(status.ratePerSecond > 0 && status.estimatedEndAt > status.createdAt, "\(status.json)")
    }

    /// A paused campaign reads nothing: its status has no rate and no estimated end (which would move with the
    /// clock) until it is resumed.
    @Test func aPausedCampaignReportsNoRateNorEstimatedEndUntilResumed() throws {
        let world = try world()
        _ = try register(world, 30, topic: "scores", tokenPrefix: "ag")
        try world.campaigns.create(Campaign.parse(Self.document(id: "resting", extra: #", "rate_per_second": 3"#)))
        let running = try #require(try world.campaigns.status("resting"))
        #expect(running.ratePerSecond == 3 && running.json["rate_per_second"] as? Int == 3 && running.json["estimated_end_at"] != nil, "\(running.json)")
        _ = try world.campaigns.control("resting", .pause)
        for _ in 0..<2 {
            let paused = try #require(try world.campaigns.status("resting"))
            #expect(paused.state == .paused && paused.ratePerSecond == 0 && paused.estimatedEndAt == 0, "\(paused.json)")
            #expect(paused.json["rate_per_second"] == nil && paused.json["estimated_end_at"] == nil && paused.waiting == 30, "\(paused.json)")
            world.clock.advance(milliseconds: 60_000)
        }
        _ = try world.campaigns.control("resting", .resume)
        let resumed = try #require(try world.campaigns.status("resting"))
        #expect(resumed.ratePerSecond == 3 && resumed.estimatedEndAt > world.clock.wallMillis, "\(resumed.json)")
    }

    @Test func theSchedulerSleepsTenMillisecondsAtLeastUnlessCampaignsHaveMoreToPush() {
        var pass = CampaignDriver.Pass()
        #expect(pass.sleepMilliseconds(otherwise: 0) == 10, "a receipt due now does not make the loop spin")
        #expect(pass.sleepMilliseconds(otherwise: 1000) == 1000)
        pass.nextDueMs = 250
        #expect(pass.sleepMilliseconds(otherwise: 1000) == 250 && pass.sleepMilliseconds(otherwise: 0) == 10)
        pass.more = true
        #expect(pass.sleepMilliseconds(otherwise: 1000) == nil, "an unpaced campaign's next chunk at once")
    }

    @Test func aCampaignWithABrokenKeyStopsItselfOnlyAndADocumentRedisRefusesIsMovedToRefused() throws {
        for id in ["x:sent", "a{b}", "b}", "{c"] {
            let refused = #expect(throws: DeviceError.self, "\(id)") { try Campaign.parse(Self.document(id: id)) }
            #expect(refused?.code == "bad_id")
        }
        let world = try world(shards: 1)
        let redis = world.registry.redis
        let shard = world.campaigns.keys[0]
        _ = try register(world, 4, topic: "scores", tokenPrefix: "b0")
        try world.campaigns.create(Campaign.parse(Self.document(id: "broken")))
        try world.campaigns.create(Campaign.parse(Self.document(id: "fine")))
        _ = try redis.command(["SET", shard.campaignSent("broken"), "not a set"])
        let pass = try world.driver(chunk: 100).pass()
        #expect(try pass.pushed == 4 && world.campaigns.status("fine")?.state == .done, "the other campaign goes on: \(pass)")

        _ = try redis.command(["SET", shard.campaign("clash"), "not a hash"])
        _ = try redis.command(["LPUSH", shard.newCampaigns, String(decoding: Self.document(id: "clash"), as: UTF8.self)])
        #expect(try world.driver(chunk: 100).takeNew().refused == 1)
        #expect(try redis.command(["LLEN", shard.newCampaigns]).int == 0, "not retried forever")
        let refusal = try #require(try redis.command(["LINDEX", shard.refusedCampaigns, "0"]).bytes.flatMap { JSONValue(parsing: $0) })
        #expect(refusal["error"] == .string("redis_error"), "\(refusal)")
    }

    @Test func anAppCampaignSendsEveryActiveDeviceOfEveryPlatformOnceOverEveryShard() throws {
        let world = try world()
        let stale = try register(world, 30, topic: "a", tokenPrefix: "af")
        world.clock.advance(milliseconds: 31 * Self.day)
        // Enough per list that ZSCAN pages (a hash table, not a listpack), and some devices of another app.
        let active = try register(world, 3000, topic: "b", tokenPrefix: "ba") + register(world, 20, topic: "c", tokenPrefix: "bc", owner: "u")
        try world.registry.register(DeviceID(app: "elsewhere", platform: active[0].platform, token: "x1"), DeviceAttributes())
        #expect(try world.registry.sweep().madeStale == stale.count)
        try world.campaigns.create(Campaign.parse(Self.document(id: "everyone", audience: #"{"app": "shop"}"#)))
        #expect(try world.campaigns.status("everyone")?.audience == active.count, "active devices only, counted by ZCARD")
        let driver = world.driver(chunk: 40)
        // Killed between a read and its step once: the chunk is read again, nothing pushed twice.
        struct Killed: Error {}
        driver.beforeStep = { throw Killed() }
        #expect(throws: Killed.self) { try driver.advance("everyone", shard: 1) }
        driver.beforeStep = nil
        #expect(try driver.advance("everyone", shard: 1) ?? 0 < 100, "a page, not the whole list")
        try drain(driver)
        let ids = try world.queued().compactMap { job -> String? in if case .string(let id)? = job["id"] { id } else { nil } }
        #expect(ids.count == active.count && Set(ids) == Set(active.map { Campaign.jobID(campaign: "everyone", platform: $0.platform, token: $0.token) }))
        let status = try #require(try world.campaigns.status("everyone"))
        #expect(status.state == .done && status.sent == active.count && status.skipped == 0, "\(status.json)")
        for shard in world.campaigns.keys {
            #expect(try world.registry.redis.command(["EXISTS", shard.campaignSent("everyone")]).int == 0, "the sent set goes with the campaign")
        }
    }

    @Test func anAppCampaignCutByARedisRestartStillSendsEveryDeviceOnce() throws {
        let server = try RedisServer(appendOnly: true)
        defer { server.stop() }
        let keys = TestRedis.keys(#function)
        let before = try world(keys, shards: 1, url: server.redisURL)
        // 600 a platform: hash-table sets, read by ZSCAN a chunk at a time.
        let devices = try register(before, 3000, topic: "t", tokenPrefix: "e0")
        try before.campaigns.create(Campaign.parse(Self.document(id: "restart", audience: #"{"app": "shop"}"#)))
        let driver = before.driver(chunk: 100)
        for _ in 0..<8 { _ = try driver.advance("restart", shard: 0) }
        // A new process: a new hash seed, so the saved ZSCAN cursor names other places in the sets.
        server.crash()
        try server.start()
        let after = try world(keys, shards: 1, url: server.redisURL)
        try drain(after.driver(chunk: 100))
        let ids = try after.queued().compactMap { job -> String? in if case .string(let id)? = job["id"] { id } else { nil } }
        #expect(ids.count == devices.count && Set(ids) == Set(devices.map { Campaign.jobID(campaign: "restart", platform: $0.platform, token: $0.token) }),
                "\(ids.count) jobs, \(Set(ids).count) devices of \(devices.count)")
        let status = try #require(try after.campaigns.status("restart"))
        #expect(status.state == .done && status.sent == devices.count, "\(status.json)")
    }

    @Test func aDeviceAnAppScanNamesTwiceIsSentOnce() throws {
        let world = try world(shards: 1)
        let devices = try register(world, 6, topic: "t", tokenPrefix: "ca")
        try world.campaigns.create(Campaign.parse(Self.document(id: "twice", audience: #"{"app": "shop"}"#)))
        let shard = world.campaigns.keys[0]
        let job = Array(#"{"id":"x"}"#.utf8)
        let member = Array("\(devices[0].platform.rawValue)\n\(devices[0].token)".utf8)
        func step(_ from: String, _ to: String) throws -> Int64? {
            try world.registry.redis.evalScript(
                CampaignScripts.step, keys: [shard.campaign("twice"), world.shards.shards[0].queues[0], shard.campaigns, shard.campaignSent("twice"), shard.campaignTally,
                                           world.shards.shards[0].keys.results].map(bytes),
                args: [from, to, "0", "0", "0", "1", "", "1"].map(bytes).reduce(into: [bytes("twice")]) { $0.append($1) } + [member, [], job]).int
        }
        #expect(try step("", "0:5") == 1)
        #expect(try step("0:5", "0:9") == 0, "the same device again: in the sent set")
        #expect(try world.campaigns.status("twice")?.repeated == 1 && world.queued().count == 1)
        let cancelled = try #require(try world.campaigns.control("twice", .cancel))
        #expect(cancelled.cancelled == devices.count - 1, "the audience less what was read: \(cancelled.json)")
    }


    @Test func aDeviceInTwoOfTheTopicsIsSentOnce() throws {
        let world = try world()
        let platforms = heraldProviders.map { $0.platform }.filter { !$0.traits.carriesSubscription }
        var expected: Set<String> = []
        for index in 0..<300 {
            let id = DeviceID(app: "shop", platform: platforms[index % platforms.count], token: String(format: "da%08x", index))
            // A third in scores, a third in news, a third in both; and some in neither.
            let topics = [["scores"], ["news"], ["scores", "news"], ["weather"]][index % 4]
            try world.registry.register(id, DeviceAttributes(topics: topics))
            if topics != ["weather"] { expected.insert(Campaign.jobID(campaign: "both", platform: id.platform, token: id.token)) }
        }
        try world.campaigns.create(Campaign.parse(Self.document(id: "both", audience: #"{"topics": ["scores", "news"]}"#)))
        #expect(try world.campaigns.status("both")?.audience == 300, "counted once per topic: 150 + 150")
        let driver = world.driver(chunk: 16)
        struct Killed: Error {}
        driver.beforeStep = { throw Killed() }
        #expect(throws: Killed.self) { try driver.advance("both", shard: 2) }
        driver.beforeStep = nil
        try drain(driver)
        let ids = try world.queued().compactMap { job -> String? in if case .string(let id)? = job["id"] { id } else { nil } }
        #expect(ids.count == expected.count && Set(ids) == expected)
        let status = try #require(try world.campaigns.status("both"))
        #expect(status.state == .done && status.sent == 225 && status.repeated == 75, "\(status.json)")
        #expect((status.json["audience"] as? [String: Any])?["topics"] as? [String] == ["scores", "news"])
    }


    @Test func aTopicsCampaignsRepeatedDevicesAreNotWaitingNorCancelled() throws {
        let world = try world(shards: 1)
        let platforms = heraldProviders.map { $0.platform }.filter { !$0.traits.carriesSubscription }
        for index in 0..<200 {
            let id = DeviceID(app: "shop", platform: platforms[index % platforms.count], token: String(format: "db%08x", index))
            try world.registry.register(id, DeviceAttributes(topics: index % 2 == 0 ? ["scores", "news"] : ["scores"]))
        }
        try world.campaigns.create(Campaign.parse(Self.document(id: "some", audience: #"{"topics": ["scores", "news"]}"#,
                                                                extra: #", "rate_per_second": 1"#)))
        // Scores' 200 in four chunks, then 50 of news' 100, every one already sent; 1 a second, a chunk per advance.
        let driver = world.driver(chunk: 50)
        for pushed in [50, 50, 50, 50, 0] {
            world.clock.advance(milliseconds: 1_000_000)
            #expect(try driver.advance("some", shard: 0) == pushed)
        }
        let status = try #require(try world.campaigns.status("some"))
        #expect(status.audience == 300 && status.repeated == 50 && status.json["waiting"] as? Int == 50, "\(status.json)")
        #expect(status.estimatedEndAt == world.clock.wallMillis + 50 * 1000, "50 left at 1 a second: \(status.json)")
        #expect(try world.campaigns.control("some", .cancel)?.cancelled == 50)
    }

    @Test func theSentSetHoldsAHashPerDeviceAndExpiresUnlessTheCampaignMoves() throws {
        let world = try world(shards: 1)
        let redis = world.registry.redis
        let sent = world.campaigns.keys[0].campaignSent("hashed")
        let long = String(repeating: "t", count: 300)
        let devices = try (0..<4).map { index in
            let id = DeviceID(app: "shop", platform: .fcm, token: "\(long)\(index)")
            try world.registry.register(id, DeviceAttributes(topics: ["scores", "news"]))
            return id
        }
        try world.campaigns.create(Campaign.parse(Self.document(id: "hashed", audience: #"{"topics": ["scores", "news"]}"#)))
        #expect(try world.driver(chunk: 10).advance("hashed", shard: 0) == 4)
        let members = (try redis.command(["SMEMBERS", sent]).array ?? []).compactMap(\.string)
        #expect(members.count == 4 && members.allSatisfy { $0.count == 40 && $0.allSatisfy(\.isHexDigit) }, "\(members)")
        let hash = try redis.command(["EVAL", "return redis.sha1hex(ARGV[1])", "0", "fcm\n\(devices[0].token)"]).string
        #expect(hash.map(Set(members).contains) == true, "the SHA-1 of <platform>\\n<token>")
        let ttl = { try redis.command(["PTTL", sent]).int ?? -1 }
        #expect(try ttl() > CampaignScripts.sentTTLMs - 60_000 && ttl() <= CampaignScripts.sentTTLMs)
        _ = try redis.command(["PEXPIRE", sent, "1000000"])
        _ = try world.campaigns.control("hashed", .pause)
        #expect(try ttl() > CampaignScripts.sentTTLMs - 60_000, "a pause sets it again")
        _ = try world.campaigns.control("hashed", .resume)
        #expect(try world.driver(chunk: 10).advance("hashed", shard: 0) == 0, "news names the same four: each found by its hash")
    }

    @Test func aDeviceItsProviderCannotRenderForEndsRejectedWithTheCampaignsJobID() throws {
        let world = try world(shards: 1)
        let sendable = try register(world, 3, topic: "scores", tokenPrefix: "fa")
        // A Web Push device registered without its subscription: nothing to encrypt for.
        let bare = DeviceID(app: "shop", platform: .webpush, token: "https://push.example.com/bare")
        try world.registry.register(bare, DeviceAttributes(topics: ["scores"]))
        try world.campaigns.create(Campaign.parse(Self.document(id: "bare")))
        let driver = world.driver(chunk: 10)
        try drain(driver)
        #expect(try world.queued().count == sendable.count)
        let entries = try world.registry.redis.command(["XRANGE", world.shards.shards[0].keys.results, "-", "+"]).array ?? []
        let fields = entries.map { entry in
            let list = (entry.array?.last?.array ?? []).compactMap(\.string)
            return Dictionary(uniqueKeysWithValues: stride(from: 0, to: list.count - 1, by: 2).map { (list[$0], list[$0 + 1]) })
        }
        #expect(fields.count == 1 && fields.first?["id"] == Campaign.jobID(campaign: "bare", platform: .webpush, token: bare.token))
        #expect(fields.first?["outcome"] == "rejected" && fields.first?["platform"] == "webpush" && fields.first?["reason"]?.hasPrefix("missing_address") == true,
                "\(fields)")
        let status = try #require(try world.campaigns.status("bare"))
        #expect(status.unrendered == 1 && status.failed == 1 && status.sent == 3, "\(status.json)")
        let ttl = try world.registry.redis.command(["PTTL", world.campaigns.keys[0].campaign("bare")]).int ?? -1
        #expect(ttl > CampaignScripts.finishedTTLMs - 60_000 && ttl <= CampaignScripts.finishedTTLMs, "a done campaign's hash expires")
        #expect(status.json["in_flight"] as? Int == 3, "the unrendered device's failure is not one of the sent jobs': \(status.json)")
    }


    @Test func aCampaignWaitsWhileItsQueueIsFullSoPauseAndCancelTakeEffectWithinABoundedBacklog() throws {
        let world = try world(shards: 1)
        _ = try register(world, 100, topic: "scores", tokenPrefix: "fb")
        try world.campaigns.create(Campaign.parse(Self.document(id: "backlog")))
        let driver = world.driver(chunk: 10)
        driver.maxQueued = 25
        try drain(driver)
        #expect(try world.queued().count == 30, "three chunks, then the queue is full")
        let pass = try driver.pass()
        #expect(pass.pushed == 0 && !pass.more && pass.nextDueMs == 100)
        // A worker takes some: the campaign goes on.
        let queue = world.shards.shards[0].queues[0]
        _ = try world.registry.redis.command(["RPOP", queue, "20"])
        try drain(driver)
        #expect(try world.campaigns.status("backlog")?.sent == 50)
        let cancelled = try #require(try world.campaigns.control("backlog", .cancel))
        #expect(cancelled.cancelled == 50 && cancelled.sent == 50)
        for shard in world.campaigns.keys {
            #expect(try world.registry.redis.command(["PTTL", shard.campaign("backlog")]).int ?? -1 > CampaignScripts.finishedTTLMs - 60_000,
                    "a cancelled campaign's hashes expire")
        }
    }

    @Test func aBadDocumentIsRefusedWithTheMemberItNames() throws {
        func code(_ text: String) -> String? {
            do { _ = try Campaign.parse(Array(text.utf8)); return nil } catch { return error.code }
        }
        #expect(code(#"{"id": "a", "app": "shop", "audience": {"topic": "t"}, "notification": {"title": "x"}, "tokens": []}"#) == "unknown_member")
        #expect(code(#"{"id": "a/b", "app": "shop", "audience": {"topic": "t"}, "notification": {"title": "x"}}"#) == "bad_id")
        #expect(code(#"{"id": "a", "app": "shop", "audience": {"app": "other"}, "notification": {"title": "x"}}"#) == "bad_audience")
        #expect(code(#"{"id": "a", "app": "shop", "audience": {"app": "shop"}, "notification": {"title": "x"}}"#) == nil)
        #expect(code(#"{"id": "a", "app": "shop", "audience": {"topics": ["t"]}, "notification": {"title": "x"}}"#) == "bad_audience")
        #expect(code(#"{"id": "a", "app": "shop", "audience": {"topics": ["t", "t"]}, "notification": {"title": "x"}}"#) == "bad_audience")
        #expect(code(#"{"id": "a", "app": "shop", "audience": {"topics": ["t", "u"]}, "notification": {"title": "x"}}"#) == nil)
        #expect(code(#"{"id": "a", "app": "shop", "audience": {"topic": "t", "user": "u"}, "notification": {"title": "x"}}"#) == "bad_audience")
        #expect(code(#"{"id": "a", "app": "shop", "audience": {"topic": "t"}, "notification": {"titel": "x"}}"#) == "bad_notification")
        #expect(code(#"{"id": "a", "app": "shop", "audience": {"topic": "t"}, "notification": {"title": "x"}}"#) == nil)
        #expect(throws: DeviceError.self) {
            try world(shards: 1).campaigns.create(Campaign.parse(Self.document(id: "q", extra: #", "queue": "nope""#)))
        }
    }
}

/// `openStatuses` on a real Redis Cluster over three shards: its two pipelines span the shards' slots (the cluster
/// client sends each command to its slot's node), and a hash of the wrong type still costs its campaign only.
@Suite struct CampaignsClusterTests {
    @Test func openStatusesReadsEveryShardOnACluster() throws {
        let fixture = try SharedCluster.get()
        let redis = try BlockingRedisCluster(seeds: [try RedisURL(parsing: fixture.seedURL)])
        defer { redis.close() }
        let base = "cmp\(UInt32.random(in: 0...UInt32.max))"
        let shards = try QueueShards(basePrefix: base, prefixes: QueueShards.defaultPrefixes(prefix: base, count: 3))
        let campaigns = Campaigns(redis: redis, shards: shards)
        let masters = try Set(campaigns.keys.map { try #require(try fixture.ownerPort(ofSlot: ClusterSlot.of($0.campaigns))) })
        #expect(masters.count >= 2, "the shards on several masters: \(masters)")
        for id in ["one", "two", "three"] { try campaigns.create(Campaign.parse(CampaignTests.document(id: id))) }
        var read = try campaigns.openStatuses()
        #expect(read.statuses.map(\.id) == ["one", "three", "two"] && read.keyErrors.isEmpty, "\(read.keyErrors)")
        #expect(read.statuses == (try ["one", "three", "two"].compactMap { try campaigns.status($0) }), "as read one by one")
        #expect(read.statuses.allSatisfy { $0.shardStates == [.running: 3] })

        let hash = campaigns.keys[2].campaign("two")
        _ = try redis.command(["DEL", hash])
        _ = try redis.command(["SET", hash, "not a hash"])
        read = try campaigns.openStatuses()
        #expect(read.statuses.map(\.id) == ["one", "three"] && read.keyErrors.map(\.key) == [hash], "\(read.keyErrors)")
    }
}

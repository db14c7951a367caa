import Foundation
import Testing
import DeviceRegistry
import HeraldTestSupport
import ProviderKit
import PushCore
import RedisQueue

/// Local time and quiet hours (docs/campaigns.md): each device's job carries `deliver_at` at the campaign's local
/// time in the device's zone (the app's default zone for a device without one), moved past quiet hours unless the
/// notification is time-sensitive or the campaign ignores them, and the status counts the jobs still waiting.
/// The clock starts at 2027-01-15T08:00:00Z.
extension CampaignTests {
    /// Registers one FCM device per zone (nil: none) on topic `local`; its token is `<prefix><index>`.
    private func registerZones(_ world: World, _ zones: [String?], prefix: String) throws -> [DeviceID] {
        try zones.enumerated().map { index, zone in
            let id = DeviceID(app: "shop", platform: .fcm, token: "\(prefix)\(index)")
            try world.registry.register(id, DeviceAttributes(topics: ["local"], timeZone: zone))
            return id
        }
    }

    /// Each queued job's `deliver_at` (nil: none) by its device's token.
    private func deliverAts(_ world: World) throws -> [String: Int64?] {
        var out: [String: Int64?] = [:]
        for job in try world.queued() {
            guard case .string(let token)? = job["message"]?["token"] else { continue }
            if case .number(let text)? = job["deliver_at"] { out[token] = .some(Int64(text)) } else { out[token] = .some(nil) }
        }
        return out
    }

    private static func localDocument(id: String, _ extra: String, notification: String = CampaignTests.notification) -> [UInt8] {
        Array(#"{"id": "\#(id)", "app": "shop", "audience": {"topic": "local"}, "notification": \#(notification)\#(extra)}"#.utf8)
    }

    @Test func deliverAtLocalIsThatWallTimeInEachDevicesZoneAndTheAppsZoneForOneWithout() throws {
        let world = try world()
        _ = try registerZones(world, ["Europe/Berlin", "America/New_York", nil, "Pacific/Chatham"], prefix: "z")
        try world.campaigns.create(Campaign.parse(Self.localDocument(id: "nine", #", "deliver_at_local": "09:00""#)))
        let driver = world.driver(chunk: 10)
        driver.localTime = ["shop": .init(timeZone: "Asia/Kolkata")]
        try drain(driver)
        #expect(try deliverAts(world) == [
            "z0": 1_800_000_000_000,  // 09:00 in Berlin is now: at or after creation, so today
            "z1": 1_800_021_600_000,  // 09:00 EST, today
            "z2": 1_800_070_200_000,  // the app's Asia/Kolkata: 13:30 there, so tomorrow's 09:00
            "z3": 1_800_040_500_000,  // Chatham (+13:45): 21:45 there, tomorrow's 09:00
        ])
        // Without the app's zone, a device without one is at UTC.
        let utc = try self.world(TestRedis.keys(#function + "-utc"))
        _ = try registerZones(utc, [nil], prefix: "u")
        try utc.campaigns.create(Campaign.parse(Self.localDocument(id: "nine", #", "deliver_at_local": "09:00""#)))
        try drain(utc.driver(chunk: 10))
        #expect(try deliverAts(utc) == ["u0": 1_800_003_600_000])
    }

    @Test func aLocalTimeInADSTGapMovesForwardAndAnAmbiguousOneTakesTheFirst() throws {
        let world = try world()
        _ = try registerZones(world, ["Europe/Berlin", "America/New_York"], prefix: "g")
        // 02:30 does not exist on 2027-03-28 in Berlin (nor on 2027-03-14 in New York): 03:30 summer time.
        try world.campaigns.create(Campaign.parse(Self.localDocument(id: "gap", #", "deliver_at_local": "2027-03-28T02:30""#)))
        try drain(world.driver(chunk: 10))
        let gap = try deliverAts(world)
        #expect(gap["g0"] == 1_806_197_400_000)
        // New York's own gap is two weeks earlier: 2027-03-28T02:30 there is an ordinary EDT time.
        #expect(gap["g1"] == 1_806_215_400_000)

        let fall = try self.world(TestRedis.keys(#function + "-fall"))
        _ = try registerZones(fall, ["Europe/Berlin", "America/New_York"], prefix: "f")
        try fall.campaigns.create(Campaign.parse(Self.localDocument(id: "twice", #", "deliver_at_local": "2027-10-31T02:30""#)))
        try fall.campaigns.create(Campaign.parse(Array(#"{"id": "ny-gap", "app": "shop", "audience": {"topic": "local"}, "notification": {"title": "x"}, "deliver_at_local": "2027-03-14T02:30"}"#.utf8)))
        try drain(fall.driver(chunk: 10))
        var byCampaign: [String: [String: Int64]] = [:]
        for job in try fall.queued() {
            guard case .string(let id)? = job["id"], case .string(let token)? = job["message"]?["token"], case .number(let at)? = job["deliver_at"] else { continue }
            byCampaign[Campaign.campaignID(ofJob: id)!, default: [:]][token] = Int64(at)
        }
        #expect(byCampaign["twice"]?["f0"] == 1_824_942_600_000, "02:30 happens twice in Berlin that night: the first, summer time's")
        #expect(byCampaign["ny-gap"]?["f1"] == 1_805_009_400_000, "02:30 does not exist in New York that night: 03:30 EDT")
    }

    @Test func quietHoursAcrossMidnightHoldANonUrgentDeviceUntilTheirEndInItsZone() throws {
        let world = try world()
        _ = try registerZones(world, [nil, "Europe/Berlin", "America/New_York"], prefix: "q")
        world.clock.advance(milliseconds: 15 * 3_600_000 + 1_800_000)  // 23:30 UTC, 00:30 in Berlin, 18:30 in New York
        let driver = world.driver(chunk: 10)
        driver.localTime = ["shop": .init(quietHours: QuietHours(start: "22:00", end: "08:00", members: 2))]
        try world.campaigns.create(Campaign.parse(Self.localDocument(id: "quiet", "")))
        try drain(driver)
        #expect(try deliverAts(world) == [
            "q0": 1_800_086_400_000,  // 08:00 UTC tomorrow
            "q1": 1_800_082_800_000,  // 08:00 in Berlin, today there
            "q2": nil,                // 18:30 in New York: not quiet, sent at once
        ])
        let status = try #require(try world.campaigns.status("quiet"))
        #expect(status.json["waiting_local"] as? Int == 2 && status.json["waiting_local_until"] as? Int64 == 1_800_086_400_000)
        world.clock.advance(milliseconds: 1_800_082_800_000 - world.clock.wallMillis)
        #expect(try world.campaigns.status("quiet")?.waitingLocal == 1, "Berlin's window ended")
        world.clock.advance(milliseconds: 1_800_086_400_000 - world.clock.wallMillis)
        let after = try #require(try world.campaigns.status("quiet"))
        #expect(after.waitingLocal == 0 && after.json["waiting_local_until"] == nil)
    }

    @Test func aTimeSensitiveCampaignOrOneIgnoringQuietHoursIsNotHeldAndACampaignsOwnWindowWins() throws {
        let world = try world()
        _ = try registerZones(world, [nil], prefix: "t")
        world.clock.advance(milliseconds: 15 * 3_600_000 + 1_800_000)  // 23:30 UTC
        let driver = world.driver(chunk: 10)
        driver.localTime = ["shop": .init(quietHours: QuietHours(start: "22:00", end: "08:00", members: 2))]
        try world.campaigns.create(Campaign.parse(Self.localDocument(id: "urgent", "", notification: #"{"title": "Now", "time_sensitive": true}"#)))
        try world.campaigns.create(Campaign.parse(Self.localDocument(id: "loud", #", "quiet_hours": false"#)))
        try world.campaigns.create(Campaign.parse(Self.localDocument(id: "own", #", "quiet_hours": {"start": "23:00", "end": "06:30"}"#)))
        // A local time inside the window waits for its end: 23:45 tonight is quiet until 08:00 tomorrow.
        try world.campaigns.create(Campaign.parse(Self.localDocument(id: "late", #", "deliver_at_local": "23:45", "expiration": 1800060000"#)))
        try drain(driver)
        var byCampaign: [String: JSONValue] = [:]
        for job in try world.queued() { if case .string(let id)? = job["id"] { byCampaign[Campaign.campaignID(ofJob: id)!] = job } }
        #expect(byCampaign.count == 4)
        #expect(byCampaign["urgent"]?["deliver_at"] == nil && byCampaign["loud"]?["deliver_at"] == nil)
        #expect(byCampaign["own"]?["deliver_at"] == .number("1800081000000"), "the campaign's window ends at 06:30")
        #expect(byCampaign["late"]?["deliver_at"] == .number("1800086400000"))
        // Its expiration comes before: the worker ends it failed `Expired`, never sent.
        #expect(byCampaign["late"]?["expiration"] == .number("1800060000"))
    }

    /// Jobs held ten days for their local time: the shard's outcomes are still counted when they come (not only for
    /// a day after the shard was done), and its hash outlives them by `finishedTTLMs`, done or cancelled.
    @Test func jobsHeldForTheirLocalTimeAreCountedWhenTheyEndAndTheirCampaignOutlivesThem() throws {
        let world = try world(shards: 1)
        let redis = world.registry.redis
        let shard = world.campaigns.keys[0]
        let devices = try registerZones(world, [nil, nil], prefix: "h")
        let due: Int64 = 1_800_867_600_000  // 2027-01-25T09:00Z, ten days and an hour ahead
        try world.campaigns.create(Campaign.parse(Self.localDocument(id: "held", #", "deliver_at_local": "2027-01-25T09:00""#)))
        try world.campaigns.create(Campaign.parse(Self.localDocument(id: "dropped", #", "deliver_at_local": "2027-01-25T09:00""#)))
        let driver = world.driver(chunk: 1)
        while try driver.advance("held", shard: 0) != nil {}
        #expect(try world.campaigns.status("held")?.state == .done)
        #expect(try driver.advance("dropped", shard: 0) == 1)
        #expect(try world.campaigns.control("dropped", .cancel)?.state == .cancelled)
        let now = world.clock.wallMillis
        let until = try #require(try redis.command(["HGET", shard.campaignTally, "until"]).string.flatMap { Int64($0) })
        #expect(until == due + CampaignScripts.tallyWindowMs, "counted for a window after the latest deliver_at")
        for id in ["held", "dropped"] {
            #expect(try redis.command(["HGET", shard.campaign(id), "due_max"]).string == String(due))
            let ttl = try #require(try redis.command(["PTTL", shard.campaign(id)]).int)
            #expect(ttl > due - now + CampaignScripts.finishedTTLMs - 60_000 && ttl <= due - now + CampaignScripts.finishedTTLMs, "\(id): \(ttl)")
        }
        // An hour after they were due (ten days after the shard was done) their outcomes are counted.
        world.clock.advance(milliseconds: due + 3_600_000 - now)
        let results = world.shards.shards[0].keys.results
        _ = try redis.command(["XADD", results, "*", "id", Campaign.jobID(campaign: "held", platform: .fcm, token: devices[0].token), "outcome", "delivered"])
        _ = try redis.command(["XADD", results, "*", "id", Campaign.jobID(campaign: "dropped", platform: .fcm, token: devices[0].token),
                               "outcome", "delivered"])
        #expect(try driver.tally(shard: 0) == 2)
        #expect(try world.campaigns.status("held")?.delivered == 1 && world.campaigns.status("dropped")?.delivered == 1)
    }

    /// A quiet window ending inside the hour a fall-back repeats (Berlin, 2027-10-31, 02:00 to 03:00 twice): in the
    /// hour's first pass it ends at the first 02:30, in its second at the second, never at a time already past.
    @Test func aQuietWindowEndingInTheRepeatedHourEndsAfterTheInstantChecked() throws {
        let berlin = LocalTime.calendar(try #require(LocalTime.zone("Europe/Berlin")))
        let quiet = try #require(QuietHours(start: "22:00", end: "02:30", members: 2))
        let midnight: Int64 = 1_824_940_800_000  // 2027-10-31T00:00Z: 02:00 summer time in Berlin
        let minute: Int64 = 60_000
        #expect(quiet.end(after: midnight + 15 * minute, in: berlin) == midnight + 30 * minute, "the first 02:15: the first 02:30")
        #expect(quiet.end(after: midnight + 75 * minute, in: berlin) == midnight + 90 * minute, "the second 02:15: the second 02:30")
        #expect(quiet.end(after: midnight - 3 * 60 * minute, in: berlin) == midnight + 30 * minute, "23:00 the evening before")
        #expect(quiet.end(after: midnight + 95 * minute, in: berlin) == nil, "02:35 winter time: past the window")
    }

    @Test func theMaxScheduleDaysCheckAddsADayWhenQuietHoursMayHoldTheJobs() throws {
        let now: Int64 = 1_800_000_000_000  // 2027-12-31T09:00 is 350 days and an hour ahead, 350 days 13 hours at UTC-12
        let dated = #", "deliver_at_local": "2027-12-31T09:00""#
        let quiet = try Campaign.parse(Self.localDocument(id: "quiet", dated))
        let own = try Campaign.parse(Self.localDocument(id: "own", dated + #", "quiet_hours": {"start": "22:00", "end": "08:00"}"#))
        let loud = try Campaign.parse(Self.localDocument(id: "loud", dated + #", "quiet_hours": false"#))
        let urgent = try Campaign.parse(Self.localDocument(id: "urgent", dated, notification: #"{"title": "Now", "time_sensitive": true}"#))
        for campaign in [quiet, own] {
            let refused = #expect(throws: DeviceError.self, "\(campaign.id)") { try campaign.check(apps: ["shop"], maxScheduleDays: 351, now: now) }
            #expect(refused?.code == "bad_deliver_at_local")
            #expect(throws: Never.self) { try campaign.check(apps: ["shop"], maxScheduleDays: 352, now: now) }
        }
        for campaign in [loud, urgent] {
            #expect(throws: Never.self, "\(campaign.id): no quiet hours apply") { try campaign.check(apps: ["shop"], maxScheduleDays: 351, now: now) }
            #expect(throws: DeviceError.self) { try campaign.check(apps: ["shop"], maxScheduleDays: 350, now: now) }
        }
    }

    @Test func badLocalTimeMembersAreRefusedWithTheirOwnCodes() throws {
        let cases: [(String, String)] = [
            (#""deliver_at_local": "9:00""#, "bad_deliver_at_local"), (#""deliver_at_local": "24:00""#, "bad_deliver_at_local"),
            (#""deliver_at_local": "2027-02-30T09:00""#, "bad_deliver_at_local"), (#""deliver_at_local": 900"#, "bad_deliver_at_local"),
            (#""deliver_at_local": "2027-03-01 09:00""#, "bad_deliver_at_local"), (#""deliver_at_local": "+9:00""#, "bad_deliver_at_local"),
            (#""deliver_at_local": "+027-03-01T09:00""#, "bad_deliver_at_local"),
            (#""quiet_hours": {"start": "22:00"}"#, "bad_quiet_hours"), (#""quiet_hours": {"start": "22:00", "end": "22:00"}"#, "bad_quiet_hours"),
            (#""quiet_hours": true"#, "bad_quiet_hours"), (#""quiet_hours": {"start": "22:00", "end": "08:00", "tz": "UTC"}"#, "bad_quiet_hours"),
            (#""expiration": -1"#, "bad_expiration"), (#""expiration": "soon""#, "bad_expiration"),
            (#""deliver_at_locale": "09:00""#, "unknown_member"),
        ]
        for (member, code) in cases {
            let refused = #expect(throws: DeviceError.self, "\(member)") { try Campaign.parse(Self.localDocument(id: "bad", ", " + member)) }
            #expect(refused?.code == code, "\(member)")
        }
        // With the workers' horizon: a date further ahead than worker.max_schedule_days wherever it is last reached.
        let dated = try Campaign.parse(Self.localDocument(id: "dated", #", "deliver_at_local": "2027-12-31T09:00""#))
        let now: Int64 = 1_800_000_000_000
        #expect(throws: Never.self) { try dated.check(apps: ["shop"], maxScheduleDays: 365, now: now) }
        let far = #expect(throws: DeviceError.self) { try dated.check(apps: ["shop"], maxScheduleDays: 300, now: now) }
        #expect(far?.code == "bad_deliver_at_local")
        let good = try Campaign.parse(Self.localDocument(id: "good", #", "deliver_at_local": "2028-02-29T07:05", "quiet_hours": {"start": "08:00", "end": "09:00"}"#))
        #expect(good.deliverAtLocal == .on(DateComponents(year: 2028, month: 2, day: 29), TimeOfDay("07:05")!))
        #expect(good.quietHours == .window(QuietHours(start: "08:00", end: "09:00", members: 2)!))
    }
}

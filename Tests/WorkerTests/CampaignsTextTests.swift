import DeviceRegistry
import Foundation
import HeraldProviders
import HeraldTestSupport
import RedisQueue
import Testing
@testable import Worker

/// The dashboard's campaign families, read from a real Redis as `herald dashboard` reads them
/// (`Campaigns.openStatuses`) and written by `CampaignStatus.write(open:to:)`.
@Suite struct CampaignsTextTests {
    static let notification = #"{"title": "Goal", "body": "2:1"}"#

    static func document(_ id: String, extra: String = "") throws -> Campaign {
        try Campaign.parse(Array(#"{"id": "\#(id)", "app": "shop", "audience": {"topic": "scores"}, "notification": \#(notification)\#(extra)}"#.utf8))
    }

    /// The page's samples, by their whole name-and-labels part.
    static func samples(_ statuses: [CampaignStatus]) -> [String: Double] {
        var out = PrometheusText()
        CampaignStatus.write(open: statuses, to: &out)
        var samples: [String: Double] = [:]
        for line in out.text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            samples[String(parts[0])] = Double(parts[1])
        }
        return samples
    }

    /// Redis's count of calls of `command` since the last `CONFIG RESETSTAT`.
    static func calls(_ redis: BlockingRedis, _ command: String) throws -> Int {
        let info = try redis.command(["INFO", "commandstats"]).string ?? ""
        guard let line = info.split(separator: "\r\n").first(where: { $0.hasPrefix("cmdstat_\(command):calls=") }) else { return 0 }
        return Int(line.dropFirst("cmdstat_\(command):calls=".count).prefix { $0.isNumber }) ?? 0
    }

    /// With no campaign the read is one ZRANGE per shard and writes nothing; the page has the two open states at 0
    /// and no per-campaign series.
    @Test func noCampaignCostsAZRangePerShardAndShowsZeroes() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let redis = try BlockingRedis(url: server.redisURL)
        let shards = try QueueShards(basePrefix: "herald", prefixes: QueueShards.defaultPrefixes(prefix: "herald", count: 3))
        _ = try redis.command(["CONFIG", "RESETSTAT"])
        let dirty = try redis.command(["INFO", "persistence"]).string ?? ""
        let open = try Campaigns(redis: redis, shards: shards).openStatuses()
        #expect(open.isEmpty)
        #expect(try Self.calls(redis, "zrange") == 3 && Self.calls(redis, "hgetall") == 0)
        let changes = { (info: String) in info.split(separator: "\r\n").first { $0.hasPrefix("rdb_changes_since_last_save:") } }
        #expect(changes(try redis.command(["INFO", "persistence"]).string ?? "") == changes(dirty), "nothing written")
        #expect(Self.samples(open) == [#"herald_campaigns{state="paused"}"#: 0, #"herald_campaigns{state="running"}"#: 0])
    }

    /// A paced campaign over three shards and a paused one: their states, every status count under its field's name,
    /// the pace and the estimated end; a chunk sent moves `sent` and `waiting`, and a cancelled one leaves the page.
    @Test func openCampaignsShowTheirStatusCountsPaceAndEnd() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let clock = ManualClock()
        let redis = try BlockingRedis(url: server.redisURL)
        let shards = try QueueShards(basePrefix: "herald", prefixes: QueueShards.defaultPrefixes(prefix: "herald", count: 3))
        let registry = DeviceRegistry(redis: redis, shards: shards) { clock.wallMillis }
        let campaigns = Campaigns(redis: redis, shards: shards) { clock.wallMillis }
        for index in 0..<60 {
            try registry.register(DeviceID(app: "shop", platform: .apns, token: String(format: "ab%08x", index)), DeviceAttributes(topics: ["scores"]))
        }
        try campaigns.create(Self.document("goal", extra: #", "rate_per_second": 30"#))
        try campaigns.create(Self.document("later"))
        _ = try campaigns.control("later", .pause)

        var samples = Self.samples(try campaigns.openStatuses())
        #expect(samples[#"herald_campaigns{state="running"}"#] == 1 && samples[#"herald_campaigns{state="paused"}"#] == 1)
        #expect(samples[#"herald_campaign_state{campaign="goal",state="running"}"#] == 1 && samples[#"herald_campaign_state{campaign="later",state="paused"}"#] == 1)
        #expect(samples.keys.filter { $0.hasPrefix("herald_campaign_state{") }.count == 2, "one state a campaign")
        #expect(samples[#"herald_campaign_devices{campaign="goal",app="shop",state="audience_size"}"#] == 60)
        #expect(samples[#"herald_campaign_devices{campaign="goal",app="shop",state="waiting"}"#] == 60)
        #expect(samples[#"herald_campaign_devices{campaign="goal",app="shop",state="sent"}"#] == 0)
        #expect(samples[#"herald_campaign_devices{campaign="later",app="shop",state="waiting"}"#] == 60)
        #expect(samples[#"herald_campaign_rate_per_second{campaign="goal"}"#] == 30)
        #expect(samples[#"herald_campaign_rate_per_second{campaign="later"}"#] == nil, "unpaced: no rate")
        // Each shard at 10 a second from creation: the slowest (a third of the 60 devices at least) ends 2 s on or later.
        let end = try #require(samples[#"herald_campaign_estimated_end_timestamp_seconds{campaign="goal"}"#])
        #expect(end == Double(try #require(try campaigns.status("goal")).estimatedEndAt) / 1000 && end >= Double(clock.wallMillis + 2_000) / 1000)
        #expect(samples[#"herald_campaign_uncounted{campaign="goal"}"#] == 0)

        // A second later each shard may read 10: every count the status has is on the page with its value.
        clock.advance(milliseconds: 1000)
        let driver = CampaignDriver(campaigns: campaigns, providers: heraldProviders, chunk: 100)
        driver.maxQueued = .max
        var pushed = 0
        for shard in 0..<3 { pushed += try driver.advance("goal", shard: shard) ?? 0 }
        let goal = try #require(try campaigns.status("goal"))
        #expect(pushed > 0 && goal.sent == pushed)
        samples = Self.samples(try campaigns.openStatuses())
        for (field, value) in goal.counts {
            #expect(samples[#"herald_campaign_devices{campaign="goal",app="shop",state="\#(field)"}"#] == Double(value), "\(field)")
        }
        #expect(samples[#"herald_campaign_devices{campaign="goal",app="shop",state="waiting"}"#] == Double(60 - pushed))
        #expect(samples[#"herald_campaign_devices{campaign="goal",app="shop",state="in_flight"}"#] == Double(pushed))

        _ = try campaigns.control("later", .cancel)
        samples = Self.samples(try campaigns.openStatuses())
        #expect(samples[#"herald_campaigns{state="paused"}"#] == 0)
        #expect(!samples.keys.contains { $0.contains(#"campaign="later""#) }, "a cancelled campaign leaves the page")
    }
}

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
        let read = try Campaigns(redis: redis, shards: shards).openStatuses()
        let open = read.statuses
        #expect(open.isEmpty && read.keyErrors.isEmpty)
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

        var samples = Self.samples(try campaigns.openStatuses().statuses)
        #expect(samples[#"herald_campaigns{state="running"}"#] == 1 && samples[#"herald_campaigns{state="paused"}"#] == 1)
        #expect(samples[#"herald_campaign_state{campaign="goal",state="running"}"#] == 1 && samples[#"herald_campaign_state{campaign="later",state="paused"}"#] == 1)
        #expect(samples.keys.filter { $0.hasPrefix("herald_campaign_state{") }.count == 2, "one state a campaign")
        #expect(samples[#"herald_campaign_devices{campaign="goal",app="shop",state="audience_size"}"#] == 60)
        #expect(samples[#"herald_campaign_devices{campaign="goal",app="shop",state="waiting"}"#] == 60)
        #expect(samples[#"herald_campaign_devices{campaign="goal",app="shop",state="sent"}"#] == 0)
        #expect(samples[#"herald_campaign_devices{campaign="later",app="shop",state="waiting"}"#] == 60)
        #expect(samples[#"herald_campaign_rate_per_second{campaign="goal",app="shop"}"#] == 30)
        #expect(samples[#"herald_campaign_rate_per_second{campaign="later",app="shop"}"#] == nil, "unpaced: no rate")
        // Each shard at 10 a second from creation: the slowest (a third of the 60 devices at least) ends 2 s on or later.
        let end = try #require(samples[#"herald_campaign_estimated_end_timestamp_seconds{campaign="goal",app="shop"}"#])
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
        samples = Self.samples(try campaigns.openStatuses().statuses)
        for (field, value) in goal.counts {
            #expect(samples[#"herald_campaign_devices{campaign="goal",app="shop",state="\#(field)"}"#] == Double(value), "\(field)")
        }
        #expect(samples[#"herald_campaign_devices{campaign="goal",app="shop",state="waiting"}"#] == Double(60 - pushed))
        #expect(samples[#"herald_campaign_devices{campaign="goal",app="shop",state="in_flight"}"#] == Double(pushed))

        _ = try campaigns.control("later", .cancel)
        samples = Self.samples(try campaigns.openStatuses().statuses)
        #expect(samples[#"herald_campaigns{state="paused"}"#] == 0)
        #expect(!samples.keys.contains { $0.contains(#"campaign="later""#) }, "a cancelled campaign leaves the page")
    }

    /// A client of `server` and `Campaigns` over three shards of prefix `herald` (`--prefix herald --shards 3`).
    static func campaigns(_ server: RedisServer) throws -> (BlockingRedis, Campaigns) {
        let redis = try BlockingRedis(url: server.redisURL)
        let shards = try QueueShards(basePrefix: "herald", prefixes: QueueShards.defaultPrefixes(prefix: "herald", count: 3))
        return (redis, Campaigns(redis: redis, shards: shards))
    }

    /// A campaign's hash of the wrong type in one shard, or a shard's `<p>:campaigns`, costs that campaign (or that
    /// shard's list) only: named in `keyErrors`, the others read. Two open campaigns over three shards cost one
    /// HGETALL each a shard, and a kept `CampaignDocuments` holds only the open ones.
    @Test func aWrongTypedCampaignKeyCostsItsCampaignOnly() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let (redis, campaigns) = try Self.campaigns(server)
        try campaigns.create(Self.document("fine"))
        try campaigns.create(Self.document("other"))
        let documents = CampaignDocuments()
        _ = try redis.command(["CONFIG", "RESETSTAT"])
        var read = try campaigns.openStatuses(documents: documents)
        #expect(read.statuses.map(\.id) == ["fine", "other"] && read.keyErrors.isEmpty && documents.count == 2)
        #expect(try Self.calls(redis, "zrange") == 3 && Self.calls(redis, "hgetall") == 6)
        let again = try campaigns.openStatuses(documents: documents)
        #expect(again.statuses == read.statuses, "the kept documents read as parsed ones")

        try campaigns.create(Self.document("broken"))
        let hash = campaigns.keys[1].campaign("broken")
        _ = try redis.command(["DEL", hash])
        _ = try redis.command(["SET", hash, "not a hash"])
        read = try campaigns.openStatuses(documents: documents)
        #expect(read.statuses.map(\.id) == ["fine", "other"], "\(read.statuses.map(\.id))")
        #expect(read.keyErrors.map(\.key) == [hash] && read.keyErrors.first?.message.hasPrefix("WRONGTYPE") == true, "\(read.keyErrors)")

        _ = try campaigns.control("other", .cancel)
        read = try campaigns.openStatuses(documents: documents)
        #expect(read.statuses.map(\.id) == ["fine"] && documents.count == 1, "only the open campaigns' documents are kept (broken's never parsed)")

        let list = campaigns.keys[2].campaigns
        _ = try redis.command(["DEL", list])
        _ = try redis.command(["SET", list, "not a sorted set"])
        read = try campaigns.openStatuses(documents: documents)
        #expect(read.statuses.map(\.id) == ["fine"], "the other shards still list it")
        #expect(Set(read.keyErrors.map(\.key)) == [hash, list], "\(read.keyErrors)")
    }

    /// `herald dashboard` with a campaign's hash of the wrong type: Redis still reads as up, the queue families and
    /// the other campaign are served, the key is named in `herald_redis_key_errors`; the page's `/api/status` poll
    /// reads no campaign; `herald campaigns list` lists the other, names the key and exits 1.
    @Test(.timeLimit(.minutes(2)))
    func theDashboardServesEverythingButAWrongTypedCampaign() throws {
        guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is not built") }
        let server = try RedisServer()
        defer { server.stop() }
        let (redis, campaigns) = try Self.campaigns(server)
        try campaigns.create(Self.document("fine"))
        try campaigns.create(Self.document("broken"))
        let hash = campaigns.keys[0].campaign("broken")
        _ = try redis.command(["DEL", hash])
        _ = try redis.command(["SET", hash, "not a hash"])
        let common = ["--redis", server.url, "--prefix", "herald", "--shards", "3"]

        let list = try HeraldRun.run(herald: herald, ["campaigns", "list"] + common)
        #expect(list.status == 1 && list.output.contains(#""id":"fine""#) && !list.output.contains(#""id":"broken""#), "\(list.output)")
        #expect(list.output.contains("herald campaigns: Redis key \"\(hash)\""), "\(list.output)")

        let port = freeLoopbackPort()
        let dashboard = try ChildProcess(name: "dashboard", executable: herald, arguments: ["dashboard"] + common + ["--listen", "127.0.0.1:\(port)"])
        defer { dashboard.stop() }
        var status: (status: Int, body: String)? = nil
        #expect(waitUntil(seconds: 20) { status = try? httpGet(port: port, "/api/status", timeoutSeconds: 2); return status != nil })
        #expect(status?.status == 200, "\(status?.body ?? "")")
        _ = try redis.command(["CONFIG", "RESETSTAT"])
        Thread.sleep(forTimeInterval: 0.6)
        status = try httpGet(port: port, "/api/status")
        // The registry's counts read a HGETALL of removals a shard; the campaigns would add one a shard and campaign.
        #expect(status?.status == 200)
        #expect(try Self.calls(redis, "hgetall") == 3, "the page's poll reads no campaign")
        let metrics = try httpGet(port: port, "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.body.contains("herald_redis_up 1"), "\(metrics.body)")
        #expect(metrics.body.contains(#"herald_queue_length{queue="herald:queue"} 0"#), "\(metrics.body)")
        #expect(metrics.body.contains(#"herald_redis_key_errors{key="\#(hash)"} 1"#), "\(metrics.body)")
        #expect(metrics.body.contains(#"herald_campaign_state{campaign="fine",state="running"} 1"#), "\(metrics.body)")
        #expect(!metrics.body.contains(#"campaign="broken""#), "\(metrics.body)")
        #expect(try Self.calls(redis, "hgetall") >= 3 + 5, "the scrape reads the campaigns")
    }
}

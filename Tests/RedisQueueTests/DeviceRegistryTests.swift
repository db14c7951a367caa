import Foundation
import HeraldTestSupport
import Testing
import DeviceRegistry
import ProviderKit
import PushCore
@testable import RedisQueue

/// The device registry's scripts against a real Redis, key-checked: registration and its events, owners and topics,
/// removal by a provider's answer (APNs' 410 timestamp rule included), and the sweeper on a manual clock.
@Suite struct DeviceRegistryTests {
    static let day: Int64 = 86_400_000

    private func registry(_ keys: QueueKeys = TestRedis.keys(#function), settings: Configuration.RegistrySettings = .init(),
                          shards: Int = 1) throws -> (DeviceRegistry, ManualClock, QueueKeys) {
        let clock = ManualClock()
        let queueShards = shards == 1 ? try QueueShards(single: keys)
            : try QueueShards(basePrefix: keys.prefix, prefixes: QueueShards.defaultPrefixes(prefix: keys.prefix, count: shards))
        let registry = DeviceRegistry(redis: try TestRedis.blocking(), shards: queueShards, settings: settings) { clock.wallMillis }
        return (registry, clock, keys)
    }

    private func events(_ registry: DeviceRegistry, shard: Int = 0) throws -> [[String: String]] {
        StreamEntry.entries(try registry.redis.command(["XRANGE", registry.shards[shard].events, "-", "+"]))
            .map { Dictionary($0.fields, uniquingKeysWith: { first, _ in first }) }
    }

    private let phone = DeviceID(app: "shop", platform: .fcm, token: "fcm:token-1")

    @Test func registeringTwiceRefreshesAndAnOwnerChangeMovesTheDevice() throws {
        let (registry, clock, _) = try registry()
        #expect(try registry.register(phone, DeviceAttributes(owner: "u1", topics: ["scores", "news"], locale: "de")) == "registered")
        clock.advance(milliseconds: 1000)
        #expect(try registry.register(phone, DeviceAttributes(owner: "u1", topics: ["scores"], locale: "de")) == "refreshed")
        var device = try #require(try registry.device(phone))
        #expect(device.state == .active && device.created == clock.wallMillis - 1000 && device.seen == clock.wallMillis)
        #expect(device.attributes.topics == ["scores"] && device.attributes.locale == "de")
        #expect(try registry.devices(app: "shop", topic: "news").isEmpty)
        #expect(try registry.devices(app: "shop", topic: "scores").map(\.id) == [phone])
        clock.advance(milliseconds: 1000)
        #expect(try registry.register(phone, DeviceAttributes(owner: "u2")) == "moved")
        #expect(try registry.devices(app: "shop", owner: "u1").isEmpty)
        #expect(try registry.devices(app: "shop", owner: "u2").map(\.id) == [phone])
        device = try #require(try registry.device(phone))
        #expect(device.attributes.topics.isEmpty)
        let kinds = try events(registry).map { $0["event"] ?? "" }
        #expect(kinds == ["registered", "refreshed", "moved"])
        #expect(try events(registry).last?["previous_owner"] == "u1")
        #expect(try events(registry).last?["owner"] == "u2")
    }

    @Test func anOwnerPrefixIsNotAnotherOwner() throws {
        let (registry, _, _) = try registry()
        try registry.register(phone, DeviceAttributes(owner: "u1"))
        let other = DeviceID(app: "shop", platform: .apns, token: "ab12")
        try registry.register(other, DeviceAttributes(owner: "u10"))
        #expect(try registry.devices(app: "shop", owner: "u1").map(\.id) == [phone])
        #expect(try registry.devices(app: "shop", owner: "u10").map(\.id) == [other])
    }

    @Test func unregisteringRemovesItOnceWithItsReason() throws {
        let (registry, _, _) = try registry()
        try registry.register(phone, DeviceAttributes(owner: "u1", topics: ["t"]))
        #expect(try registry.unregister(phone))
        #expect(try !registry.unregister(phone))
        let device = try #require(try registry.device(phone))
        #expect(device.state == .removed && device.reason == "unregistered")
        #expect(try registry.devices(app: "shop", owner: "u1").isEmpty && registry.devices(app: "shop", topic: "t").isEmpty)
        #expect(try events(registry).filter { $0["event"] == "removed" }.count == 1)
        let counts = try registry.counts()
        #expect(counts.devices == [DeviceRegistry.ListCount(app: "shop", platform: "fcm", active: 0, stale: 0, removed: 1)])
        #expect(counts.removals == [DeviceRegistry.Removal(app: "shop", platform: "fcm", reason: "unregistered", count: 1)])
        // Registered again: a new device (created anew), out of the removed set.
        #expect(try registry.register(phone, DeviceAttributes()) == "registered")
        #expect(try registry.counts().devices.first?.removed == 0)
    }

    private func completion(token: String, platform: String, app: String = "shop", dropped reason: String?, invalidSince: Int64? = nil) -> JobCompletion {
        let lease = Lease(id: "l", queueKey: "q", raw: [])
        var completion = JobCompletion(lease: lease)
        var entry = ResultEntry(id: "j", outcome: reason == nil ? .delivered : .tokenDropped, status: reason == nil ? 200 : 410,
                                token: token, app: app, attempt: 1, worker: "w")
        entry.platform = platform
        completion.result = entry
        if let reason {
            completion.droppedToken = DroppedToken(token: token, topic: "", environment: "", reason: reason, invalidSince: invalidSince,
                                                   platform: platform, app: app, hasEnvironments: false)
        }
        return completion
    }

    private func settle(_ registry: DeviceRegistry, _ batch: [JobCompletion], now: Int64) throws -> [[Int64]] {
        try RegistryUpdate.updates(for: batch, shards: registry.shards, now: now, eventsMax: 1000).map { update in
            try registry.redis.evalScript(RegistryScripts.settle, keys: update.keys, args: update.args).array?.compactMap(\.int) ?? []
        }
    }

    @Test func aDroppedTokenRemovesItsDeviceOnceAndADeliveryIsStamped() throws {
        let (registry, clock, _) = try registry()
        let gone = DeviceID(app: "shop", platform: .fcm, token: "fcm:gone")
        try registry.register(phone, DeviceAttributes())
        try registry.register(gone, DeviceAttributes(owner: "u9"))
        let batch = [completion(token: phone.token, platform: "fcm", dropped: nil), completion(token: gone.token, platform: "fcm", dropped: "UNREGISTERED"),
                     completion(token: "fcm:never-registered", platform: "fcm", dropped: "UNREGISTERED")]
        #expect(try settle(registry, batch, now: clock.wallMillis + 5) == [[1, 0]])
        // Sent again (a repeated batch): nothing more.
        #expect(try settle(registry, batch, now: clock.wallMillis + 6) == [[0, 0]])
        let removed = try #require(try registry.device(gone))
        #expect(removed.state == .removed && removed.reason == "UNREGISTERED" && removed.answer == "410 UNREGISTERED")
        #expect(try registry.device(phone)?.delivered == clock.wallMillis + 6)
        #expect(try registry.device(DeviceID(app: "shop", platform: .fcm, token: "fcm:never-registered")) == nil)
        #expect(try events(registry).filter { $0["event"] == "removed" }.map { $0["token"] } == ["fcm:gone"])
        #expect(try registry.devices(app: "shop", owner: "u9").isEmpty)
    }

    @Test func anAPNs410OlderThanTheLastRegistrationKeepsTheDevice() throws {
        let (registry, clock, _) = try registry()
        let iphone = DeviceID(app: "shop", platform: .apns, token: "aa11")
        try registry.register(iphone, DeviceAttributes(environment: "production"))
        let registeredAt = clock.wallMillis
        // Apple says the token was invalid since before the app registered it again: kept.
        #expect(try settle(registry, [completion(token: "aa11", platform: "apns", dropped: "Unregistered", invalidSince: registeredAt - 1)],
                           now: clock.wallMillis + 10) == [[0, 1]])
        #expect(try registry.device(iphone)?.state == .active)
        // Invalid since after it: removed.
        #expect(try settle(registry, [completion(token: "aa11", platform: "apns", dropped: "Unregistered", invalidSince: registeredAt + 1)],
                           now: clock.wallMillis + 20) == [[1, 0]])
        #expect(try registry.device(iphone)?.state == .removed)
    }

    @Test func theSweeperAgesDevicesAsConfiguredOnAManualManualClock() throws {
        var settings = Configuration.RegistrySettings()
        settings.staleAfterDays = 30
        settings.removeAfterDays = 270
        settings.removedRetentionDays = 10
        settings.platforms["webpush"] = .init(staleAfterDays: 7, removeAfterDays: 14)
        settings.sweepBatch = 2
        let (registry, clock, _) = try registry(settings: settings)
        let start = clock.wallMillis
        let fcm = (0..<3).map { DeviceID(app: "shop", platform: .fcm, token: "f\($0)") }
        let web = DeviceID(app: "shop", platform: .webpush, token: "https://push.example/w1")
        for id in fcm { try registry.register(id, DeviceAttributes(topics: ["t"])) }
        try registry.register(web, DeviceAttributes())
        clock.advance(milliseconds: start + 8 * Self.day - clock.wallMillis)
        #expect(try registry.sweep().madeStale == 1)
        #expect(try registry.device(web)?.state == .stale)
        // Stale devices stay in their topics (addressable), an audience reads only the active set.
        clock.advance(milliseconds: start + 29 * Self.day - clock.wallMillis)
        try registry.register(fcm[0], DeviceAttributes(topics: ["t"]))
        clock.advance(milliseconds: start + 31 * Self.day - clock.wallMillis)
        var report = try registry.sweep()
        #expect(report.madeStale == 2 && report.more)  // f1 and f2, the batch of 2 full
        #expect(report.removed == 1)  // web: more than its 14 days unseen
        #expect(try registry.device(web)?.reason == "unseen")
        #expect(try registry.device(fcm[0])?.state == .active)
        // Refreshing a stale device revives it.
        #expect(try registry.register(fcm[1], DeviceAttributes()) == "refreshed")
        #expect(try registry.device(fcm[1])?.state == .active)
        #expect(try events(registry).last?["was"] == "stale")
        clock.advance(milliseconds: start + 271 * Self.day - clock.wallMillis)
        report = try registry.sweep()
        // f2 never refreshed: removed after 270 days; f0 and f1 (refreshed later) only stale; web's record purged.
        #expect(report == { var r = DeviceRegistry.SweepReport(); r.madeStale = 2; r.removed = 1; r.purged = 1; r.more = true; return r }())
        #expect(try registry.device(fcm[2])?.state == .removed && registry.device(web) == nil)
        clock.advance(milliseconds: 11 * Self.day)
        report = try registry.sweep()
        #expect(report.purged == 1)
        #expect(try registry.device(fcm[2]) == nil)
        let removals = try registry.counts().removals
        #expect(removals.map(\.count).reduce(0, +) == 2 && removals.allSatisfy { $0.reason == "unseen" })
    }

    @Test func devicesSpreadOverShardsAndAreFoundInEach() throws {
        let (registry, _, _) = try registry(shards: 3)
        let ids = (0..<30).map { DeviceID(app: "shop", platform: .fcm, token: "tok\($0)") }
        for id in ids { try registry.register(id, DeviceAttributes(owner: "u", topics: ["all"])) }
        #expect(Set(try registry.devices(app: "shop", owner: "u").map(\.id)) == Set(ids))
        let used = Set(ids.map { DeviceRegistry.shard(ofToken: $0.token, count: 3) })
        #expect(used.count == 3)
        var seen: [DeviceID] = []
        var cursor: String? = ""
        while let at = cursor {
            let page = try registry.page(app: "shop", cursor: at, count: 7)
            seen += page.devices.map(\.id)
            cursor = page.next
        }
        #expect(seen.count == 30 && Set(seen) == Set(ids))
        #expect(try registry.counts().devices.first?.active == 30)
    }

    @Test func aRegistrationRefusesWhatItCannotKeep() throws {
        let id = DeviceID(app: "shop", platform: .fcm, token: "t")
        #expect(throws: DeviceError.self) { try DeviceAttributes.parse(["colour": "red"], for: id) }
        #expect(throws: DeviceError.self) { try DeviceAttributes.parse(["environment": "sandbox"], for: id) }
        #expect(throws: DeviceError.self) { try DeviceAttributes.parse(["time_zone": "Mars/Olympus"], for: id) }
        #expect(throws: DeviceError.self) { try DeviceAttributes.parse(["topics": Array(repeating: "x", count: 65).enumerated().map { "\($0.offset)" }], for: id) }
        #expect(throws: DeviceError.self) { try DeviceAttributes.parse(["owner": String(repeating: "o", count: 257)], for: id) }
        #expect(throws: DeviceError.self) { try DeviceAttributes.parse(["subscription": ["keys": ["p256dh": "a", "auth": "b"]]], for: id) }
        let parsed = try DeviceAttributes.parse(["owner": "u1", "topics": ["a", "a", "b"], "locale": "pt-BR", "time_zone": "Europe/Berlin"], for: id)
        #expect(parsed == DeviceAttributes(owner: "u1", topics: ["a", "b"], locale: "pt-BR", timeZone: "Europe/Berlin"))
        let web = DeviceID(app: "shop", platform: .webpush, token: "https://push.example/x")
        #expect(throws: DeviceError.self) { try DeviceAttributes.parse(["subscription": ["endpoint": "https://other", "keys": ["p256dh": "a", "auth": "b"]]], for: web) }
        #expect(throws: DeviceError.self) { try DeviceID.parse(app: "a:b", platform: "fcm", token: "t", platforms: Platform.allCases) }
        #expect(throws: DeviceError.self) { try DeviceID.parse(app: "a", platform: "fcm", token: "t t", platforms: Platform.allCases) }
    }

    @Test func aWebPushDeviceKeepsItsSubscription() throws {
        let (registry, _, _) = try registry()
        let web = try DeviceID.parse(app: "site", platform: "webpush", token: "https://push.example/abc", platforms: Platform.allCases)
        let attributes = try DeviceAttributes.parse(["subscription": ["endpoint": "https://push.example/abc", "keys": ["p256dh": "BKey", "auth": "sec"]]], for: web)
        try registry.register(web, attributes)
        let device = try #require(try registry.device(web))
        #expect(device.attributes.subscription == #"{"endpoint":"https://push.example/abc","keys":{"auth":"sec","p256dh":"BKey"}}"#)
    }
}

/// The registry on a real Redis Cluster over three shards: every script's keys are in one slot (the cluster refuses
/// anything else), devices spread over the masters, and reads, removals, sweeps and counts see every shard.
@Suite struct DeviceRegistryClusterTests {
    @Test func theRegistryWorksOverShardsOnACluster() throws {
        let fixture = try SharedCluster.get()
        let redis = try BlockingRedisCluster(seeds: [try RedisURL(parsing: fixture.seedURL)])
        defer { redis.close() }
        let base = "reg\(UInt32.random(in: 0...UInt32.max))"
        let shards = try QueueShards(basePrefix: base, prefixes: QueueShards.defaultPrefixes(prefix: base, count: 3))
            let clock = ManualClock()
        var settings = Configuration.RegistrySettings()
        settings.staleAfterDays = 1
        settings.removeAfterDays = 2
        let registry = DeviceRegistry(redis: redis, shards: shards, settings: settings) { clock.wallMillis }
        let ids = (0..<300).map { DeviceID(app: "shop", platform: $0 % 2 == 0 ? .fcm : .apns, token: "tok-\($0)") }
        let events = try registry.register(many: ids.map { ($0, DeviceAttributes(owner: "u\($0.token.count)", topics: ["all"])) }, chunk: 64)
        #expect(events.count == 300 && events.allSatisfy { $0 == "registered" })
        let slots = Set(registry.shards.map { ClusterSlot.of($0.events) })
        let masters = try Set(slots.map { try #require(try fixture.ownerPort(ofSlot: $0)) })
        #expect(slots.count == 3 && masters.count >= 2, "the shards' slots \(slots) on masters \(masters)")
        #expect(try registry.devices(app: "shop", topic: "all").count == 300)
        // A completion's removals and deliveries, each to its device's shard.
        var completions: [JobCompletion] = []
        for (index, id) in ids.prefix(30).enumerated() {
            var completion = JobCompletion(lease: Lease(id: "l\(index)", queueKey: "q", raw: []))
            var entry = ResultEntry(id: "j\(index)", outcome: index % 3 == 0 ? .tokenDropped : .delivered, status: index % 3 == 0 ? 410 : 200,
                                    token: id.token, app: "shop", attempt: 1, worker: "w")
            entry.platform = id.platform.rawValue
            completion.result = entry
            if index % 3 == 0 {
                completion.droppedToken = DroppedToken(token: id.token, topic: "", environment: "", reason: "Unregistered",
                                                       platform: id.platform.rawValue, app: "shop", hasEnvironments: false)
            }
            completions.append(completion)
        }
        let updates = RegistryUpdate.updates(for: completions, shards: registry.shards, now: clock.wallMillis, eventsMax: 1000)
        #expect(Set(updates.map(\.shard)).count == 3)
        for update in updates { _ = try redis.evalScript(RegistryScripts.settle, keys: update.keys, args: update.args) }
        #expect(try registry.device(ids[0])?.state == .removed && registry.device(ids[1])?.delivered == clock.wallMillis)
        clock.advance(milliseconds: 86_400_000 + 1)
        #expect(try registry.sweep().madeStale == 290)
        clock.advance(milliseconds: 86_400_000)
        #expect(try registry.sweep().removed == 290)
        let counts = try registry.counts()
        #expect(counts.devices.map(\.removed).reduce(0, +) == 300)
        #expect(counts.removals.map(\.count).reduce(0, +) == 300)
    }
}

/// The durable path: a device whose token a completion dropped is removed from the dropped-tokens stream by the
/// sweeper's follow step even when the worker's own call never came (killed between the two).
@Suite struct DroppedFollowTests {
    @Test func aDroppedTokenTheWorkersCallMissedIsRemovedFromTheStreamOnce() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue, jobs: [#"{"id":"j1","platform":"fcm","message":{"token":"fcm:gone"}}"#])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w1")
        let registry = DeviceRegistry(redis: redis, shards: try QueueShards(single: keys))
        let gone = DeviceID(app: "android", platform: .fcm, token: "fcm:gone")
        try registry.register(gone, DeviceAttributes())
        // The first step only finds where the stream ends: history from before is not the registry's.
        #expect(try registry.followDropped() == 0)
        let lease = try #require(try queue.claim(max: 1).first)
        var entry = ResultEntry(id: "j1", outcome: .tokenDropped, status: 404, token: gone.token, app: "android", attempt: 1, worker: "w1")
        entry.platform = "fcm"
        var completion = JobCompletion(lease: lease, result: entry)
        completion.droppedToken = DroppedToken(token: gone.token, topic: "", environment: "", reason: "UNREGISTERED", platform: "fcm", app: "android",
                                               hasEnvironments: false)
        #expect(try queue.complete([completion]).applied == 1)
        #expect(try registry.device(gone)?.state == .active)
        #expect(try registry.followDropped() == 1)
        #expect(try registry.device(gone)?.state == .removed && registry.device(gone)?.reason == "UNREGISTERED")
        // Followed again (another worker, or the same step repeated): nothing more, one removed event.
        #expect(try registry.followDropped() == 0)
        try redis.command(["SET", registry.shards[0].droppedCursor, "0-0"])
        #expect(try registry.followDropped() == 0)
        let events = try redis.command(["XRANGE", registry.shards[0].events, "-", "+"]).array ?? []
        #expect(events.filter { ($0.array?[1].array?.compactMap(\.string) ?? []).contains("removed") }.count == 1)
    }
}

extension DeviceRegistryTests {
    @Test func aLogoutIsARefreshAndAMoveOfAStaleDeviceSaysItWasStale() throws {
        var settings = Configuration.RegistrySettings()
        settings.staleAfterDays = 1
        settings.removeAfterDays = 10
        let (registry, clock, _) = try registry(settings: settings)
        try registry.register(phone, DeviceAttributes(owner: "u1"))
        #expect(try registry.register(phone, DeviceAttributes()) == "refreshed")
        #expect(try events(registry).last?["previous_owner"] == "u1")
        try registry.register(phone, DeviceAttributes(owner: "u1"))
        clock.advance(milliseconds: 2 * Self.day)
        try registry.sweep()
        #expect(try registry.register(phone, DeviceAttributes(owner: "u2")) == "moved")
        let last = try #require(try events(registry).last)
        #expect(last["previous_owner"] == "u1" && last["was"] == "stale" && last["owner"] == "u2")
    }

    @Test func aSubscriptionComesBackAsGivenThroughEveryRewrite() throws {
        var settings = Configuration.RegistrySettings()
        settings.staleAfterDays = 1
        let (registry, clock, _) = try registry(settings: settings)
        let web = DeviceID(app: "site", platform: .webpush, token: "https://push.example/e")
        let sub: [String: Any] = ["endpoint": "https://push.example/e", "expirationTime": NSNull(), "keys": ["p256dh": "BKey", "auth": "sec"], "extra": [Any]()]
        try registry.register(web, try DeviceAttributes.parse(["subscription": sub], for: web))
        let given = try #require(try registry.device(web)?.attributes.subscription)
        clock.advance(milliseconds: 2 * Self.day)
        try registry.sweep()  // the record rewritten by the sweep script (cjson)
        #expect(try registry.device(web)?.state == .stale && registry.device(web)?.attributes.subscription == given)
        #expect(given.contains(#""extra":[]"#) && given.contains(#""expirationTime":null"#))
    }
}

extension DeviceRegistryTests {
    @Test func aLookupByOwnerOrTopicNarrowedToAPlatformTakesItsLimitFromThatPlatform() throws {
        let (registry, _, _) = try registry()
        for n in 0..<5 { try registry.register(DeviceID(app: "shop", platform: .apns, token: "a\(n)"), DeviceAttributes(owner: "u", topics: ["t"])) }
        for n in 0..<5 { try registry.register(DeviceID(app: "shop", platform: .fcm, token: "f\(n)"), DeviceAttributes(owner: "u", topics: ["t"])) }
        #expect(try registry.devices(app: "shop", owner: "u", platform: .fcm, limit: 3).map(\.id.platform) == [.fcm, .fcm, .fcm])
        #expect(try registry.devices(app: "shop", topic: "t", platform: .fcm).count == 5)
        #expect(try registry.devices(app: "shop", topic: "t", limit: 7).count == 7)
    }
}

extension DeviceRegistryTests {
    /// An export read back (or a migration) keeps each device's past: a stale one stays stale, an APNs 410 older than
    /// its last registration still removes it, and an older history never moves a live device back.
    @Test func anImportKeepsTheDevicesHistory() throws {
        let (registry, clock, _) = try registry()
        let iphone = DeviceID(app: "shop", platform: .apns, token: "bb22")
        let old = clock.wallMillis - 40 * Self.day
        let item: [String: Any] = ["platform": "apns", "token": "bb22", "created_at": old - Self.day, "last_seen_at": old, "state": "stale"]
        let parsed = try DeviceRegistration.parse(item, app: "shop", platforms: Platform.allCases)
        #expect(parsed.history == DeviceHistory(created: old - Self.day, seen: old, stale: true))
        #expect(try registry.register(parsed.id, parsed.attributes, history: parsed.history) == "registered")
        var device = try #require(try registry.device(iphone))
        #expect(device.state == .stale && device.seen == old && device.created == old - Self.day)
        #expect(try registry.counts().devices.first?.stale == 1)
        // Apple's 410 says invalid since after that last registration: removed.
        let call = RegistryUpdate.updates(results: [], dropped: [DroppedToken(token: "bb22", topic: "", environment: "", reason: "Unregistered",
                                                                             invalidSince: old + 1, platform: "apns", app: "shop")],
                                          shards: registry.shards, now: clock.wallMillis, eventsMax: 100)
        _ = try registry.redis.evalScript(RegistryScripts.settle, keys: call[0].keys, args: call[0].args)
        #expect(try registry.device(iphone)?.state == .removed)
        // A live device is not moved back or made stale by an older line.
        let live = DeviceID(app: "shop", platform: .fcm, token: "live")
        try registry.register(live, DeviceAttributes())
        try registry.register(live, DeviceAttributes(), history: DeviceHistory(seen: old, stale: true))
        device = try #require(try registry.device(live))
        #expect(device.state == .active && device.seen == clock.wallMillis)
        // A time in the future counts as now.
        let later = DeviceID(app: "shop", platform: .fcm, token: "later")
        try registry.register(later, DeviceAttributes(), history: DeviceHistory(seen: clock.wallMillis + Self.day))
        #expect(try registry.device(later)?.seen == clock.wallMillis)
        #expect(throws: DeviceError.self) { try DeviceRegistration.parse(["platform": "fcm", "token": "x", "state": "removed"], app: "shop", platforms: Platform.allCases) }
    }
}

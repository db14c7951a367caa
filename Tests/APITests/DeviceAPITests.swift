import DeviceRegistry
import Foundation
import HeraldTestSupport
import ProviderKit
import Reactor
import RedisQueue
import Testing

/// `/v1/devices/...` against a real Redis with curl: register, refresh, move and revive; reads by token, owner,
/// topic and page; unregister; bulk import; keys' apps; the registry off; refusals with their codes; Web Push
/// endpoints as tokens; the job status naming its devices.
@Suite(.serialized) struct DeviceAPITests {
    static let token = String(repeating: "ab", count: 32)

    private func put(_ api: DeviceAPIServer, _ path: String, _ body: String? = nil, _ extra: [String] = []) throws -> (status: Int, body: [String: Any]) {
        let answer = try curl(extra + ["-X", "PUT"] + (body.map { ["-H", "Content-Type: application/json", "--data-binary", $0] } ?? []) + [api.url + path])
        return (answer.status, jsonObject(answer.body))
    }

    private func get(_ api: DeviceAPIServer, _ path: String, _ extra: [String] = []) throws -> (status: Int, body: [String: Any]) {
        let answer = try curl(extra + [api.url + path])
        return (answer.status, jsonObject(answer.body))
    }

    private func code(_ body: [String: Any]) -> String? { (body["error"] as? [String: Any])?["code"] as? String }

    @Test func aPUTRegistersRefreshesMovesAndRevivesAStaleDevice() throws {
        let redis = try RedisServer()
        let api = try DeviceAPIServer(redisURL: redis.url)
        let path = "v1/devices/shop/apns/\(Self.token)"
        let first = try put(api, path, #"{"owner": "u1", "topics": ["news"], "locale": "de", "time_zone": "Europe/Berlin", "environment": "sandbox"}"#)
        #expect(first.status == 201 && first.body["event"] as? String == "registered", "\(first.body)")
        let device = first.body["device"] as? [String: Any] ?? [:]
        #expect(device["owner"] as? String == "u1" && device["topics"] as? [String] == ["news"] && device["time_zone"] as? String == "Europe/Berlin")
        #expect(device["environment"] as? String == "sandbox" && device["state"] as? String == "active" && device["token"] as? String == Self.token)
        usleep(5_000)
        let again = try put(api, path, #"{"owner": "u1", "topics": ["news"], "locale": "de", "time_zone": "Europe/Berlin", "environment": "sandbox"}"#)
        let refreshed = again.body["device"] as? [String: Any] ?? [:]
        #expect(again.status == 200 && again.body["event"] as? String == "refreshed")
        #expect(refreshed["created_at"] as? Int == device["created_at"] as? Int)
        #expect((refreshed["last_seen_at"] as? Int ?? 0) > (device["last_seen_at"] as? Int ?? 0))
        let moved = try put(api, path, #"{"owner": "u2"}"#)
        #expect(moved.status == 200 && moved.body["event"] as? String == "moved")
        #expect((try get(api, "v1/devices/shop?owner=u1").body["devices"] as? [Any])?.isEmpty == true)
        #expect((try get(api, "v1/devices/shop?owner=u2").body["devices"] as? [[String: Any]])?.first?["token"] as? String == Self.token)
        // A month unseen: the sweeper makes it stale; registering it again revives it.
        let client = try BlockingRedis(url: try RedisURL(parsing: redis.url))
        defer { client.close() }
        let later = wallClockMillis() + 31 * 86_400_000
        let sweeper = DeviceRegistry(redis: client, shards: try QueueShards(single: try QueueKeys(prefix: "herald"))) { later }
        #expect(try sweeper.sweep().madeStale == 1)
        #expect(try get(api, path).body["state"] as? String == "stale")
        let revived = try put(api, path, #"{"owner": "u2"}"#)
        #expect(revived.status == 200 && revived.body["event"] as? String == "refreshed", "\(revived.body)")
        #expect((revived.body["device"] as? [String: Any])?["state"] as? String == "active")
        // An empty body is a registration without members: the owner is cleared (a logout), a refresh, not a move.
        let cleared = try put(api, path)
        #expect(cleared.status == 200 && cleared.body["event"] as? String == "refreshed" && (cleared.body["device"] as? [String: Any])?["owner"] == nil)
    }

    @Test func devicesAreReadByTokenOwnerTopicAndPage() throws {
        let redis = try RedisServer()
        let api = try DeviceAPIServer(redisURL: redis.url, apps: APIProcess.shopApp + "," + APIProcess.app("other"))
        var tokens: Set<String> = []
        for n in 0..<23 {
            let token = "fcm-token-\(n)"
            tokens.insert(token)
            let topics = n % 2 == 0 ? #"["even"]"# : "[]"
            #expect(try put(api, "v1/devices/shop/fcm/\(token)", #"{"owner": "u\#(n % 3)", "topics": \#(topics)}"#).status == 201)
        }
        #expect(try put(api, "v1/devices/other/fcm/elsewhere").status == 201)
        let one = try get(api, "v1/devices/shop/fcm/fcm-token-4")
        #expect(one.status == 200 && one.body["owner"] as? String == "u1" && one.body["platform"] as? String == "fcm" && one.body["app"] as? String == "shop")
        let unknown = try get(api, "v1/devices/shop/fcm/nobody")
        #expect(unknown.status == 404 && code(unknown.body) == "not_found")
        let owned = (try get(api, "v1/devices/shop?owner=u0").body["devices"] as? [[String: Any]] ?? []).compactMap { $0["token"] as? String }
        #expect(Set(owned) == Set((0..<23).filter { $0 % 3 == 0 }.map { "fcm-token-\($0)" }))
        let even = try get(api, "v1/devices/shop?topic=even&limit=5")
        #expect((even.body["devices"] as? [Any])?.count == 5 && even.body["truncated"] as? Bool == true, "\(even.body)")
        let allEven = try get(api, "v1/devices/shop?topic=even&platform=fcm")
        #expect((allEven.body["devices"] as? [Any])?.count == 12 && allEven.body["truncated"] as? Bool == false)
        var seen: [String] = []
        var cursor = ""
        for _ in 0..<50 {
            let page = try get(api, "v1/devices/shop?count=7" + (cursor.isEmpty ? "" : "&cursor=" + cursor))
            #expect(page.status == 200, "\(page.body)")
            seen += (page.body["devices"] as? [[String: Any]] ?? []).compactMap { $0["token"] as? String }
            guard let next = page.body["next_cursor"] as? String else { break }
            cursor = next
        }
        #expect(seen.count == 23 && Set(seen) == tokens, "every device once: \(seen)")
        // Past a listpack's 512 entries HSCAN pages for real: 700 more on APNs, read 100 at a time.
        let many = (0..<700).map { #"{"platform": "apns", "token": "apns-\#($0)"}"# }.joined(separator: ",")
        #expect(try curl(["--data-binary", "[" + many + "]", api.url + "v1/devices/shop"]).status == 200)
        var paged: [String] = []
        var pages = 0
        cursor = ""
        for _ in 0..<100 {
            let page = try get(api, "v1/devices/shop?platform=apns&count=100" + (cursor.isEmpty ? "" : "&cursor=" + cursor))
            pages += 1
            paged += (page.body["devices"] as? [[String: Any]] ?? []).compactMap { $0["token"] as? String }
            guard let next = page.body["next_cursor"] as? String else { break }
            cursor = next
        }
        #expect(paged.count == 700 && Set(paged).count == 700 && pages > 3, "\(pages) pages, \(paged.count) devices")
        #expect(try get(api, "v1/devices/shop?platform=nokia").status == 400)
    }

    @Test func overThreeShardsEveryDeviceIsFoundByOwnerTopicAndPage() throws {
        let redis = try RedisServer()
        let api = try DeviceAPIServer(redisURL: redis.url, redisExtra: #", "shards": 3"#)
        let tokens = (0..<30).map { "t\($0)" }
        let body = tokens.map { #"{"platform": "fcm", "token": "\#($0)", "owner": "u", "topics": ["all"]}"# }.joined(separator: ",")
        #expect(try curl(["--data-binary", "[" + body + "]", api.url + "v1/devices/shop"]).status == 200)
        let client = try BlockingRedis(url: try RedisURL(parsing: redis.url))
        defer { client.close() }
        let shardsUsed = try (0..<3).filter { try client.command(["HLEN", "{herald:\($0)}:devices:shop:fcm"]).int ?? 0 > 0 }
        #expect(shardsUsed.count == 3, "the devices spread over the shards")
        let owned = (try get(api, "v1/devices/shop?owner=u").body["devices"] as? [[String: Any]] ?? []).compactMap { $0["token"] as? String }
        #expect(Set(owned) == Set(tokens) && owned.count == 30)
        #expect((try get(api, "v1/devices/shop?topic=all&limit=1000").body["devices"] as? [Any])?.count == 30)
        var paged: [String] = []
        var cursor = ""
        for _ in 0..<50 {
            let page = try get(api, "v1/devices/shop?count=4" + (cursor.isEmpty ? "" : "&cursor=" + cursor))
            paged += (page.body["devices"] as? [[String: Any]] ?? []).compactMap { $0["token"] as? String }
            guard let next = page.body["next_cursor"] as? String else { break }
            cursor = next
        }
        #expect(paged.count == 30 && Set(paged) == Set(tokens))
        for token in tokens { #expect(try curl(["-X", "DELETE", api.url + "v1/devices/shop/fcm/" + token]).status == 200) }
    }

    @Test func aDELETEIs200WithTheRemovedDeviceThen404() throws {
        let redis = try RedisServer()
        let api = try DeviceAPIServer(redisURL: redis.url)
        let path = "v1/devices/shop/apns/\(Self.token)"
        #expect(try put(api, path, #"{"owner": "u1"}"#).status == 201)
        let (status, text) = try curl(["-X", "DELETE", api.url + path])
        let removed = jsonObject(text)["device"] as? [String: Any] ?? [:]
        #expect(status == 200 && removed["state"] as? String == "removed" && removed["reason"] as? String == "unregistered", "\(text)")
        let (second, secondText) = try curl(["-X", "DELETE", api.url + path])
        #expect(second == 404 && code(jsonObject(secondText)) == "not_found")
        // Kept readable as removed, and out of its owner's devices.
        #expect(try get(api, path).body["state"] as? String == "removed")
        #expect((try get(api, "v1/devices/shop?owner=u1").body["devices"] as? [Any])?.isEmpty == true)
        #expect(try put(api, path).status == 201, "a removed device registers anew")
    }

    @Test func aBulkImportAnswersEveryItemAndKeepsTheGoodOnes() throws {
        let redis = try RedisServer()
        let api = try DeviceAPIServer(redisURL: redis.url, api: #"{"max_jobs_per_request": 3}"#)
        let body = #"[{"platform": "fcm", "token": "t1", "owner": "u1"}, {"platform": "nokia", "token": "t2"}, {"platform": "apns", "token": "t3", "colour": "red"}]"#
        let (status, text) = try curl(["--data-binary", body, api.url + "v1/devices/shop"])
        let results = jsonObject(text)["results"] as? [[String: Any]] ?? []
        #expect(status == 200 && results.count == 3, "\(text)")
        #expect(results.first?["event"] as? String == "registered" && results.first?["token"] as? String == "t1")
        #expect((results[safe: 1]?["error"] as? [String: Any])?["code"] as? String == "bad_platform")
        #expect((results[safe: 2]?["error"] as? [String: Any])?["code"] as? String == "unknown_member")
        #expect(try get(api, "v1/devices/shop/fcm/t1").body["owner"] as? String == "u1")
        #expect(try get(api, "v1/devices/shop/apns/t3").status == 404)
        let wrapped = try curl(["--data-binary", #"{"devices": [{"platform": "fcm", "token": "t1", "owner": "u1"}]}"#, api.url + "v1/devices/shop"])
        #expect(wrapped.status == 200 && (jsonObject(wrapped.body)["results"] as? [[String: Any]])?.first?["event"] as? String == "refreshed")
        let allBad = try curl(["--data-binary", #"[{"app": "other", "platform": "fcm", "token": "x"}]"#, api.url + "v1/devices/shop"])
        #expect(allBad.status == 422 && allBad.body.contains("bad_app"))
        let four = "[" + Array(repeating: #"{"platform": "fcm", "token": "t"}"#, count: 4).joined(separator: ",") + "]"
        let tooMany = try curl(["--data-binary", four, api.url + "v1/devices/shop"])
        #expect(tooMany.status == 413 && code(jsonObject(tooMany.body)) == "too_many_devices")
        #expect(try curl(["--data-binary", "nope", api.url + "v1/devices/shop"]).status == 400)
    }

    @Test func aKeyOutsideItsAppsIs403AndWithoutAKeyIs401() throws {
        let redis = try RedisServer()
        let key = #"{"keys": [{"name": "shop-only", "sha256": "\#(APIAccessTests.secretHash)", "apps": ["shop"]}]}"#
        let api = try DeviceAPIServer(redisURL: redis.url, api: key, apps: APIProcess.shopApp + "," + APIProcess.app("other"))
        let auth = ["-H", "Authorization: Bearer \(APIAccessTests.secret)"]
        #expect(try put(api, "v1/devices/shop/fcm/t1").status == 401)
        let other = try put(api, "v1/devices/other/fcm/t1", "{}", auth)
        #expect(other.status == 403 && code(other.body) == "forbidden", "\(other.body)")
        #expect(try get(api, "v1/devices/other?owner=u1", auth).status == 403)
        // Refused from the head: the body is never read.
        let bulk = try curl(auth + ["--data-binary", #"[{"platform": "fcm", "token": "t"}]"#, api.url + "v1/devices/other"])
        #expect(bulk.status == 403)
        #expect(try put(api, "v1/devices/shop/fcm/t1", "{}", auth).status == 201)
        #expect(try get(api, "v1/devices/shop/fcm/t1", auth).status == 200)
    }

    @Test func withTheRegistryOffEveryDevicesRouteIs404NamingTheSetting() throws {
        let redis = try RedisServer()
        let api = try DeviceAPIServer(redisURL: redis.url, registry: false)
        for (status, body) in [try put(api, "v1/devices/shop/fcm/t1", "{}"), try get(api, "v1/devices/shop/fcm/t1"), try get(api, "v1/devices/shop?owner=u")] {
            #expect(status == 404 && code(body) == "not_found" && ((body["error"] as? [String: Any])?["message"] as? String ?? "").contains("registry.enabled"), "\(body)")
        }
        let process = try APIProcess(redisURL: redis.url)
        let (status, text) = try curl(["-X", "PUT", process.url + "v1/devices/shop/fcm/t1"])
        #expect(status == 404 && text.contains("registry.enabled"), "the herald api process, off by default: \(text)")
    }

    @Test func badAddressesAndAttributesAre400WithTheirCode() throws {
        let redis = try RedisServer()
        let api = try DeviceAPIServer(redisURL: redis.url)
        let cases: [(String, String?, String)] = [
            ("v1/devices/shop/nokia/t1", nil, "bad_platform"),
            ("v1/devices/shop/fcm/t1", #"{"time_zone": "Mars/Olympus"}"#, "bad_time_zone"),
            ("v1/devices/shop/fcm/t1", #"{"colour": "red"}"#, "unknown_member"),
            ("v1/devices/shop/fcm/t1", #"{"environment": "sandbox"}"#, "bad_environment"),
            ("v1/devices/shop/fcm/t1", #"{"topics": "news"}"#, "bad_topics"),
            ("v1/devices/shop/fcm/t1", "[1]", "bad_request"),
            ("v1/devices/shop/fcm/t1", "{", "bad_request"),
        ]
        for (path, body, expected) in cases {
            let answer = try put(api, path, body)
            #expect(answer.status == 400 && code(answer.body) == expected, "\(path) \(body ?? ""): \(answer.body)")
        }
        // An app the configuration does not name (a typo, or a name no key could be scoped to) has no registry.
        for path in ["v1/devices/sh%22op/fcm/t1", "v1/devices/shopp/fcm/t1", "v1/devices/shopp"] {
            let answer = try put(api, path)
            #expect(answer.status == 404 && code(answer.body) == "unknown_app", "\(path): \(answer.body)")
        }
        #expect(try get(api, "v1/devices/shop/fcm/t1").status == 404, "nothing refused was stored")
        let (wrongMethod, _) = try curl(["-X", "PATCH", api.url + "v1/devices/shop/fcm/t1"])
        #expect(wrongMethod == 405)
        // Over h2c the same routes and checks.
        let h2 = try put(api, "v1/devices/shop/fcm/t1", #"{"owner": "u1"}"#, ["--http2-prior-knowledge"])
        #expect(h2.status == 201 && h2.body["event"] as? String == "registered", "\(h2.body)")
        #expect(try put(api, "v1/devices/shop/fcm/t1", #"{"colour": "red"}"#, ["--http2-prior-knowledge"]).status == 400)
    }

    @Test func aWebPushEndpointIsOnePercentEncodedPathSegment() throws {
        let redis = try RedisServer()
        let api = try DeviceAPIServer(redisURL: redis.url)
        let endpoint = "https://push.example.net/wpush/v2/abc+def?x=1"
        let encoded = endpoint.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let subscription = #"{"subscription": {"endpoint": "\#(endpoint)", "keys": {"p256dh": "BPk", "auth": "c2Vj"}}, "owner": "u1"}"#
        let created = try put(api, "v1/devices/shop/webpush/" + encoded, subscription)
        #expect(created.status == 201, "\(created.body)")
        let device = try get(api, "v1/devices/shop/webpush/" + encoded)
        #expect(device.body["token"] as? String == endpoint)
        #expect((device.body["subscription"] as? [String: Any])?["endpoint"] as? String == endpoint)
        let mismatched = try put(api, "v1/devices/shop/webpush/" + encoded, #"{"subscription": {"endpoint": "https://elsewhere", "keys": {"p256dh": "a", "auth": "b"}}}"#)
        #expect(mismatched.status == 400 && code(mismatched.body) == "bad_subscription")
        let (_, metrics) = try curl([api.url + "metrics"])
        #expect(metrics.contains(#"herald_api_requests_total{route="/v1/devices/{app}/{platform}/{token}",status="201"} 1"#), "\(metrics)")
        #expect(!metrics.contains("push.example.net"), "no token in a label")
    }

    @Test func aJobStatusEntryNamesItsDeviceWhileTheRegistryIsOn() throws {
        let redis = try RedisServer()
        let client = try BlockingRedis(url: try RedisURL(parsing: redis.url))
        defer { client.close() }
        let entry = #"{"stream_id":"3-1","queue":"herald:queue","id":"j1","outcome":"delivered","status":"200","token":"https://p.example/a b","app":"shop","platform":"webpush","attempt":"1","worker":"w"}"#
        let bare = #"{"stream_id":"4-1","queue":"herald:queue","id":"j1","outcome":"delivered","status":"200","token":"t9","attempt":"1","worker":"w"}"#
        _ = try client.command(["HSET", "herald:result:j1", "a", entry, "b", bare])
        let on = try DeviceAPIServer(redisURL: redis.url, sections: #""results": {"index_ttl_seconds": 60}"#)
        let results = try get(on, "v1/jobs/j1").body["results"] as? [[String: Any]] ?? []
        #expect(results.first?["device"] as? String == "/v1/devices/shop/webpush/https%3A%2F%2Fp.example%2Fa%20b", "\(results)")
        #expect(results.count == 2 && results[1]["device"] == nil, "an entry without app and platform names none")
        let off = try DeviceAPIServer(redisURL: redis.url, sections: #""results": {"index_ttl_seconds": 60}"#, registry: false)
        #expect((try get(off, "v1/jobs/j1").body["results"] as? [[String: Any]])?.first?["device"] == nil)
    }

    /// docs/redis.md's least-privilege user: every devices route, and `herald devices`, work with what it grants.
    @Test func theDocumentedACLUserServesEveryDevicesRoute() throws {
        let redis = try RedisServer()
        let admin = try BlockingRedis(url: try RedisURL(parsing: redis.url))
        defer { admin.close() }
        let text = try String(contentsOfFile: JobSchemaTests.root + "/docs/redis.md", encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("ACL SETUSER herald ") })
        _ = try admin.command(line.split(separator: " ").map { $0 == ">CHANGE-ME" ? ">pw" : String($0) })
        let url = redis.url.replacingOccurrences(of: "redis://", with: "redis://herald:pw@")
        let api = try DeviceAPIServer(redisURL: url)
        #expect(try put(api, "v1/devices/shop/fcm/t1", #"{"owner": "u1", "topics": ["news"]}"#).status == 201)
        #expect(try get(api, "v1/devices/shop/fcm/t1").status == 200)
        #expect((try get(api, "v1/devices/shop?owner=u1").body["devices"] as? [Any])?.count == 1)
        #expect((try get(api, "v1/devices/shop?topic=news").body["devices"] as? [Any])?.count == 1)
        #expect((try get(api, "v1/devices/shop").body["devices"] as? [Any])?.count == 1)
        #expect(try curl(["-X", "DELETE", api.url + "v1/devices/shop/fcm/t1"]).status == 200)
        let herald = try #require(heraldExecutable())
        let listed = try runProgram(herald, ["devices", "list", "--app", "shop", "--redis", url], errorsApart: true)
        #expect(listed.status == 0 && listed.output.contains("\"state\":\"removed\""), "\(listed.output) \(listed.errorOutput)")
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}

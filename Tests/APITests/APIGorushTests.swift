import Foundation
import HeraldTestSupport
import Testing

/// gorush's `POST /api/push` and `GET /api/stat/app` on `herald api`, with gorush's own README examples.
@Suite(.serialized) struct APIGorushTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/gorush")
    static let fcmApp = #"{"name": "android", "fcm": {"service_account_file": "/nonexistent/sa.json"}}"#

    private func start(_ redis: RedisServer) throws -> APIProcess {
        try APIProcess(redisURL: redis.url, apps: APIProcess.shopApp + "," + Self.fcmApp)
    }

    private func post(_ api: APIProcess, _ body: String) throws -> (status: Int, body: [String: Any]) {
        let (status, text) = try curl(["-H", "Content-Type: application/json", "--data-binary", body, api.url + "api/push"])
        return (status, jsonObject(text))
    }

    @Test func everyREADMEExampleIsAnsweredInGorushsShape() throws {
        let redis = try RedisServer()
        let api = try start(redis)
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.fixtures.path).filter { $0.hasSuffix(".json") }.sorted()
        #expect(names.count == 12)
        for name in names {
            let body = try String(contentsOf: Self.fixtures.appendingPathComponent(name), encoding: .utf8)
            let (status, answer) = try post(api, body)
            #expect(status == 200, "\(name)")
            #expect(answer["success"] as? String == "ok", "\(name)")
            #expect(answer["counts"] is Int, "\(name)")
            let logs = answer["logs"] as? [[String: Any]] ?? []
            // "token_a" is no APNs device token: every iOS device of the README comes back as a failed push,
            // with the reason a worker's `rejected` result would carry; Android's tokens are FCM's to judge.
            let iosDevices = (jsonObject(body)["notifications"] as? [[String: Any]] ?? [])
                .filter { $0["platform"] as? Int == 1 }.reduce(0) { $0 + (($1["tokens"] as? [Any])?.count ?? 0) }
            #expect(logs.count == iosDevices, "\(name): \(logs)")
            #expect(logs.allSatisfy { $0["type"] as? String == "failed-push" && $0["platform"] as? String == "ios"
                && ($0["error"] as? String ?? "").hasPrefix("bad_token") }, "\(name)")
        }
        // The Android notifications were queued, one FCM job per token, the topic one as a topic.
        let queued = try listElements(redis.url, "herald:queue").map(jsonObject)
        let messages = queued.compactMap { $0["message"] as? [String: Any] }
        #expect(queued.allSatisfy { $0["platform"] as? String == "fcm" })
        #expect(messages.contains { $0["topic"] as? String == "foo-bar" })
        #expect(messages.filter { $0["token"] as? String == "token_a" }.count == 7)
    }

    @Test func theFieldsMapOntoHeraldJobsAsTheTableSays() throws {
        let redis = try RedisServer()
        let api = try start(redis)
        let hex = APIProcess.token
        let body = """
            {"notifications": [
              {"tokens": ["\(hex)", "\(hex.uppercased())"], "platform": 1, "badge": 5, "topic": "com.example.shop",
               "alert": {"title": "Game Request", "body": "Bob wants to play poker", "action-loc-key": "PLAY"},
               "sound": {"critical": 1, "name": "default", "volume": 1.0}, "content_available": true, "mutable_content": true,
               "data": {"key1": "welcome"}, "priority": "normal", "production": true, "notif_id": "n-1"},
              {"tokens": ["fcm-token-1"], "platform": 2, "message": "Hello", "title": "Hi", "priority": "high",
               "data": {"key2": 2}, "collapse_key": "c", "time_to_live": 60, "notification": {"icon": "myicon"}}
            ]}
            """
        let (status, answer) = try post(api, body)
        #expect(status == 200)
        #expect(answer["counts"] as? Int == 3)
        #expect((answer["logs"] as? [Any])?.isEmpty == true)
        let queued = try listElements(redis.url, "herald:queue").map(jsonObject)
        let ios = queued.first { $0["platform"] == nil }
        let payload = ios?["payload"] as? [String: Any]
        let aps = payload?["aps"] as? [String: Any]
        #expect((ios?["tokens"] as? [String])?.count == 2)
        #expect(ios?["id"] as? String == "n-1")
        #expect(ios?["topic"] as? String == "com.example.shop")
        #expect(ios?["priority"] as? Int == 5)
        #expect(ios?["environment"] as? String == "production")
        #expect((aps?["alert"] as? [String: Any])?["action-loc-key"] as? String == "PLAY")
        #expect(aps?["badge"] as? Int == 5)
        #expect((aps?["sound"] as? [String: Any])?["name"] as? String == "default")
        #expect(aps?["content-available"] as? Int == 1)
        #expect(aps?["mutable-content"] as? Int == 1)
        #expect(payload?["key1"] as? String == "welcome")
        let fcm = queued.first { $0["platform"] as? String == "fcm" }?["message"] as? [String: Any]
        #expect(fcm?["token"] as? String == "fcm-token-1")
        #expect(fcm?["notification"] as? [String: String] == ["title": "Hi", "body": "Hello"])
        // FCM v1 takes only strings in `data`.
        #expect(fcm?["data"] as? [String: String] == ["key2": "2"])
        let android = fcm?["android"] as? [String: Any]
        #expect(android?["priority"] as? String == "HIGH")
        #expect(android?["collapse_key"] as? String == "c")
        #expect(android?["ttl"] as? String == "60s")
        #expect((android?["notification"] as? [String: String]) == ["icon": "myicon"])
    }

    @Test func gorushsOwnRefusalsAndTheStatRoute() throws {
        let redis = try RedisServer()
        let api = try start(redis)
        #expect(try post(api, "{}").body["message"] as? String == "Missing notifications field.")
        #expect(try post(api, #"{"notifications": []}"#).status == 400)
        let huawei = try post(api, #"{"notifications": [{"tokens": ["x"], "platform": 3, "message": "hi"}]}"#)
        #expect(huawei.status == 200)
        let reason = (huawei.body["logs"] as? [[String: Any]])?.first?["error"] as? String ?? ""
        #expect(reason.hasPrefix("bad_platform"))
        _ = try post(api, #"{"notifications": [{"tokens": ["t1", "t2"], "platform": 2, "message": "hi"}]}"#)
        let (status, text) = try curl([api.url + "api/stat/app"])
        #expect(status == 200)
        let stat = jsonObject(text)
        #expect(stat["queue_usage"] as? Int == 2)
        #expect((stat["android"] as? [String: Int])?["push_success"] == 2)
        #expect(stat["total_count"] as? Int == 2)
    }
}

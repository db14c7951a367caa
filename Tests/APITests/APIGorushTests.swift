import Foundation
import HeraldTestSupport
import RedisQueue
import Testing

/// gorush's `POST /api/push` and `GET /api/stat/app` on `herald api`, with gorush's own README examples.
@Suite(.serialized) struct APIGorushTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/gorush")
    static let fcmApp = #"{"name": "android", "fcm": {"service_account_file": "/nonexistent/sa.json"}}"#
    static let hmsApp = #"{"name": "huawei", "hms": {"app_id": "10000001", "client_secret_file": "/nonexistent/secret"}}"#

    private func start(_ redis: RedisServer) throws -> APIProcess {
        try APIProcess(redisURL: redis.url, apps: [APIProcess.shopApp, Self.fcmApp, Self.hmsApp].joined(separator: ","))
    }

    private func post(_ api: APIProcess, _ body: String) throws -> (status: Int, body: [String: Any]) {
        let (status, text) = try curl(["-H", "Content-Type: application/json", "--data-binary", body, api.url + "api/push"])
        return (status, jsonObject(text))
    }

    /// The jobs queued since the last call (the queue emptied after reading).
    private func drain(_ redis: RedisServer) throws -> [[String: Any]] {
        let client = try BlockingRedis(url: try RedisURL(parsing: redis.url))
        defer { client.close() }
        let jobs = try client.command(["LRANGE", "herald:queue", "0", "-1"]).array?.compactMap(\.string) ?? []
        _ = try client.command(["DEL", "herald:queue"])
        return jobs.reversed().map(jsonObject)
    }

    /// The README's request bodies (`Fixtures/gorush/*.json`).
    static let examples = ((try? FileManager.default.contentsOfDirectory(atPath: fixtures.path)) ?? [])
        .filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
    /// The README's placeholder tokens as hex ones (APNs tokens must be hex), in the bodies and the expectations.
    static let hexTokens = ["token_a": APIProcess.token, "token_b": String(repeating: "cd", count: 32),
                            "ios_device_token": String(repeating: "ef", count: 32), "ios_token": String(repeating: "0123", count: 16),
                            "push_to_start_token": String(repeating: "4567", count: 16)]

    static func withHexTokens(_ text: String) -> String {
        hexTokens.reduce(text) { $0.replacingOccurrences(of: "\"\($1.key)\"", with: "\"\($1.value)\"") }
    }

    /// One test per README example: the answer and every queued job, field by field, against `expected/<name>.json`
    /// (what gorush would send, as the Herald job that sends it).
    @Test(arguments: examples) func theREADMEExampleQueuesWhatGorushWouldSend(_ name: String) throws {
        #expect(Self.examples.count == 24)
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url, apps: [APIProcess.app("app"), Self.fcmApp, Self.hmsApp].joined(separator: ","))
        let body = Self.withHexTokens(try String(contentsOf: Self.fixtures.appendingPathComponent(name + ".json"), encoding: .utf8))
        let expected = jsonObject(Self.withHexTokens(try String(contentsOf: Self.fixtures.appendingPathComponent("expected/\(name).json"), encoding: .utf8)))
        let (status, answer) = try post(api, body)
        #expect(status == 200)
        #expect(NSDictionary(dictionary: answer) == NSDictionary(dictionary: expected["answer"] as? [String: Any] ?? ["missing": true]), "\(name): \(answer)")
        let queued = try drain(redis)
        #expect(queued.allSatisfy { $0["id"] is String }, "every job has Herald's id")
        let jobs = queued.map { NSDictionary(dictionary: $0.filter { $0.key != "id" }) }
        let want = (expected["jobs"] as? [[String: Any]] ?? []).map(NSDictionary.init(dictionary:))
        #expect(jobs.count == want.count, "\(name): \(queued)")
        for (got, wanted) in zip(jobs, want) {
            #expect(got == wanted, "\(name):\n got  \(got)\n want \(wanted)")
        }
    }

    /// The README's "Response body": its error table's messages word for word (with gorush's `code`), and its
    /// answers' members.
    @Test func theREADMEsDocumentedResponses() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url, api: #"{"max_jobs_per_request": 10}"#, apps: [APIProcess.shopApp, Self.fcmApp].joined(separator: ","))
        let section = try String(contentsOf: Self.fixtures.appendingPathComponent("responses.md"), encoding: .utf8)
        let rows = section.split(separator: "\n").filter { $0.hasPrefix("| 400") }
            .map { $0.split(separator: "|")[1].trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "") }
        #expect(rows == ["Missing notifications field.", "Notifications field is empty.", "Number of notifications(50) over limit(10)"])
        let fifty = "{\"notifications\": [" + Array(repeating: #"{"tokens": ["t"], "platform": 2}"#, count: 50).joined(separator: ",") + "]}"
        for (body, message) in zip(["{}", #"{"notifications": []}"#, fifty], rows) {
            let (status, answer) = try post(api, body)
            #expect(status == 400 && answer["code"] as? Int == 400 && answer["message"] as? String == message, "\(answer)")
        }
        // The success answer's members, and a log entry's (its "error format"), as the README shows them.
        let blocks = section.components(separatedBy: "```json\n").dropFirst().map { jsonObject(String($0.prefix { $0 != "`" })) }
        #expect(blocks.count == 2)
        let (_, answer) = try post(api, #"{"notifications": [{"tokens": ["not-hex"], "platform": 1, "message": "Hello World iOS1111!"}]}"#)
        #expect(Set(answer.keys) == Set(blocks[0].keys), "\(answer)")
        let documentedLog = (blocks[1]["logs"] as? [[String: Any]])?.first ?? [:]
        let log = (answer["logs"] as? [[String: Any]])?.first ?? [:]
        #expect(Set(documentedLog.keys).isSubset(of: Set(log.keys)), "\(log)")
        #expect(log["type"] as? String == "failed-push" && log["platform"] as? String == "ios" && log["message"] as? String == "Hello World iOS1111!")
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
        // gorush's error shape: `code` and `message`.
        let missing = try post(api, "{}")
        #expect(missing.status == 400 && missing.body["code"] as? Int == 400 && missing.body["message"] as? String == "Missing notifications field.")
        let empty = try post(api, #"{"notifications": []}"#)
        #expect(empty.status == 400 && empty.body["code"] as? Int == 400 && empty.body["message"] as? String == "Notifications field is empty.")
        let other = try post(api, #"{"notifications": [{"tokens": ["x"], "platform": 4, "message": "hi"}]}"#)
        #expect(other.status == 200)
        let reason = (other.body["logs"] as? [[String: Any]])?.first?["error"] as? String ?? ""
        #expect(reason.hasPrefix("bad_platform"))
        _ = try post(api, #"{"notifications": [{"tokens": ["t1", "t2"], "platform": 2, "message": "hi"}]}"#)
        let (status, text) = try curl([api.url + "api/stat/app"])
        #expect(status == 200)
        let stat = jsonObject(text)
        #expect(stat["queue_usage"] as? Int == 2)
        #expect(stat["submitted_tasks"] as? Int == 2)
        // Queued is not delivered: no worker has written a result yet.
        #expect((stat["android"] as? [String: Int]) == ["push_success": 0, "push_error": 0])
        #expect(stat["total_count"] as? Int == 0)
    }

    /// `/api/stat/app` counts what the workers' results say (the entries a worker writes, `ResultEntry`), each entry
    /// once however often it is asked; `/api/stat/go`, `/sys/stats` and `/version` answer with Herald's figures.
    @Test func theStatRouteCountsDeliveriesFromTheResults() throws {
        let redis = try RedisServer()
        let api = try start(redis)
        let client = try BlockingRedis(url: try RedisURL(parsing: redis.url))
        defer { client.close() }
        func add(_ platform: String, _ outcome: ResultEntry.Outcome, _ times: Int) throws {
            for n in 0..<times {
                var entry = ResultEntry(id: "j-\(platform)-\(outcome.rawValue)-\(n)", outcome: outcome, token: "t", worker: "w1")
                entry.platform = platform
                _ = try client.command(["XADD", "herald:results", "*"] + entry.fields.flatMap { [$0.0, $0.1] })
            }
        }
        func stat() throws -> [String: Any] {
            let (status, text) = try curl([api.url + "api/stat/app"])
            #expect(status == 200)
            return jsonObject(text)
        }
        try add("apns", .delivered, 3); try add("apns", .failed, 1); try add("apns", .retrying, 2)
        try add("fcm", .delivered, 2); try add("fcm", .rejected, 1); try add("hms", .tokenDropped, 1); try add("webpush", .delivered, 1)
        _ = try client.command(["ZADD", "herald:workers", String(Int64(Date().timeIntervalSince1970 * 1000) + 600_000), "w1"])
        var answer = try stat()
        #expect(answer["ios"] as? [String: Int] == ["push_success": 3, "push_error": 1])
        #expect(answer["android"] as? [String: Int] == ["push_success": 2, "push_error": 1])
        #expect(answer["huawei"] as? [String: Int] == ["push_success": 0, "push_error": 1])
        #expect(answer["web_push"] as? [String: Int] == ["push_success": 1, "push_error": 0])
        #expect(answer["success_tasks"] as? Int == 6 && answer["failure_tasks"] as? Int == 3 && answer["total_count"] as? Int == 9)
        #expect(answer["busy_workers"] as? Int == 1 && (answer["version"] as? String ?? "").hasPrefix("herald"))
        // Asked again: only the new entries count.
        try add("fcm", .delivered, 1)
        answer = try stat()
        #expect(answer["android"] as? [String: Int] == ["push_success": 3, "push_error": 1] && answer["total_count"] as? Int == 10)
        let (goStatus, goText) = try curl([api.url + "api/stat/go"])
        #expect(goStatus == 200 && jsonObject(goText)["runtime"] as? String == "swift" && jsonObject(goText)["pid"] is Int)
        let sys = jsonObject(try curl([api.url + "sys/stats"]).body)
        #expect((sys["total_status_code_count"] as? [String: Int])?["200"] ?? 0 >= 3 && sys["pid"] is Int, "\(sys)")
        let version = jsonObject(try curl([api.url + "version"]).body)
        #expect(version["source"] as? String == "herald" && version["version"] is String)
    }

    /// gorush decodes with Go's encoding/json into typed fields (gin's binding): what Go refuses fails the whole
    /// request with gorush's 400, and nothing is queued; never a number wrapped modulo 2^64 or a field dropped.
    @Test func wrongTypesAndOverflowingNumbersFailTheRequest() throws {
        let redis = try RedisServer()
        let api = try start(redis)
        let cases: [(members: String, go: String)] = [
            (#""platform": 18446744073709551617"#, "number 18446744073709551617 into Go struct field PushNotification.notifications.platform of type int"),
            (#""platform": 1.0"#, "number 1.0 into Go struct field PushNotification.notifications.platform of type int"),
            (#""platform": "1""#, "string into Go struct field PushNotification.notifications.platform of type int"),
            (#""time_to_live": 18446744073709551616"#, "number 18446744073709551616 into Go struct field PushNotification.notifications.time_to_live of type uint"),
            (#""time_to_live": -1"#, "number -1 into Go struct field PushNotification.notifications.time_to_live of type uint"),
            (#""badge": "5""#, "string into Go struct field PushNotification.notifications.badge of type *int"),
            (#""Badge": "5""#, "string into Go struct field PushNotification.notifications.badge of type *int"),
            (#""badge": 9223372036854775808"#, "number 9223372036854775808 into Go struct field PushNotification.notifications.badge of type *int"),
            (#""category": 5"#, "number 5 into Go struct field PushNotification.notifications.category of type string"),
            (#""expiration": "abc""#, "string into Go struct field PushNotification.notifications.expiration of type *int64"),
            (#""volume": 1e39"#, "number 1e39 into Go struct field PushNotification.notifications.volume of type float32"),
            (#""relevance-score": 1e400"#, "number 1e400 into Go struct field PushNotification.notifications.relevance-score of type *float64"),
            (#""tokens": "abc""#, "string into Go struct field PushNotification.notifications.tokens of type []string"),
            (#""tokens": [5]"#, "number 5 into Go struct field PushNotification.notifications.tokens of type string"),
            (#""alert": "hi""#, "string into Go struct field PushNotification.notifications.alert of type notify.Alert"),
            (#""alert": {"loc-args": "x"}"#, "string into Go struct field notify.Alert.loc-args of type []string"),
            (#""data": [1]"#, "array into Go struct field PushNotification.notifications.data of type notify.D"),
            (#""content_available": "true""#, "string into Go struct field PushNotification.notifications.content_available of type bool"),
            (#""android": "x""#, "string into Go struct field PushNotification.notifications.android of type messaging.AndroidConfig"),
            // Inside Firebase's and Huawei's structs too.
            (#""notification": {"title": 5}"#, "number 5 into Go struct field PushNotification.notifications.notification.title of type string"),
            (#""android": {"ttl": 60}"#, "number 60 into Go struct field PushNotification.notifications.android.ttl of type string"),
            (#""android": {"notification": {"body_loc_args": "x"}}"#, "string into Go struct field PushNotification.notifications.android.notification.body_loc_args of type []string"),
            (#""apns": {"headers": {"apns-priority": 10}}"#, "number 10 into Go struct field PushNotification.notifications.apns.headers of type string (at \"apns-priority\")"),
            (#""fcm_options": {"analytics_label": true}"#, "bool into Go struct field PushNotification.notifications.fcm_options.analytics_label of type string"),
            (#""huawei_notification": {"style": "big"}"#, "string into Go struct field PushNotification.notifications.huawei_notification.style of type int"),
        ]
        for (members, go) in cases {
            let body = #"{"notifications": [{"tokens": ["\#(APIProcess.token)"], "platform": 1, "message": "hi"}, {"tokens": ["\#(APIProcess.token)"], "platform": 1, "message": "hi", \#(members)}]}"#
            let (status, answer) = try post(api, body)
            #expect(status == 400, "\(members)")
            #expect(answer["code"] as? Int == 400 && answer["message"] as? String == "Missing notifications field.", "\(members): \(answer)")
            #expect(answer["detail"] as? String == "json: cannot unmarshal " + go, "\(members): \(answer)")
        }
        for body in [#"{"notifications": {}}"#, "[]", #"{"notifications": [5]}"#, "not json"] {
            let (status, answer) = try post(api, body)
            #expect(status == 400 && answer["code"] as? Int == 400 && answer["message"] as? String == "Missing notifications field.", "\(body)")
        }
        // Nothing of those requests was queued, not even their good first notification.
        #expect(try drain(redis).isEmpty)
        // What Go accepts: keys matched case-insensitively, the last of repeated keys, null as absent.
        let (status, answer) = try post(api, #"{"Notifications": [{"TOKENS": ["fcm-1"], "platform": 1, "Platform": 2, "message": "hi", "badge": null, "title": null}]}"#)
        #expect(status == 200 && (answer["logs"] as? [Any])?.isEmpty == true, "\(answer)")
        let jobs = try drain(redis)
        #expect(jobs.count == 1 && jobs.first?["platform"] as? String == "fcm")
        #expect((jobs.first?["message"] as? [String: Any])?["notification"] as? [String: String] == ["body": "hi"])
    }

    @Test func huaweiNotificationsBecomePushKitJobs() throws {
        let redis = try RedisServer()
        let api = try start(redis)
        let (status, answer) = try post(api, #"""
            {"notifications": [{"tokens": ["hms-1", "hms-2"], "platform": 3, "title": "Hi", "message": "Hello", "priority": "high",
              "huawei_data": "{\"k\":1}", "huawei_ttl": "3600s", "huawei_collapse_key": 2, "bi_tag": "b", "fast_app_target": 1,
              "category": "IM", "app_id": "10000001", "notif_id": "h-1", "image": "https://example.com/i.png"}]}
            """#)
        #expect(status == 200 && answer["counts"] as? Int == 2 && (answer["logs"] as? [Any])?.isEmpty == true, "\(answer)")
        let job = try drain(redis).first ?? [:]
        #expect(job["platform"] as? String == "hms" && job["app"] as? String == "huawei" && job["id"] as? String == "h-1")
        let message = job["message"] as? [String: Any] ?? [:]
        #expect(message["token"] as? [String] == ["hms-1", "hms-2"])
        #expect(message["data"] as? String == #"{"k":1}"#)
        let android = message["android"] as? [String: Any] ?? [:]
        #expect(android["urgency"] as? String == "HIGH" && android["ttl"] as? String == "3600s" && android["collapse_key"] as? Int == 2)
        #expect(android["bi_tag"] as? String == "b" && android["fast_app_target"] as? Int == 1 && android["category"] as? String == "IM")
        let notification = android["notification"] as? [String: Any] ?? [:]
        #expect(notification["title"] as? String == "Hi" && notification["body"] as? String == "Hello")
        #expect(notification["image"] as? String == "https://example.com/i.png" && notification["default_sound"] as? Bool == true)
        let click = notification["click_action"] as? [String: Any]
        #expect(click?["type"] as? Int == 1 && click?["action"] as? String == "Action")
        // An app_id no configured Huawei app has, and a per-request secret: refused, naming the field.
        for (members, field) in [(#""app_id": "999""#, "app_id"), (#""app_secret": "s3cret""#, "app_secret")] {
            let (_, refused) = try post(api, #"{"notifications": [{"tokens": ["hms-1"], "platform": 3, "message": "hi", \#(members)}]}"#)
            let log = (refused["logs"] as? [[String: Any]])?.first ?? [:]
            #expect(log["platform"] as? String == "huawei" && (log["error"] as? String ?? "").contains(field), "\(refused)")
        }
        #expect(try drain(redis).isEmpty)
    }

    /// The README's Live Activity example with `interruption_level` and the `apns` override (its "iOS with Custom
    /// Sound" example): every field in the APNs job.
    @Test func liveActivityFieldsAndTheAPNsOverrideReachTheAPNsJob() throws {
        let redis = try RedisServer()
        let api = try start(redis)
        let (status, answer) = try post(api, #"""
            {"notifications": [{"tokens": ["\#(APIProcess.token)"], "platform": 1, "push_type": "liveactivity",
              "topic": "com.example.shop.push-type.liveactivity", "event": "start", "timestamp": 1685952000,
              "content-state": {"homeScore": 0, "awayScore": 0, "minute": 1, "period": "1H"},
              "attributes-type": "FootballMatchAttributes", "attributes": {"homeTeam": "Team 1", "awayTeam": "Team 2"},
              "dismissal-date": 1685959200, "stale-date": 1685955600, "relevance-score": 0.5, "interruption_level": "time-sensitive",
              "alert": {"title": "Team 1 vs Team 2", "body": "Kick-off!"},
              "apns": {"headers": {"apns-priority": "5"}, "payload": {"aps": {"sound": {"name": "custom.wav", "critical": 1, "volume": 0.8}}, "match": 7}}}]}
            """#)
        #expect(status == 200 && (answer["logs"] as? [Any])?.isEmpty == true, "\(answer)")
        let job = try drain(redis).first ?? [:]
        #expect(job["push_type"] as? String == "liveactivity" && job["priority"] as? Int == 5)
        let payload = job["payload"] as? [String: Any] ?? [:]
        #expect(payload["match"] as? Int == 7)
        let aps = payload["aps"] as? [String: Any] ?? [:]
        #expect(aps["event"] as? String == "start" && aps["timestamp"] as? Int == 1685952000)
        #expect(aps["dismissal-date"] as? Int == 1685959200 && aps["stale-date"] as? Int == 1685955600 && aps["relevance-score"] as? Double == 0.5)
        #expect((aps["content-state"] as? [String: Any])?["period"] as? String == "1H")
        #expect(aps["attributes-type"] as? String == "FootballMatchAttributes")
        #expect((aps["attributes"] as? [String: String])?["awayTeam"] == "Team 2")
        #expect(aps["interruption-level"] as? String == "time-sensitive")
        #expect((aps["alert"] as? [String: String]) == ["title": "Team 1 vs Team 2", "body": "Kick-off!"])
        #expect((aps["sound"] as? [String: Any])?["name"] as? String == "custom.wav")
        // A header Herald does not set refuses the notification.
        let (_, refused) = try post(api, #"{"notifications": [{"tokens": ["\#(APIProcess.token)"], "platform": 1, "message": "hi", "apns": {"headers": {"x-custom": "1"}}}]}"#)
        #expect(((refused["logs"] as? [[String: Any]])?.first?["error"] as? String ?? "").contains("apns.headers.x-custom"))
        #expect(try drain(redis).isEmpty)
    }

    /// Every field of gorush's README table (`Fixtures/gorush/request-fields.md`), on each platform, either changes
    /// the queued job (mapped) or refuses the notification with a log entry and an api log line naming it; never
    /// accepted and lost.
    @Test func everyREADMEFieldIsMappedOrRefused() throws {
        let redis = try RedisServer()
        let api = try start(redis)
        let table = try String(contentsOf: Self.fixtures.appendingPathComponent("request-fields.md"), encoding: .utf8)
        let names = table.split(separator: "\n").filter { $0.hasPrefix("| ") }.map { $0.split(separator: "|")[0].trimmingCharacters(in: .whitespaces) }
            .filter { $0 != "name" && !$0.hasPrefix("-") }
        #expect(names.count == 44)
        // And the fields of gorush's struct its table leaves out, and Herald's own.
        let more = ["thread-id", "url-args", "production", "development", "apns", "android", "webpush", "fcm_options", "condition",
                    "app_secret", "app", "thread_id"]
        let base = [1: #""tokens": ["\#(APIProcess.token)"], "message": "hi""#, 2: #""tokens": ["fcm-1"], "message": "hi""#,
                    3: #""tokens": ["hms-1"], "message": "hi""#]
        var refusedOn: [String: [Int]] = [:]
        for platform in [1, 2, 3] {
            _ = try post(api, #"{"notifications": [{"platform": \#(platform), \#(base[platform]!)}]}"#)
            // Compared without `id`: Herald gives each job a fresh one.
            let baseline = try drain(redis).map { NSDictionary(dictionary: $0.filter { $0.key != "id" }) }
            #expect(baseline.count == 1, "platform \(platform)")
            for name in names + more where !["tokens", "platform", "message"].contains(name) {
                let value = Self.sample(name, platform: platform)
                // Push Kit takes one target: a topic without the tokens.
                let members = ["topic", "condition"].contains(name) && platform == 3 ? #""message": "hi""# : base[platform]!
                let (status, answer) = try post(api, #"{"notifications": [{"platform": \#(platform), \#(members), "\#(name)": \#(value)}]}"#)
                let queued = try drain(redis)
                if name == "notif_id" { #expect(queued.allSatisfy { ($0["id"] as? String ?? "").hasPrefix("n-1") }, "\(queued)") }
                let jobs = queued.map { NSDictionary(dictionary: $0.filter { $0.key != "id" }) }
                let logs = answer["logs"] as? [[String: Any]] ?? []
                #expect(status == 200, "\(name) on \(platform): \(answer)")
                if jobs.isEmpty {
                    // Refused: gorush's log entry names the field, and so does the api's log line.
                    #expect(logs.count == 1 && (logs.first?["error"] as? String ?? "").contains("`\(name)`"), "\(name) on \(platform): \(answer)")
                    refusedOn[name, default: []].append(platform)
                } else {
                    #expect(logs.isEmpty && (jobs != baseline || name == "notif_id"), "\(name) on \(platform): \(answer), \(jobs)")
                }
            }
        }
        #expect(waitUntil(seconds: 10) { refusedOn.keys.allSatisfy { api.child.output.contains("\"field\":\"\($0)\"") } }, "\(api.child.output)")
        // Herald's choices (docs/api.md): fields of one platform are refused on the others; retry and
        // delay_while_idle everywhere.
        #expect(refusedOn["retry"] == [1, 2, 3] && refusedOn["delay_while_idle"] == [1, 2, 3])
        #expect(refusedOn["badge"] == [2, 3] && refusedOn["huawei_data"] == [1, 2] && refusedOn["collapse_key"] == [1, 3])
        #expect(refusedOn["data"] == [3] && refusedOn["dry_run"] == nil && refusedOn["priority"] == nil)
        // docs/api.md's table says the same, field by field: a cell that starts with "refused" is a refusal.
        let docs = try String(contentsOf: Self.fixtures.appendingPathComponent("../../../../docs/api.md").standardized, encoding: .utf8)
        let rows = docs.split(separator: "\n").drop { !$0.hasPrefix("| gorush field |") }.prefix { $0.hasPrefix("|") }.dropFirst(2)
        var documented: [String: [Int]] = [:]
        for row in rows {
            let cells = row.split(separator: "|", omittingEmptySubsequences: false).dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
            let refused = [1, 2, 3].filter { cells[$0].hasPrefix("refused") }
            for name in cells[0].split(separator: "`", omittingEmptySubsequences: false).enumerated().filter({ $0.offset % 2 == 1 }).map({ String($0.element) }) {
                documented[name] = refused
            }
        }
        for name in names + more where !["tokens", "platform", "message"].contains(name) {
            #expect(documented[name] == (refusedOn[name] ?? []), "docs/api.md's row for `\(name)`: \(documented[name] ?? []) refused; the code refuses it on \(refusedOn[name] ?? [])")
        }
    }

    /// A valid value of the field for `platform` (so that Herald's intake takes the job when the field is mapped).
    static func sample(_ name: String, platform: Int) -> String {
        switch name {
        case "notif_id": #""n-1""#
        case "priority": #""high""#
        case "content_available", "delay_while_idle", "dry_run", "mutable_content": "true"
        case "sound": #""ping.aiff""#
        case "data": #"{"k": "v"}"#
        case "huawei_data": #""{\"k\":1}""#
        case "retry", "huawei_collapse_key", "badge", "time_to_live", "fast_app_target": "1"
        case "topic": platform == 1 ? #""com.example.shop""# : #""news""#
        case "image": #""https://example.com/i.png""#
        case "to": platform == 1 ? #""\#(APIProcess.token.uppercased())""# : #""tok-2""#
        case "huawei_ttl": #""3600s""#
        case "notification", "huawei_notification": #"{"icon": "myicon"}"#
        case "app_id": #""10000001""#
        case "expiration": "4102444800"
        case "timestamp", "stale-date", "dismissal-date": "1685952000"
        case "apns_id": #""123e4567-e89b-12d3-a456-426614174000""#
        case "push_type": #""alert""#
        case "alert": #"{"title": "T"}"#
        case "volume", "relevance-score": "0.5"
        case "interruption_level": #""active""#
        case "content-state", "attributes": #"{"k": 1}"#
        case "event": #""update""#
        case "url-args": #"["a"]"#
        case "production", "development": "true"
        case "apns": #"{"headers": {"apns-priority": "5"}}"#
        case "android": #"{"collapse_key": "c"}"#
        case "webpush": #"{"headers": {"TTL": "60"}}"#
        case "fcm_options": #"{"analytics_label": "x"}"#
        case "condition": #""'news' in topics""#
        case "app": ["", #""shop""#, #""android""#, #""huawei""#][platform]
        default: #""s-\#(name)""#
        }
    }

    /// `api.gorush_metrics`: every family gorush's metric/metrics.go exports, on `/metrics`, from the results streams
    /// like `/api/stat/app`; off by default.
    @Test func gorushMetricAliasesWhenAsked() throws {
        let redis = try RedisServer()
        let plain = try start(redis)
        #expect(try !curl([plain.url + "metrics"]).body.contains("gorush_"))
        let api = try APIProcess(redisURL: redis.url, api: #"{"gorush_metrics": true}"#, apps: [APIProcess.shopApp, Self.fcmApp].joined(separator: ","))
        let client = try BlockingRedis(url: try RedisURL(parsing: redis.url))
        defer { client.close() }
        for (platform, outcome) in [("apns", ResultEntry.Outcome.delivered), ("apns", .delivered), ("fcm", .rejected), ("hms", .delivered)] {
            var entry = ResultEntry(id: "m-\(platform)", outcome: outcome, token: "t", worker: "w1")
            entry.platform = platform
            _ = try client.command(["XADD", "herald:results", "*"] + entry.fields.flatMap { [$0.0, $0.1] })
        }
        let (status, text) = try curl([api.url + "metrics"])
        #expect(status == 200)
        let samples = Dictionary(text.split(separator: "\n").filter { $0.hasPrefix("gorush_") }.map { line -> (String, String) in
            let parts = line.split(separator: " ")
            return (String(parts[0]), String(parts.last ?? ""))
        }, uniquingKeysWith: { $1 })
        let gorushNames = ["gorush_total_push_count", "gorush_ios_success", "gorush_ios_error", "gorush_android_success", "gorush_android_fail",
                           "gorush_huawei_success", "gorush_huawei_fail", "gorush_busy_workers", "gorush_failure_tasks", "gorush_success_tasks",
                           "gorush_submitted_tasks"]
        #expect(Set(samples.keys) == Set(gorushNames), "\(text)")
        #expect(samples["gorush_ios_success"] == "2" && samples["gorush_android_fail"] == "1" && samples["gorush_huawei_success"] == "1")
        #expect(samples["gorush_total_push_count"] == "4" && samples["gorush_success_tasks"] == "3" && samples["gorush_failure_tasks"] == "1")
        #expect(text.contains("# TYPE gorush_busy_workers gauge") && text.contains("herald_api_requests_total"))
    }

    /// gorush's sync mode: the answer waits for the jobs' outcomes in the job-status index (written here as a worker's
    /// completion writes it: token -> the entry as JSON) and carries the failed deliveries in `logs`; at its deadline
    /// it answers with what it has, the rest under `pending`; without the index, sync is refused before queueing.
    @Test func syncModeAnswersWithTheOutcomesOrSaysWhatIsPending() throws {
        let redis = try RedisServer()
        let plain = try start(redis)
        let body = #"{"sync": true, "notifications": [{"notif_id": "s-1", "tokens": ["\#(APIProcess.token)"], "platform": 1, "message": "hi"}, {"notif_id": "s-2", "tokens": ["fcm-aaaaaaaa"], "platform": 2, "message": "hi"}]}"#
        let unavailable = try post(plain, body)
        #expect(unavailable.status == 400 && unavailable.body["reason"] as? String == "sync_unavailable", "\(unavailable.body)")
        #expect(try drain(redis).isEmpty)

        let api = try APIProcess(redisURL: redis.url, apps: [APIProcess.shopApp, Self.fcmApp].joined(separator: ","),
                                 sections: #""results": {"index_ttl_seconds": 60}"#)
        let waiting = try ChildProcess(name: "curl", executable: "/usr/bin/curl", arguments: [
            "-s", "--max-time", "60", "-H", "Content-Type: application/json", "--data-binary", body, api.url + "api/push?sync_timeout_ms=30000"])
        defer { _ = waiting.stop(grace: 1) }
        let client = try BlockingRedis(url: try RedisURL(parsing: redis.url))
        defer { client.close() }
        #expect(waitUntil(seconds: 20) { ((try? client.command(["LLEN", "herald:queue"]).int) ?? 0) == 2 })
        // The APNs job delivered, the FCM job's token dropped: the worker's entries.
        _ = try client.command(["HSET", "herald:result:s-1", APIProcess.token,
                                #"{"stream_id":"1-0","queue":"herald:queue","id":"s-1","outcome":"delivered","status":"200","token":"\#(APIProcess.token)","attempt":"1","worker":"w"}"#])
        #expect(waiting.isRunning, "the answer came before every outcome: \(waiting.output)")
        _ = try client.command(["HSET", "herald:result:s-2.aaaaaaaa", "fcm-aaaaaaaa",
                                #"{"stream_id":"2-0","queue":"herald:queue","id":"s-2.aaaaaaaa","outcome":"token_dropped","status":"404","reason":"UNREGISTERED","token":"fcm-aaaaaaaa","attempt":"1","worker":"w"}"#])
        #expect(waiting.waitForExit(seconds: 30) == 0)
        let answer = jsonObject(waiting.output)
        let logs = answer["logs"] as? [[String: Any]] ?? []
        #expect(answer["success"] as? String == "ok" && answer["counts"] as? Int == 2 && (answer["pending"] as? [Any])?.isEmpty == true, "\(answer)")
        #expect(logs.count == 1 && logs.first?["platform"] as? String == "android" && logs.first?["token"] as? String == "fcm-aaaaaaaa"
            && (logs.first?["error"] as? String ?? "").contains("UNREGISTERED") && logs.first?["notif_id"] as? String == "s-2", "\(logs)")

        // No outcome by the deadline: the answer says which devices are still pending.
        let (status, text) = try curl(["-H", "Content-Type: application/json", "--data-binary",
                                       #"{"notifications": [{"notif_id": "s-3", "tokens": ["\#(APIProcess.token)"], "platform": 1, "message": "hi"}]}"#,
                                       api.url + "api/push?sync=true&sync_timeout_ms=200"])
        let late = jsonObject(text)
        let pending = late["pending"] as? [[String: Any]] ?? []
        #expect(status == 200 && (late["logs"] as? [Any])?.isEmpty == true, "\(text)")
        #expect(pending.count == 1 && pending.first?["id"] as? String == "s-3" && pending.first?["platform"] as? String == "ios", "\(text)")
        // More jobs than a sync request waits for: refused before queueing.
        _ = try drain(redis)
        let many = (0...1000).map { "\"fcm-\($0)\"" }.joined(separator: ",")
        let tooLarge = try post(api, #"{"sync": true, "notifications": [{"tokens": [\#(many)], "platform": 2, "message": "hi"}]}"#)
        #expect(tooLarge.status == 400 && tooLarge.body["reason"] as? String == "sync_too_large", "\(tooLarge.body)")
        #expect(try drain(redis).isEmpty)
        // Its own route label: waiting for deliveries is not the door's latency (HeraldAPISlow).
        let metrics = try curl([api.url + "metrics"]).body
        #expect(metrics.contains(#"herald_api_requests_total{route="/api/push sync",status="200"} 2"#), "\(metrics)")
    }
}

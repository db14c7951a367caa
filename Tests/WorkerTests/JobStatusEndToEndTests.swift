import Foundation
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEnd {
    /// Issue 25, items 4, 6 and 7, end to end: jobs posted to `herald api` over two shards, a worker with the
    /// result index on (`results.index_ttl_seconds`) and the simulators. `GET /v1/jobs/<id>` answers each job's
    /// latest entry per token from its own shard, within the key's apps; `validate_only` jobs end `validated` (FCM's
    /// as FCM's own dry run, APNs's never sent); and every entry the run wrote matches schemas/result.schema.json.
    @Suite struct JobStatus {
        static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

        @Test(.timeLimit(.minutes(2)))
        func theAPIAnswersEachJobsLatestEntriesPerTokenAndValidateOnlyJobsEndValidated() throws {
            let faults = MockFaultScript(seed: 25, rules: [
                MockFaultRule(fate: .unregistered, tokenPrefix: "dead"),
                MockFaultRule(fate: .failFirst, tokenPrefix: "e5", status: 500, reason: "InternalServerError", count: 1),
            ])
            let world = try EndToEndWorld(faults: faults, fcmFaults: MockFCMFaultScript(rules: []))
            defer { world.shutdown(); world.removeFiles() }
            let path = try world.writeConfig(worker: ["idempotency_window_seconds": 3600, "flush_interval_ms": 5], redis: ["shards": 2])
            var config = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
            config["results"] = ["index_ttl_seconds": 60]
            config["api"] = ["keys": [["name": "all", "sha256": try sha256Hex("key-all")],
                                      ["name": "android", "sha256": try sha256Hex("key-android"), "apps": ["android"]]]]
            try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: path))
            // Jobs the API takes under key-all carry `<its tenant>/<id>` in Redis and in the results (issue 51); the
            // ones pushed straight to Redis (v-bad, st-rejected) their own id.
            let tenant = String(try sha256Hex("herald api tenant\n" + (try sha256Hex("key-all"))).prefix(16))
            let direct: Set<String> = ["v-bad", "st-rejected"]
            func stored(_ id: String) -> String { direct.contains(id) ? id : tenant + "/" + id }
            let port = freeLoopbackPort()
            let api = try ChildProcess(name: "api", executable: world.herald, arguments: ["api", "--config", path, "--listen", "127.0.0.1:\(port)"])
            defer { _ = api.stop(grace: 5) }
            #expect(waitUntil(seconds: 20) { api.output.contains("api: ") || !api.isRunning }, "\(api.output)")

            let ok = deviceToken(prefix: "0c", index: 1), retried = deviceToken(prefix: "e5", index: 2), dead = deviceToken(prefix: "dead", index: 3)
            func apns(_ id: String, token: String, extra: String = "") -> String {
                #"{"id":"\#(id)","token":"\#(token)"\#(extra),"payload":{"aps":{"alert":"status"}}}"#
            }
            let inAnHour = Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000
            let fcmMessage = #""message":{"token":"fcm-status-token","notification":{"title":"t"}}"#
            let jobs = [
                apns("st-ok", token: ok), apns("st-retried", token: retried), apns("st-dead", token: dead),
                #"{"id":"st-multi","tokens":["\#(ok)","\#(retried)","\#(dead)"],"payload":{"aps":{"alert":"many"}}}"#,
                #"{"id":"st-fcm","platform":"fcm",\#(fcmMessage)}"#,
                // Validate only: FCM's dry run, APNs's local checks only (even with a deliver_at ahead), a multicast's per token.
                #"{"id":"v-fcm","platform":"fcm","validate_only":true,\#(fcmMessage)}"#,
                apns("v-apns", token: deviceToken(prefix: "0d", index: 4), extra: #","validate_only":true,"deliver_at":\#(inAnHour)"#),
                #"{"id":"v-multi","validate_only":true,"tokens":["\#(deviceToken(prefix: "0d", index: 5))","\#(deviceToken(prefix: "0d", index: 6))"],"payload":{"aps":{"alert":"x"}}}"#,
                // A copy of st-ok: its `duplicate` entry stays out of the index.
                apns("st-ok", token: ok),
                // Waits for its time, until `herald scheduled cancel` ends it.
                apns("st-later", token: ok, extra: #","deliver_at":\#(inAnHour)"#),
            ]
            let posted = try post(port, "/v1/jobs", "{\"jobs\":[\(jobs.joined(separator: ","))]}", key: "key-all")
            #expect(posted.status == 202, "\(posted.body)")
            // Refused at the door (the API checks as the worker does), so pushed straight to the shards' queues:
            // a validate-only job whose message FCM's rules refuse, one that is not JSON.
            let shards = try QueueShards(basePrefix: "herald", prefixes: QueueShards.defaultPrefixes(prefix: "herald", count: 2))
            let bad = [("v-bad", #"{"id":"v-bad","platform":"fcm","validate_only":true,"message":{"token":"x","topic":"news"}}"#),
                       ("st-rejected", #"{"id":"st-rejected","token":"zz","payload":{}}"#)]
            for (id, job) in bad {
                try world.push([Array(job.utf8)], queue: shards.shards[shards.shard(forJobID: id)].queues[0])
            }
            try world.startWorker(id: "status-1", config: path)

            // Terminal per job, and per token for the multicasts; plus the one duplicate.
            let ledger = ResultsLedger(streams: shards.shards.map(\.keys.results)) { try world.connectRedis() }
            // st-ok, st-retried, st-dead, st-fcm, v-fcm, v-apns, v-bad, st-rejected, the st-ok copy, 3 + 2 multicast tokens.
            let terminal = 14
            #expect(try world.waitForTerminal(terminal, in: ledger, seconds: 40), "\(ledger.terminalByOutcome)\n\(world.workerLogs())")
            usleep(300_000)
            ledger.poll()

            // The scheduled one: no entry while it waits, then cancelled by the operator's tool, into its index too.
            let laterShard = shards.shards[shards.shard(forJobID: stored("st-later"))]
            let redisClient = try world.connectRedis()
            #expect(waitUntil(seconds: 10) { ((try? redisClient.command(["ZCARD", laterShard.keys.retry]).int) ?? 0) == 1 })
            #expect(try get(port, "/v1/jobs/st-later", key: "key-all").status == 404)
            let cancel = try world.runHerald(["scheduled", "cancel", "--config", path, "--id", stored("st-later")])
            #expect(cancel.status == 0, "\(cancel.output)")
            #expect(try world.waitForTerminal(terminal + 1, in: ledger, seconds: 10))

            let outcome: (String, String?) -> String? = { id, token in
                ledger.entries.last { $0.id == stored(id) && $0.outcome != "duplicate" && (token == nil || $0.fields["token"] == token) }?.outcome
            }
            #expect(outcome("v-fcm", nil) == "validated")
            #expect(outcome("v-apns", nil) == "validated")
            #expect(outcome("v-bad", nil) == "rejected")
            #expect(outcome("st-later", nil) == "cancelled")
            #expect(ledger.entries.filter { $0.id == stored("v-multi") }.map(\.outcome) == ["validated", "validated"])
            // FCM got the dry run (and only it asked so); APNs never saw a validate-only job.
            let messages = world.fcm!.acceptedMessages()
            #expect(messages.filter(\.validateOnly).count == 1, "\(messages)")
            #expect(messages.filter { !$0.validateOnly }.count == 1)
            let apnsTokens = Set(world.simulator.acceptedNotifications().map { $0.token.lowercased() })
            #expect(!apnsTokens.contains { $0.hasPrefix("0d") }, "validate-only jobs reached APNs")
            #expect(apnsTokens.contains(ok))

            // The status of each job: its latest entry per token, as the stream has it, in stream order.
            for id in ["st-ok", "st-retried", "st-dead", "st-multi", "st-fcm", "v-fcm", "v-apns", "v-multi", "v-bad", "st-rejected", "st-later"] {
                let answer = try get(port, "/v1/jobs/\(id)", key: "key-all")
                #expect(answer.status == 200, "\(id): \(answer.body)")
                let results = jsonObject(answer.body)["results"] as? [[String: String]] ?? []
                var latest: [String: StreamEntry] = [:]
                for entry in ledger.entries where entry.id == stored(id) && entry.outcome != "duplicate" { latest[entry.fields["token"] ?? ""] = entry }
                let expected = latest.values.sorted { $0.streamID < $1.streamID }
                #expect(results.map { $0["stream_id"] } == expected.map { Optional($0.streamID) }, "\(id): \(answer.body)")
                #expect(results.map { $0["outcome"] } == expected.map { Optional($0.outcome) })
                // Answered with the id the producer knows, from the shard its stored id routes to.
                #expect(results.allSatisfy { $0["id"] == id && $0["queue"] == shards.shards[shards.shard(forJobID: stored(id))].queues[0] })
            }
            let retriedStatus = jsonObject(try get(port, "/v1/jobs/st-retried", key: "key-all").body)["results"] as? [[String: String]]
            #expect(retriedStatus?.map { $0["outcome"] } == ["delivered"] && retriedStatus?.first?["attempt"] == "2")
            // The provider's message id in `message_id`, beside the fields that carried it before (apns_id, fcm_name).
            let okStatus = (jsonObject(try get(port, "/v1/jobs/st-ok", key: "key-all").body)["results"] as? [[String: String]])?.first ?? [:]
            #expect(!(okStatus["message_id"] ?? "").isEmpty && okStatus["message_id"] == okStatus["apns_id"], "\(okStatus)")
            let fcmStatus = (jsonObject(try get(port, "/v1/jobs/st-fcm", key: "key-all").body)["results"] as? [[String: String]])?.first ?? [:]
            #expect(fcmStatus["message_id"]?.hasPrefix("projects/") == true && fcmStatus["message_id"] == fcmStatus["fcm_name"], "\(fcmStatus)")
            let multi = jsonObject(try get(port, "/v1/jobs/st-multi", key: "key-all").body)["results"] as? [[String: String]] ?? []
            #expect(Dictionary(multi.map { ($0["token"] ?? "", $0["outcome"] ?? "") }, uniquingKeysWith: { a, _ in a })
                    == [ok: "delivered", retried: "delivered", dead: "token_dropped"])

            // The index sits in the id's shard only, with its TTL; unknown ids, other apps' jobs and no key: JSON errors.
            let redis = try world.connectRedis()
            let home = shards.shard(forJobID: stored("st-ok"))
            let ttl = try redis.command(["TTL", shards.shards[home].keys.resultIndex(jobID: stored("st-ok"))]).int ?? -2
            #expect(ttl > 0 && ttl <= 60, "TTL \(ttl)")
            #expect(try redis.command(["EXISTS", shards.shards[1 - home].keys.resultIndex(jobID: stored("st-ok"))]).int == 0)
            let unknown = try get(port, "/v1/jobs/never-pushed", key: "key-all")
            #expect(unknown.status == 404 && (jsonObject(unknown.body)["error"] as? [String: Any])?["code"] as? String == "not_found", "\(unknown.body)")
            #expect(try get(port, "/v1/jobs/st-ok", key: "key-android").status == 404)
            // Not even a job of its app when another key pushed it (issue 51: it answered 200, another tenant's job).
            #expect(try get(port, "/v1/jobs/st-fcm", key: "key-android").status == 404)
            // A job pushed straight to Redis is no tenant's: a key sees it within its apps, as before.
            #expect(try get(port, "/v1/jobs/v-bad", key: "key-android").status == 200)
            #expect(try get(port, "/v1/jobs/st-ok", key: nil).status == 401)

            // Every entry written, and every status answer, matches the published schema (python3-jsonschema).
            let file = world.directory + "/entries.jsonl"
            var lines = ledger.entries.map { String(decoding: try! JSONSerialization.data(withJSONObject: $0.fields), as: UTF8.self) }
            for id in ["st-ok", "st-multi", "v-fcm", "v-bad"] { lines.append(try get(port, "/v1/jobs/\(id)", key: "key-all").body) }
            try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
            let check = try runProgram("python3", [Self.root + "/Tests/APITests/Fixtures/check_result_schema.py", "schemas/result.schema.json", file],
                                       directory: Self.root)
            #expect(check.status == 0, "\(check.output)")
            let seen = Set((check.output.split(separator: "\n").first?.split(separator: " ").last ?? "").split(separator: ",").map(String.init))
            #expect(seen.isSuperset(of: ["delivered", "retrying", "token_dropped", "rejected", "duplicate", "validated", "cancelled"]), "\(check.output)")
        }

        /// Issue 25's done-when: a SIGKILL of `herald api` under load loses no acknowledged job (every id answered 202
        /// ends with a terminal outcome, through a worker and the simulator) and delivers no refused one.
        @Test(.timeLimit(.minutes(2)))
        func aSIGKILLOfTheAPIUnderLoadLosesNoAcknowledgedJobAndDeliversNoRefusedOne() throws {
            let world = try EndToEndWorld()
            defer { world.shutdown(); world.removeFiles() }
            let path = try world.writeConfig()
            try world.startWorker(id: "kill-api-1", config: path)
            let port = freeLoopbackPort()
            let api = try ChildProcess(name: "api", executable: world.herald, arguments: ["api", "--config", path, "--listen", "127.0.0.1:\(port)"])
            defer { _ = api.stop(grace: 2) }
            #expect(waitUntil(seconds: 20) { api.output.contains("api: ") || !api.isRunning }, "\(api.output)")
            let acknowledged = world.directory + "/acked.txt"
            let loader = Self.root + "/Tests/APITests/Fixtures/api_load.py"
            let load = try ChildProcess(name: "api-load", executable: which("python3")!, arguments: [loader, "http://127.0.0.1:\(port)/v1/jobs", acknowledged])
            defer { _ = load.stop(grace: 2) }
            func acked() -> Set<String> {
                Set(((try? String(contentsOfFile: acknowledged, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init))
            }
            #expect(waitUntil(seconds: 30) { acked().count >= 500 }, "\(load.output)")
            api.signal(SIGKILL)
            #expect(waitUntil(seconds: 30) { !load.isRunning }, "the load stops once the API is gone: \(load.output)")
            let answered = acked()
            let ledger = ResultsLedger(redisURL: world.redisURL)
            var ended: Set<String> = []
            let finished = waitUntil(seconds: 60, interval: 0.2) {
                ledger.poll()
                ended = Set(ledger.entries.filter(\.isTerminal).map(\.id))
                return answered.isSubset(of: ended)
            }
            #expect(finished, "acknowledged without a terminal outcome: \(answered.subtracting(ended).count), e.g. \(answered.subtracting(ended).prefix(5))\n\(world.workerLogs())")
            #expect(answered.count >= 500)
            #expect(!ledger.entries.contains { $0.id.hasPrefix("bad-") }, "a refused job reached the worker")
            let delivered = ledger.entries.filter { $0.outcome == "delivered" }.count
            #expect(delivered == Set(ledger.entries.map(\.id)).count, "every job that reached Redis was delivered once: \(ledger.terminalByOutcome)")
            #expect(!world.simulator.acceptedNotifications().contains { $0.token == "nothex" })
        }

        private func request(_ port: Int, _ method: String, _ path: String, body: String = "", key: String?) throws -> (status: Int, body: String) {
            let auth = key.map { "Authorization: Bearer \($0)\r\n" } ?? ""
            let text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\(auth)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
            let answer = try httpExchange(port: port, request: Array(text.utf8))
            return (answer.status, answer.body)
        }

        private func post(_ port: Int, _ path: String, _ body: String, key: String?) throws -> (status: Int, body: String) {
            try request(port, "POST", path, body: body, key: key)
        }

        private func get(_ port: Int, _ path: String, key: String?) throws -> (status: Int, body: String) {
            try request(port, "GET", path, key: key)
        }

        private func sha256Hex(_ text: String) throws -> String {
            let run = try runProgram("sha256sum", [], directory: "/", input: text)
            return String(run.output.prefix(64))
        }

        private func jsonObject(_ text: String) -> [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
        }
    }
}

import Foundation
import HeraldTestSupport
import RedisQueue
import Simulators
import Testing

extension EndToEnd {
    /// Issue 51, item 1: two hostile tenants (two `api.keys`) on one `herald api`, a worker with idempotency and the
    /// job-status index, and the APNs simulator. Tenant B pushes jobs with the ids tenant A uses (a producer id both
    /// choose, and the id the API made for A), on `POST /v1/jobs` and gorush's `POST /api/push`; every job of both
    /// is delivered (none ends `duplicate` against the other's), A's own retry still does, each key's
    /// `GET /v1/jobs/<id>` answers only its own job, and each key's `GET /api/stat/app` counts only its own.
    /// Jobs LPUSHed straight to Redis keep the global ids they always had.
    @Suite struct Tenancy {
        @Test(.timeLimit(.minutes(2)))
        func twoHostileTenantsHaveNoEffectOnEachOtherOnAnyRoute() throws {
            let world = try EndToEndWorld()
            defer { world.shutdown(); world.removeFiles() }
            let path = try world.writeConfig(worker: ["idempotency_window_seconds": 3600, "flush_interval_ms": 5], redis: ["shards": 2])
            let hashA = try sha256("tenant-a-secret"), hashB = try sha256("tenant-b-secret")
            var config = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
            config["results"] = ["index_ttl_seconds": 60]
            config["api"] = ["keys": [["name": "a", "sha256": hashA], ["name": "b", "sha256": hashB]]]
            try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: path))
            // The tenant ids as docs/api.md defines them, worked out here with sha256sum.
            let tenantA = String(try sha256("herald api tenant\n" + hashA).prefix(16)), tenantB = String(try sha256("herald api tenant\n" + hashB).prefix(16))
            let port = freeLoopbackPort()
            let api = try ChildProcess(name: "api", executable: world.herald, arguments: ["api", "--config", path, "--listen", "127.0.0.1:\(port)"])
            defer { _ = api.stop(grace: 5) }
            #expect(waitUntil(seconds: 20) { api.output.contains("api: ") || !api.isRunning }, "\(api.output)")
            try world.startWorker(id: "tenancy-1", config: path)
            let shards = try QueueShards(basePrefix: "herald", prefixes: QueueShards.defaultPrefixes(prefix: "herald", count: 2))
            let ledger = ResultsLedger(streams: shards.shards.map(\.keys.results)) { try world.connectRedis() }
            var token = 0
            var tokensOf: [String: [String]] = ["a": [], "b": []]
            func job(_ tenant: String, id: String?) -> String {
                token += 1
                let device = deviceToken(prefix: tenant == "a" ? "0a" : "0b", index: token)
                tokensOf[tenant]!.append(device)
                return #"{\#(id.map { #""id":"\#($0)","# } ?? "")"token":"\#(device)","payload":{"aps":{"alert":"hi"}}}"#
            }
            func call(_ method: String, _ path: String, _ body: String = "", key: String?, idempotencyKey: String? = nil) throws -> (status: Int, json: [String: Any]) {
                let head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + (key.map { "X-API-Key: \($0)\r\n" } ?? "")
                    + (idempotencyKey.map { "Idempotency-Key: \($0)\r\n" } ?? "")
                let answer = try httpExchange(port: port, request: Array((head + "Content-Length: \(body.utf8.count)\r\n\r\n" + body).utf8))
                return (answer.status, (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [String: Any] ?? [:])
            }
            func acceptedIDs(_ answer: (status: Int, json: [String: Any])) -> [String] {
                (answer.json["accepted"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            }
            func settle(_ terminal: Int) throws {
                #expect(try world.waitForTerminal(terminal, in: ledger, seconds: 30), "\(ledger.terminalByOutcome)\n\(world.workerLogs())")
            }
            let a = "tenant-a-secret", b = "tenant-b-secret"

            // A: a producer id of its own and one the API makes: random, 128 bits, nothing like a counter.
            let first = try call("POST", "/v1/jobs", "{\"jobs\":[\(job("a", id: "order-1")),\(job("a", id: nil))]}", key: a)
            #expect(first.status == 202, "\(first.json)")
            let madeID = acceptedIDs(first).last ?? ""
            #expect(acceptedIDs(first).first == "order-1")
            #expect(madeID.range(of: "^api-[0-9a-f]{32}$", options: .regularExpression) != nil, "\(madeID)")
            let idempotent = try call("POST", "/v1/jobs", job("a", id: nil), key: a, idempotencyKey: "idem-1")
            #expect(idempotent.status == 202 && acceptedIDs(idempotent) == ["idem-1"], "\(idempotent.json)")
            try settle(3)

            // B, hostile: A's producer id, the id the API gave A, A's Idempotency-Key, a gorush push with A's next
            // notif_id, and the id A will use next; all its own jobs, every one delivered.
            let hostile = try call("POST", "/v1/jobs", "{\"jobs\":[\(job("b", id: "order-1")),\(job("b", id: madeID)),\(job("b", id: "order-2"))]}", key: b)
            #expect(hostile.status == 202 && acceptedIDs(hostile) == ["order-1", madeID, "order-2"], "\(hostile.json)")
            let keyed = try call("POST", "/v1/jobs", job("b", id: nil), key: b)
            #expect(keyed.status == 202, "\(keyed.json)")
            #expect(try call("POST", "/v1/jobs", job("b", id: nil), key: b, idempotencyKey: "idem-1").status == 202)
            token += 1
            let gorushB = [deviceToken(prefix: "0b", index: token), deviceToken(prefix: "0b", index: token + 1)]
            tokensOf["b"]! += gorushB
            let pushB = try call("POST", "/api/push", #"{"notifications":[{"notif_id":"order-3","platform":1,"tokens":["\#(gorushB[0])","\#(gorushB[1])"],"message":"b"}]}"#, key: b)
            #expect(pushB.status == 200 && pushB.json["counts"] as? Int == 2, "\(pushB.json)")
            try settle(3 + 5 + 2)

            // A again: the id B used first is still A's to use; A's own retry of order-1 is a duplicate, within A.
            token += 2
            let gorushA = deviceToken(prefix: "0a", index: token)
            tokensOf["a"]!.append(gorushA)
            let second = try call("POST", "/v1/jobs", "{\"jobs\":[\(job("a", id: "order-2"))]}", key: a)
            #expect(second.status == 202, "\(second.json)")
            let retry = #"{"id":"order-1","token":"\#(tokensOf["a"]![0])","payload":{"aps":{"alert":"hi"}}}"#
            #expect(try call("POST", "/v1/jobs", retry, key: a).status == 202)
            // In gorush's sync mode: the answer waits for the outcome of A's job, read by its scoped id.
            let pushA = try call("POST", "/api/push?sync_timeout_ms=8000", #"{"sync":true,"notifications":[{"notif_id":"order-3","platform":1,"tokens":["\#(gorushA)"],"message":"a"}]}"#, key: a)
            #expect(pushA.status == 200 && pushA.json["counts"] as? Int == 1 && (pushA.json["pending"] as? [Any])?.isEmpty == true, "\(pushA.json)")
            // Straight to Redis, as producers without the API push: the same id twice is one job, as it always was.
            let direct = #"{"id":"direct-1","token":"\#(deviceToken(prefix: "0d", index: 1))","payload":{"aps":{"alert":"d"}}}"#
            try world.push([Array(direct.utf8), Array(direct.utf8)], queue: shards.shards[shards.shard(forJobID: "direct-1")].queues[0])
            try settle(3 + 5 + 2 + 3 + 2)
            usleep(300_000)
            ledger.poll()

            // Idempotency and delivery: every job of both tenants delivered once, the only duplicates A's own retry
            // and the direct copy; the results carry the scoped ids.
            let delivered = Set(world.simulator.acceptedNotifications().map { $0.token.lowercased() })
            for (tenant, tokens) in tokensOf { #expect(Set(tokens.map { $0.lowercased() }).isSubset(of: delivered), "\(tenant): \(ledger.terminalByOutcome)") }
            let duplicates = ledger.entries.filter { $0.outcome == "duplicate" }.map(\.id).sorted()
            #expect(duplicates == ["direct-1", tenantA + "/order-1"].sorted(), "\(duplicates)")
            let ids = Set(ledger.entries.map(\.id))
            #expect(ids.isSuperset(of: [tenantA + "/order-1", tenantB + "/order-1", tenantA + "/order-2", tenantB + "/order-2",
                                        tenantA + "/" + madeID, tenantB + "/" + madeID, tenantA + "/idem-1", tenantB + "/idem-1", "direct-1"]), "\(ids)")

            // Status: each key its own job under the same id, with the id its producer knows; another's is unknown.
            for (key, tenant) in [(a, "a"), (b, "b")] {
                let status = try call("GET", "/v1/jobs/order-1", key: key)
                let results = status.json["results"] as? [[String: Any]] ?? []
                #expect(status.status == 200 && status.json["id"] as? String == "order-1", "\(status.json)")
                #expect(results.count == 1 && results.first?["id"] as? String == "order-1" && results.first?["outcome"] as? String == "delivered", "\(results)")
                #expect((results.first?["token"] as? String)?.hasPrefix(tenant == "a" ? "0a" : "0b") == true, "\(tenant) sees another's job: \(results)")
            }
            let made = try call("GET", "/v1/jobs/\(madeID)", key: a)
            #expect(((made.json["results"] as? [[String: Any]])?.first?["token"] as? String)?.hasPrefix("0a") == true, "\(made.json)")
            let keyedB = acceptedIDs(keyed).first ?? ""
            let unknown = try call("GET", "/v1/jobs/never-pushed", key: a)
            let othersOnly = try call("GET", "/v1/jobs/\(keyedB)", key: a)
            // Another tenant's job is answered as an unknown one is.
            #expect(othersOnly.status == 404 && unknown.status == 404)
            #expect((othersOnly.json["error"] as? [String: Any])?["code"] as? String == "not_found")
            #expect(try call("GET", "/v1/jobs/\(keyedB)", key: b).status == 200)
            // The scoped id is not a way in either: `<tenant B>/<id>` asked by A is A's own `<tenant A>/<tenant B>/<id>`.
            #expect(try call("GET", "/v1/jobs/\(tenantB)%2F\(keyedB)", key: a).status == 404)
            #expect(try call("GET", "/v1/jobs/order-1", key: nil).status == 401)

            // Stats: each key its own deliveries and submissions (A: 5 delivered, 1 by gorush; B: 7, 2 by gorush, in
            // one gorush job each).
            for (key, deliveredCount, submitted) in [(a, 5, 1), (b, 7, 1)] {
                let stat = try call("GET", "/api/stat/app", key: key)
                #expect(stat.status == 200, "\(stat.json)")
                #expect(stat.json["success_tasks"] as? Int == deliveredCount && (stat.json["ios"] as? [String: Any])?["push_success"] as? Int == deliveredCount,
                        "\(stat.json)")
                #expect(stat.json["submitted_tasks"] as? Int == submitted, "\(stat.json)")
            }
        }

        private func sha256(_ text: String) throws -> String {
            String(try runProgram("sha256sum", [], input: text).output.prefix(64))
        }
    }
}

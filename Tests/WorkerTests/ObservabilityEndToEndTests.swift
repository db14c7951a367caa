import DeviceRegistry
import Foundation
import Glibc
import HeraldTestSupport
import RedisQueue
import Simulators
import Testing
import Worker

extension EndToEnd {
    /// The observability surface with the real consumers: Debian's Prometheus scraping a worker, the dashboard
    /// and a `herald api` that jobs went through, and headless Chromium reading the status page, both checked
    /// against Redis.
    @Suite struct Observability {
        static let fates = MockFaultScript(seed: 12, latencyMs: MockLatency(min: 20, max: 60), rules: [
            MockFaultRule(fate: .unregistered, tokenPrefix: "dead"),
            MockFaultRule(fate: .failFirst, tokenPrefix: "e5", status: 500, reason: "InternalServerError", count: 1),
            MockFaultRule(fate: .otherTopic, tokenPrefix: "bad0"),
            // Slow answers, so a drain after SIGTERM lasts long enough to be seen.
            MockFaultRule(fate: .delay, tokenPrefix: "5107", latencyMs: MockLatency(milliseconds: 1500)),
        ])

        /// Jobs of mixed fate: delivered, dropped token, failed, a 500 then delivered, and a few malformed.
        static func mixedJobs(_ count: Int, tag: String) -> [[UInt8]] {
            (0..<count).map { i in
                if i % 50 == 7 { return Array("not json \(i)".utf8) }
                let prefix = ["00", "00", "00", "dead", "e5", "bad0"][i % 6]
                return jobBytes(id: "\(tag)-\(i)", token: deviceToken(prefix: prefix, index: i))
            }
        }

        static func outcomeCounts(_ ledger: ResultsLedger) -> [String: Int] {
            var counts: [String: Int] = [:]
            for entry in ledger.entries { counts[entry.outcome, default: 0] += 1 }
            return counts
        }

        /// The values of a Prometheus instant query, by the given label.
        static func query(_ port: Int, _ promql: String, by label: String) throws -> [String: Double] {
            let encoded = promql.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? promql
            let answer = try httpGet(port: port, "/api/v1/query?query=\(encoded)")
            guard answer.status == 200, let object = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any],
                  let data = object["data"] as? [String: Any], let result = data["result"] as? [[String: Any]] else { return [:] }
            var values: [String: Double] = [:]
            for series in result {
                let labels = series["metric"] as? [String: String] ?? [:]
                if let pair = series["value"] as? [Any], pair.count == 2, let text = pair[1] as? String, let value = Double(text) {
                    values[labels[label] ?? ""] = value
                }
            }
            return values
        }

        /// Every target of deploy/grafana/herald.json as Prometheus would get it from Grafana: the template
        /// variables at "All" (`.*`) and `$__rate_interval` at a window a few 1 s scrapes fill.
        static func grafanaQueries() throws -> [(panel: String, query: String)] {
            let data = try Data(contentsOf: URL(fileURLWithPath: DeployFiles.path("deploy/grafana/herald.json")))
            let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let panels = try #require(dashboard["panels"] as? [[String: Any]])
            var queries: [(panel: String, query: String)] = []
            for panel in panels where panel["type"] as? String != "row" {
                for target in panel["targets"] as? [[String: Any]] ?? [] {
                    guard let expr = target["expr"] as? String else { continue }
                    let query = expr.replacingOccurrences(of: "$__rate_interval", with: "30s")
                        .replacingOccurrences(of: "$app", with: ".*").replacingOccurrences(of: "$platform", with: ".*")
                    queries.append((panel["title"] as? String ?? "?", query))
                }
            }
            return queries
        }

        /// POST `body` (JSON) to 127.0.0.1:`port`, the connection closed after the answer.
        static func post(port: Int, _ path: String, _ body: String) throws -> (status: Int, headers: String, body: String) {
            let head = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
            return try httpExchange(port: port, request: Array((head + body).utf8))
        }

        /// The number of series an instant query returns; throws when Prometheus refuses it (a syntax error).
        static func seriesCount(_ port: Int, _ promql: String) throws -> Int {
            let encoded = promql.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? promql
            let answer = try httpGet(port: port, "/api/v1/query?query=\(encoded)")
            guard answer.status == 200, let object = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any],
                  object["status"] as? String == "success", let data = object["data"] as? [String: Any],
                  let result = data["result"] as? [[String: Any]] else { throw TestSupportError("prometheus refused \(promql): \(answer.body)") }
            return result.count
        }

        @Test(.timeLimit(.minutes(3)))
        func prometheusScrapesWorkerAndDashboardAgreesWithRedisAndAnswersEveryGrafanaPanel() throws {
            let prometheus = try #require(which("prometheus"), "Debian's prometheus is not installed (run scripts/setup)")
            let world = try EndToEndWorld(faults: Self.fates)
            defer { world.shutdown(); world.removeFiles() }
            let total = 1_200
            try world.push(Self.mixedJobs(total, tag: "prom"))
            let workerPort = freeLoopbackPort()
            let config = try world.writeConfig(worker: ["max_in_flight": 300], registry: ["enabled": true], metricsListen: "127.0.0.1:\(workerPort)")
            // Registered devices, one of whose tokens APNs answers gone: the registry row's two panels have figures.
            // Registered a day back, before the simulator's 410 timestamp (else the device would rightly be kept).
            let registry = DeviceRegistry(redis: try BlockingRedis(url: RedisURL(parsing: world.redisURL)), shards: try QueueShards(single: QueueKeys())) {
                Int64(Date().timeIntervalSince1970 * 1000) - 86_400_000
            }
            for index in [0, 3] {
                try registry.register(DeviceID(app: world.apps[0].name, platform: .apns, token: deviceToken(prefix: ["00", "00", "00", "dead"][index], index: index)),
                                      DeviceAttributes(owner: "u\(index)"))
            }
            // A paced campaign to one of them, left open (no herald scheduler runs): the Campaigns row has figures.
            try world.createCampaign(
                #"{"id": "panels", "app": "\#(world.apps[0].name)", "audience": {"user": "u0"}, "notification": {"title": "t", "body": "b"}, "rate_per_second": 1}"#)
            let worker = try world.startWorker(id: "prom-1", config: config)
            let dashboardPort = freeLoopbackPort()
            let dashboard = try ChildProcess(name: "dashboard", executable: world.herald,
                                             arguments: ["dashboard", "--redis", world.redisURL, "--listen", "127.0.0.1:\(dashboardPort)"])
            defer { dashboard.stop() }
            // A herald api on the same configuration: jobs go through it too, so its row of the Grafana dashboard
            // has requests, refusals and latencies to show.
            let apiPort = freeLoopbackPort()
            let api = try ChildProcess(name: "api", executable: world.herald, arguments: ["api", "--config", config, "--listen", "127.0.0.1:\(apiPort)"])
            defer { api.stop() }
            #expect(waitUntil(seconds: 30, interval: 0.2) { (try? httpGet(port: apiPort, "/readyz", timeoutSeconds: 2).status) == 200 },
                    "herald api not ready: \(api.output)")
            let viaAPI = 100
            for batch in 0..<2 {
                let jobs = (0..<(viaAPI / 2)).map { String(decoding: jobBytes(id: "api-\(batch)-\($0)", token: deviceToken(prefix: "00", index: 5_000 + batch * 100 + $0)), as: UTF8.self) }
                let answer = try Self.post(port: apiPort, "/v1/jobs", "{\"jobs\":[\(jobs.joined(separator: ","))]}")
                #expect(answer.status == 202, "\(answer)")
            }
            // A request the API refuses (400: `jobs` is no list) and one whose job it refuses (422): the error ratio's 4xx.
            #expect(try Self.post(port: apiPort, "/v1/jobs", #"{"jobs":5}"#).status == 400)
            #expect(try Self.post(port: apiPort, "/v1/jobs", #"{"app":"nonexistent","token":"00","payload":{"aps":{}}}"#).status == 422)
            let prometheusPort = freeLoopbackPort()
            let promConfig = world.directory + "/prometheus.yml"
            try """
            global:
              scrape_interval: 1s
              scrape_timeout: 1s
            scrape_configs:
              - job_name: herald-worker
                static_configs: [{targets: ['127.0.0.1:\(workerPort)']}]
              - job_name: herald-dashboard
                static_configs: [{targets: ['127.0.0.1:\(dashboardPort)']}]
              - job_name: herald-api
                static_configs: [{targets: ['127.0.0.1:\(apiPort)']}]
            """.write(toFile: promConfig, atomically: true, encoding: .utf8)
            let server = try ChildProcess(name: "prometheus", executable: prometheus, arguments: [
                "--config.file=\(promConfig)", "--storage.tsdb.path=\(world.directory)/prometheus-data",
                "--web.listen-address=127.0.0.1:\(prometheusPort)", "--log.level=warn",
            ])
            defer { server.stop() }

            let ledger = ResultsLedger(redisURL: world.redisURL)
            let finished = try ledger.waitForTerminal(total + viaAPI, seconds: 90) {
                if !worker.isRunning { throw TestSupportError("worker exited:\n\(world.workerLogs())") }
            }
            #expect(finished, "\(ledger.terminalCount) of \(total + viaAPI) finished:\n\(world.workerLogs(lastLines: 20))")
            // Results are counted when built and land in the stream a flush later: let both settle.
            usleep(500_000)
            ledger.poll()
            let expected = Self.outcomeCounts(ledger).mapValues(Double.init)
            #expect(Set(expected.keys).isSuperset(of: ["delivered", "retrying", "token_dropped", "failed", "rejected"]), "\(expected)")

            // Prometheus answers 503 until its storage is up; a loaded machine may take a while.
            #expect(waitUntil(seconds: 60, interval: 0.5) { (try? httpGet(port: prometheusPort, "/-/ready", timeoutSeconds: 5).status) == 200 },
                    "prometheus not ready: \(server.output)")
            var scraped: [String: Double] = [:]
            let agreed = waitUntil(seconds: 60, interval: 0.5) {
                #expect(server.isRunning, "prometheus exited: \(server.output)")
                scraped = (try? Self.query(prometheusPort, "sum by (outcome) (herald_results_total{job=\"herald-worker\"})", by: "outcome"))?
                    .filter { $0.value > 0 } ?? [:]
                return scraped == expected
            }
            #expect(agreed, "prometheus saw \(scraped), the results stream holds \(expected)\n\(server.output)")
            // The latest scrape of each succeeded (a sanitized build may miss the odd one: wait for a good one).
            var up: [String: Double] = [:]
            let bothUp = waitUntil(seconds: 30, interval: 0.5) {
                up = (try? Self.query(prometheusPort, "up", by: "job")) ?? [:]
                return up["herald-worker"] == 1 && up["herald-dashboard"] == 1 && up["herald-api"] == 1
            }
            #expect(bothUp, "\(up)")
            // The queue-wide families come from the dashboard, once.
            var length: [String: Double] = [:]
            let lengthSeen = waitUntil(seconds: 30, interval: 0.5) {
                length = (try? Self.query(prometheusPort, "herald_results_stream_length", by: "job")) ?? [:]
                return length["herald-dashboard"] == Double(ledger.entries.count)
            }
            #expect(lengthSeen, "\(length) vs \(ledger.entries.count) entries")
            var depth: [String: Double] = [:]
            #expect(waitUntil(seconds: 30, interval: 0.5) {
                depth = (try? Self.query(prometheusPort, "herald_queue_length", by: "queue")) ?? [:]
                return depth["herald:queue"] == 0
            }, "\(depth)")
            #expect(waitUntil(seconds: 30, interval: 0.5) {
                (try? Self.query(prometheusPort, "herald_workers_live", by: "job"))?["herald-dashboard"] == 1
            })
            // The API's own figures, as its row reads them: the jobs and requests this run sent it, not only scrapes.
            var apiJobs: [String: Double] = [:]
            #expect(waitUntil(seconds: 30, interval: 0.5) {
                apiJobs = (try? Self.query(prometheusPort, "sum by (outcome) (herald_api_jobs_total{job=\"herald-api\"})", by: "outcome")) ?? [:]
                return apiJobs["accepted"] == Double(viaAPI) && apiJobs["refused"] == 1
            }, "\(apiJobs)")
            var apiRequests: [String: Double] = [:]
            #expect(waitUntil(seconds: 30, interval: 0.5) {
                apiRequests = (try? Self.query(prometheusPort, #"herald_api_requests_total{job="herald-api",route="/v1/jobs"}"#, by: "status")) ?? [:]
                return apiRequests == ["202": 2, "400": 1, "422": 1]
            }, "\(apiRequests)")

            // Every query of the Grafana dashboard answers, with at least one series, against what this run scraped.
            let panels = try Self.grafanaQueries()
            #expect(panels.count >= 20, "the dashboard's queries did not parse: \(panels)")
            var silent: [String] = []
            let allAnswer = waitUntil(seconds: 30, interval: 1) {
                silent = panels.filter { (try? Self.seriesCount(prometheusPort, $0.query)).map { $0 == 0 } ?? true }.map { "\($0.panel): \($0.query)" }
                return silent.isEmpty
            }
            #expect(allAnswer, "Grafana panels whose query errs or returns nothing:\n\(silent.joined(separator: "\n"))")

            // Ready while claiming; 503 while draining on SIGTERM (jobs still in flight at the simulator).
            #expect(try httpGet(port: workerPort, "/readyz").status == 200)
            #expect(try httpGet(port: workerPort, "/healthz").status == 200)
            try world.push((0..<20).map { jobBytes(id: "drain-\($0)", token: deviceToken(prefix: "5107", index: $0)) })
            #expect(waitUntil(seconds: 20, interval: 0.01) {
                (try? httpGet(port: workerPort, "/metrics").body)?.contains("\nherald_jobs_in_flight 0\n") == false
            })
            worker.signal(SIGTERM)
            var statuses: [Int] = []
            let sawDraining = waitUntil(seconds: 10, interval: 0.005) {
                guard let status = try? httpGet(port: workerPort, "/readyz", timeoutSeconds: 2).status else { return false }
                statuses.append(status)
                return status == 503
            }
            #expect(sawDraining, "readyz answered \(Set(statuses)) while the worker drained\n\(world.workerLogs())")
            #expect(worker.waitForExit(seconds: 20) == 0)
        }

        /// "Redis down" and "dashboard down" differ: the dashboard's /metrics answers 200 either way, with
        /// `herald_redis_up` saying which, its process and build families kept and the queue families only with Redis.
        @Test(.timeLimit(.minutes(2)))
        func theDashboardStillAnswersMetricsWhenRedisGoesAwayAndSaysSo() throws {
            guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is not built") }
            let redis = try RedisServer()
            var redisStopped = false
            defer { if !redisStopped { redis.stop() } }
            let port = freeLoopbackPort()
            let dashboard = try ChildProcess(name: "dashboard", executable: herald, arguments: ["dashboard", "--redis", redis.url, "--listen", "127.0.0.1:\(port)"])
            defer { dashboard.stop() }
            var page: (status: Int, body: String)? = nil
            #expect(waitUntil(seconds: 20) { page = try? httpGet(port: port, "/metrics", timeoutSeconds: 2); return page?.body.contains("\nherald_redis_up 1\n") == true },
                    "\(page?.body ?? "no answer")\n\(dashboard.output)")
            #expect(page?.body.contains("herald_queue_length{") == true)
            redis.stop()
            redisStopped = true
            #expect(waitUntil(seconds: 20) { page = try? httpGet(port: port, "/metrics", timeoutSeconds: 4); return page?.body.contains("\nherald_redis_up 0\n") == true },
                    "\(page?.body ?? "no answer")")
            #expect(page?.status == 200)
            #expect(page?.body.contains("herald_queue_length") == false, "no queue families without Redis: \(page?.body ?? "")")
            for family in ["process_resident_memory_bytes ", "process_cpu_seconds_total ", "herald_build_info{version=\"\(BuildInfo.version)\""] {
                #expect(page?.body.contains(family) == true, "\(family) missing: \(page?.body ?? "")")
            }
        }

        @Test(.timeLimit(.minutes(3)))
        func theStatusPageInChromiumShowsMovingNumbersThatMatchRedis() throws {
            let python = "/usr/bin/python3"
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("scripts/dashboard_check.py").path
            #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "chromium is not installed (run scripts/setup)")
            #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver"), "chromium-driver is not installed (run scripts/setup)")
            let world = try EndToEndWorld(faults: Self.fates)
            defer { world.shutdown(); world.removeFiles() }
            let total = 2_000
            try world.push(Self.mixedJobs(total, tag: "page"))
            let dashboardPort = freeLoopbackPort()
            let dashboard = try ChildProcess(name: "dashboard", executable: world.herald, arguments: [
                "dashboard", "--redis", world.redisURL, "--listen", "127.0.0.1:\(dashboardPort)", "--lease-seconds", "3",
            ])
            defer { dashboard.stop() }
            #expect(waitUntil(seconds: 20) { (try? httpGet(port: dashboardPort, "/healthz").status) == 200 })
            let screenshot = world.directory + "/dashboard.png"
            let browser = try ChildProcess(name: "dashboard-check", executable: python, arguments: [
                script, "--url", "http://127.0.0.1:\(dashboardPort)/", "--screenshot", screenshot, "--timeout", "120",
            ])
            defer { browser.stop() }
            // The worker starts once the page is live, so the page sees the numbers move from the start.
            #expect(waitUntil(seconds: 60) { browser.output.contains("dashboard_check: live") || !browser.isRunning }, "\(browser.output)")
            let config = try world.writeConfig(worker: ["max_in_flight": 100, "claim_batch": 50])
            let worker = try world.startWorker(id: "page-1", config: config)

            let status = browser.waitForExit(seconds: 150)
            #expect(status == 0, "the browser check failed:\n\(browser.output)\n\(world.workerLogs())")
            let line = try #require(browser.output.split(separator: "\n").last { $0.hasPrefix("{") }, "\(browser.output)")
            let shown = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            func number(_ key: String) -> Int? { (shown[key] as? String).flatMap { Int($0.replacingOccurrences(of: ",", with: "")) } }

            let ledger = ResultsLedger(redisURL: world.redisURL)
            ledger.poll()
            #expect(ledger.terminalCount == total, "\(ledger.terminalCount) of \(total) finished")
            for (outcome, count) in Self.outcomeCounts(ledger) {
                #expect(number("total-\(outcome)") == count, "the page shows \(shown["total-\(outcome)"] ?? "nothing") \(outcome), Redis holds \(count)")
            }
            let redis = try world.connectRedis()
            #expect(number("results-length") == Int(try redis.command(["XLEN", "herald:results"]).int ?? -1))
            #expect(number("dead-letters") == Int(try redis.command(["LLEN", "herald:dead"]).int ?? -1))
            #expect(number("queue-total") == 0)
            #expect(shown["workers"] as? Int == 1)
            #expect((shown["moved_from"] as? Int ?? total) < (number("total-delivered") ?? 0), "the numbers moved while the page watched")
            let png = try #require(FileManager.default.contents(atPath: screenshot))
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "a PNG screenshot")
            // HERALD_DOCS_SCREENSHOT=1 refreshes the one in docs/ (committed, shown in docs/observability.md).
            if ProcessInfo.processInfo.environment["HERALD_DOCS_SCREENSHOT"] == "1" {
                let docs = URL(fileURLWithPath: script).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/dashboard.png")
                try png.write(to: docs)
            }
            _ = worker
        }
    }
}

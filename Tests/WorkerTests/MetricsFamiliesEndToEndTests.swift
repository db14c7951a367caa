import DeviceRegistry
import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEnd {
    /// Every metric family docs/observability.md documents has samples after a mixed APNs + FCM run, and
    /// every family the worker writes is documented: the doc's tables are the list, so a family that a seam
    /// forgets to fill (the pools, once) or one added without its row fails here.
    @Suite struct MetricsFamilies {
        /// The families of one section's table (first column, every backquoted name), up to the next heading.
        static func documentedFamilies(section: String) throws -> Set<String> {
            let doc = try String(contentsOfFile: DeployFiles.path("docs/observability.md"), encoding: .utf8)
            let lines = doc.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let start = try #require(lines.firstIndex(of: section), "docs/observability.md has no '\(section)'")
            var names: Set<String> = []
            for line in lines[(start + 1)...] {
                if line.hasPrefix("## ") { break }
                guard line.hasPrefix("| `") else { continue }
                let cell = line.dropFirst(2).prefix { $0 != "|" }
                let parts = cell.split(separator: "`", omittingEmptySubsequences: false)
                for (index, part) in parts.enumerated() where index % 2 == 1 { names.insert(String(part)) }
            }
            return names
        }

        /// The families with at least one sample on a page (a histogram's `_bucket`/`_sum`/`_count` count for
        /// it), and the families the page declares with `# TYPE`.
        static func families(_ page: String) -> (sampled: Set<String>, declared: Set<String>) {
            var declared: Set<String> = []
            var samples: Set<String> = []
            for line in page.split(separator: "\n") {
                if line.hasPrefix("# TYPE ") {
                    let fields = line.split(separator: " ")
                    if fields.count >= 3 { declared.insert(String(fields[2])) }
                } else if !line.hasPrefix("#") {
                    samples.insert(String(line.prefix { $0 != "{" && $0 != " " }))
                }
            }
            var sampled: Set<String> = []
            for name in samples {
                if declared.contains(name) { sampled.insert(name); continue }
                for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
                    let base = String(name.dropLast(suffix.count))
                    if declared.contains(base) { sampled.insert(base) }
                }
            }
            return (sampled, declared)
        }

        /// A PEM certificate's notAfter in seconds since the epoch, as `openssl x509 -enddate` (Debian's openssl) prints it.
        static func notAfter(ofPEM file: String) throws -> Int? {
            let openssl = try #require(which("openssl"), "openssl is not installed")
            let run = try HeraldRun.run(herald: openssl, ["x509", "-noout", "-enddate", "-dateopt", "iso_8601", "-in", file])
            guard run.status == 0, let text = run.output.split(separator: "=").last?.trimmingCharacters(in: .whitespacesAndNewlines) else { return nil }
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyyy-MM-dd HH:mm:ssX"
            return formatter.date(from: text).map { Int($0.timeIntervalSince1970) }
        }

        @Test(.timeLimit(.minutes(3)))
        func everyDocumentedFamilyHasSamplesAfterAMixedAPNsAndFCMRun() throws {
            let workerFamilies = try Self.documentedFamilies(section: "## Worker metrics")
            let dashboardFamilies = try Self.documentedFamilies(section: "## Dashboard (queue-wide) metrics")
            #expect(workerFamilies.contains("herald_pool_connections") && dashboardFamilies.contains("herald_queue_length"),
                    "the doc's tables did not parse: \(workerFamilies) \(dashboardFamilies)")

            let world = try EndToEndWorld(
                faults: MockFaultScript(seed: 22, latencyMs: MockLatency(min: 0, max: 5), rules: [
                    MockFaultRule(fate: .unregistered, tokenPrefix: "dead"),
                    MockFaultRule(fate: .failFirst, tokenPrefix: "e5", status: 500, reason: "InternalServerError", count: 1),
                ]),
                fcmFaults: MockFCMFaultScript(seed: 22, latencyMs: MockLatency(min: 0, max: 5), rules: [
                    MockFCMRule(fate: .unregistered, tokenPrefix: "unreg-"),
                    MockFCMRule(fate: .failFirst, tokenPrefix: "busy-", status: 503, errorCode: "UNAVAILABLE", count: 1),
                ]), configure: { $0.clientCAFile = $0.tls?.caFile })
            defer { world.shutdown(); world.removeFiles() }
            var jobs: [[UInt8]] = []
            for i in 0..<300 {
                jobs.append(jobBytes(id: "apns-\(i)", token: deviceToken(prefix: ["00", "dead", "e5"][i % 3], index: i)))
                jobs.append(fcmJobBytes(id: "fcm-\(i)", token: "\(["ok", "unreg", "busy"][i % 3])-\(i)-dGVzdA:APA91bHerald_e2e"))
            }
            // Due in 3 s: the retry set holds them meanwhile (scheduled jobs, the next-due gauge).
            let due = Int64(Date().timeIntervalSince1970 * 1000) + 3_000
            for i in 0..<20 {
                jobs.append(Array(#"{"id":"later-\#(i)","token":"\#(deviceToken(prefix: "00", index: 1_000 + i))","deliver_at":\#(due),"payload":{"aps":{"alert":"later"}}}"#.utf8))
            }
            for i in 0..<5 { jobs.append(Array("not json \(i)".utf8)) }  // rejected: a dead letter each
            jobs.append(Array(#"{"id":"fcm-rejected","platform":"fcm","message":{"token":"x","topic":"news"}}"#.utf8))  // FCM's rules refuse it
            try world.push(jobs)

            // A third app with certificate auth: the certificate it holds has its expiry on the page too.
            let client = try world.tls.issueClientCertificate(bundleID: "com.example.cert", name: "cert-app", in: world.directory)
            for i in 0..<20 {
                jobs.append(Array(#"{"id":"cert-\#(i)","app":"certs","token":"\#(deviceToken(prefix: "00", index: 2_000 + i))","payload":{"aps":{}}}"#.utf8))
            }
            try world.push(Array(jobs.suffix(20)))
            let total = jobs.count
            let workerPort = freeLoopbackPort()
            let configPath = try world.writeConfig(registry: ["enabled": true], metricsListen: "127.0.0.1:\(workerPort)")
            // A registered device whose token FCM answers UNREGISTERED, and one it delivers to: the registry's families.
            let registry = DeviceRegistry(redis: try BlockingRedis(url: RedisURL(parsing: world.redisURL)), shards: try QueueShards(single: QueueKeys()))
            for token in ["unreg-1-dGVzdA:APA91bHerald_e2e", "ok-0-dGVzdA:APA91bHerald_e2e"] {
                try registry.register(DeviceID(app: "android", platform: .fcm, token: token), DeviceAttributes())
            }
            // A paced campaign of those devices, left open (no herald scheduler runs): the campaign families.
            try world.createCampaign(
                #"{"id": "families", "app": "android", "audience": {"app": "android"}, "notification": {"title": "t", "body": "b"}, "finish_within": 3600}"#)
            var config = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: configPath))) as? [String: Any])
            config["apps"] = (config["apps"] as? [[String: Any]] ?? []) + [["name": "certs", "bundle_id": "com.example.cert",
                                                                              "certificate": ["pem_file": client.certificateFile, "key_file": client.keyFile]]]
            try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: configPath))
            let worker = try world.startWorker(id: "families-1", config: configPath)
            let dashboardPort = freeLoopbackPort()
            let dashboard = try ChildProcess(name: "dashboard", executable: world.herald,
                                             arguments: ["dashboard", "--redis", world.redisURL, "--listen", "127.0.0.1:\(dashboardPort)"])
            defer { dashboard.stop() }

            // Scraped as the run goes: some gauges have samples only while there is something to show (the next
            // retry's due time while the retry set holds one), so a family counts once any scrape had it.
            var workerSeen: Set<String> = []
            var workerDeclared: Set<String> = []
            var dashboardSeen: Set<String> = []
            let ledger = ResultsLedger(redisURL: world.redisURL)
            let finished = try ledger.waitForTerminal(total, seconds: 90) {
                if !worker.isRunning { throw TestSupportError("worker exited:\n\(world.workerLogs())") }
                if let page = try? httpGet(port: workerPort, "/metrics", timeoutSeconds: 5), page.status == 200 {
                    let families = Self.families(page.body)
                    workerSeen.formUnion(families.sampled)
                    workerDeclared.formUnion(families.declared)
                }
                if let page = try? httpGet(port: dashboardPort, "/metrics", timeoutSeconds: 5), page.status == 200 {
                    dashboardSeen.formUnion(Self.families(page.body).sampled)
                }
            }
            #expect(finished, "\(ledger.terminalCount) of \(total) finished:\n\(world.workerLogs(lastLines: 20))")
            // One last look at each once everything is recorded.
            let last = try httpGet(port: workerPort, "/metrics", timeoutSeconds: 10)
            #expect(last.status == 200)
            // The simulators listen on 127.0.0.1: every ready connection is counted under that address.
            let remoteLines = last.body.split(separator: "\n").filter { $0.hasPrefix("herald_pool_remote_connections{") }
            #expect(!remoteLines.isEmpty && remoteLines.allSatisfy { $0.contains(#"remote="127.0.0.1:"#) }, "\(remoteLines)")
            workerSeen.formUnion(Self.families(last.body).sampled)
            workerDeclared.formUnion(Self.families(last.body).declared)
            if let page = try? httpGet(port: dashboardPort, "/metrics", timeoutSeconds: 10), page.status == 200 {
                dashboardSeen.formUnion(Self.families(page.body).sampled)
            }

            // A family that has samples only when something is wrong: a stray key of another type where the queue
            // should be, once every job is recorded (the worker skips it and logs it; the dashboard names it).
            let admin = try BlockingRedis(url: try RedisURL(parsing: world.redisURL))
            _ = try admin.command(["SET", "herald:queue", "stray"])
            let strayNamed = #"herald_redis_key_errors{key="herald:queue"} 1"#
            var strayPage = ""
            let deadline = Date().addingTimeInterval(10)
            while !strayPage.contains(strayNamed) && Date() < deadline {  // the dashboard reads Redis on its own schedule
                if let page = try? httpGet(port: dashboardPort, "/metrics", timeoutSeconds: 5), page.status == 200 {
                    strayPage = page.body
                    dashboardSeen.formUnion(Self.families(page.body).sampled)
                }
                if !strayPage.contains(strayNamed) { usleep(200_000) }
            }
            #expect(strayPage.contains(strayNamed), "\(strayPage)")
            _ = try admin.command(["DEL", "herald:queue"])

            let workerMissing = workerFamilies.subtracting(workerSeen).sorted()
            #expect(workerMissing.isEmpty, "documented worker families without a sample: \(workerMissing)\n\(last.body)")
            let dashboardMissing = dashboardFamilies.subtracting(dashboardSeen).sorted()
            #expect(dashboardMissing.isEmpty, "documented dashboard families without a sample: \(dashboardMissing)")
            // Written for every app whether or not its sender reported: each app signed at least its first token.
            for app in ["main", "android"] {
                let line = last.body.split(separator: "\n").first { $0.hasPrefix("herald_provider_tokens_signed_total{app=\"\(app)\"}") }
                let value = line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) } ?? 0
                #expect(value >= 1, "app \(app) signed no token: \(line.map(String.init) ?? "no line")")
            }
            // An FCM app has no sandbox: no series says it has one.
            #expect(last.body.contains(#"herald_app_paused{app="android",environment="production",kind="outage"} 0"#), "\(last.body)")
            #expect(!last.body.contains(#"herald_app_paused{app="android",environment="sandbox""#), "\(last.body)")
            // A rejected job counts under its own platform, one whose platform cannot be told under "unknown".
            #expect(last.body.contains(#"herald_results_total{app="android",platform="fcm",outcome="rejected"} 1"#), "\(last.body)")
            #expect(last.body.contains(#"herald_results_total{app="unknown",platform="unknown",outcome="rejected"} 5"#), "\(last.body)")
            // FCM's answers carry its own reasons as labels, like Apple's (once they were all "other").
            #expect(last.body.contains(#"herald_push_responses_total{platform="fcm",status="404",reason="UNREGISTERED"}"#), "\(last.body)")
            #expect(last.body.contains(#"herald_push_responses_total{platform="fcm",status="503",reason="UNAVAILABLE"}"#), "\(last.body)")
            let exchanges = last.body.split(separator: "\n").first { $0.hasPrefix(#"herald_provider_token_exchange_seconds_count{app="android"}"#) }
            #expect((exchanges.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) } ?? 0) >= 1, "\(exchanges.map(String.init) ?? "no line")")
            // The certificate the "certs" app holds and the simulator's, shown at each handshake, by their own dates.
            let notAfter = try #require(try Self.notAfter(ofPEM: client.certificateFile))
            #expect(last.body.contains(#"herald_tls_certificate_not_after_timestamp_seconds{role="held",name="\#(client.certificateFile)"} \#(notAfter)"#), "\(last.body)")
            let serverNotAfter = try #require(try Self.notAfter(ofPEM: world.tls.certificateFile))
            #expect(last.body.contains(#"herald_tls_certificate_not_after_timestamp_seconds{role="peer",name="127.0.0.1"} \#(serverNotAfter)"#), "\(last.body)")
            let undocumented = workerDeclared.subtracting(workerFamilies).sorted()
            #expect(undocumented.isEmpty, "the worker writes families docs/observability.md does not list: \(undocumented)")
        }
    }
}

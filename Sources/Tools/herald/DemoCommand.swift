import Basics
import Foundation
import Glibc
import Simulators
import RedisQueue

/// `herald demo`: the whole product on one machine in a minute. Starts a private redis-server, the APNs, FCM,
/// Web Push, Huawei Push Kit, HarmonyOS Push Kit and Expo simulators with a generated key, service accounts, subscriptions and client secret
/// and scripted device fates, and a real worker process; pushes sample jobs of every platform and of mixed fate;
/// shows progress; prints a summary; stops everything it started.
enum DemoCommand {
    static let command = Command(
        name: "demo", abstract: "Run the demo: local Redis, the APNs, FCM, Web Push, Huawei, HarmonyOS and Expo simulators, a worker and sample jobs, then a summary.",
        discussion: "Everything runs on 127.0.0.1 and is stopped at the end (by pid). Retries use short demo delays (1 s) instead of 15 minutes.",
        options: [
            .value("jobs", "n", "How many sample jobs (default 3000)."),
            .value("workers", "n", "Worker processes (default 1)."),
            .flag("keep-running", "Leave Redis, the simulator and the worker running until Ctrl-C, to try herald tail and stats."),
            .value("timeout-seconds", "s", "Give up waiting for outcomes after this long (default 120)."),
            .value("timeout", "seconds", "Deprecated name of --timeout-seconds."),
        ],
        run: run)

    /// The fates the sample jobs are given, by token prefix (the simulator's rules match them).
    struct Fate {
        let name: String
        let prefix: String
        let share: Double
        let expected: String
        /// The fate's job with its prefix, as job `index`: an APNs job unless the fate names another platform's.
        var job: @Sendable (_ prefix: String, _ index: Int) -> [UInt8] = DemoCommand.apnsJob
        /// A Web Push fate: its job needs a subscription the push-service simulator mints (`sampleJobs`' `webPush`).
        var webPush = false
    }

    static let fates: [Fate] = [
        Fate(name: "unregistered (410)", prefix: "dead", share: 0.05, expected: "token_dropped"),
        Fate(name: "other environment (400 BadDeviceToken)", prefix: "5a", share: 0.04, expected: "token_dropped"),
        Fate(name: "not for topic (400 DeviceTokenNotForTopic)", prefix: "bad0", share: 0.02, expected: "failed"),
        Fate(name: "throttled (429), then delivered", prefix: "77", share: 0.04, expected: "delivered"),
        Fate(name: "server error (500), retried, delivered", prefix: "e5", share: 0.04, expected: "delivered"),
        Fate(name: "malformed job", prefix: "", share: 0.01, expected: "rejected"),
        Fate(name: "FCM delivered", prefix: "fcm-ok", share: 0.19, expected: "delivered", job: DemoCommand.fcmJob),
        Fate(name: "FCM unregistered (404 UNREGISTERED)", prefix: "fcm-gone", share: 0.03, expected: "token_dropped", job: DemoCommand.fcmJob),
        Fate(name: "FCM token of another project (403 SENDER_ID_MISMATCH)", prefix: "fcm-other", share: 0.01, expected: "token_dropped",
             job: DemoCommand.fcmJob),
        Fate(name: "FCM unavailable (503), retried, delivered", prefix: "fcm-busy", share: 0.03, expected: "delivered", job: DemoCommand.fcmJob),
        Fate(name: "Web Push delivered (201)", prefix: "web-ok-", share: 0.10, expected: "delivered", webPush: true),
        Fate(name: "Web Push subscription gone (410)", prefix: "web-gone-", share: 0.02, expected: "token_dropped", webPush: true),
        Fate(name: "Web Push unavailable (503), retried, delivered", prefix: "web-busy-", share: 0.02, expected: "delivered", webPush: true),
        Fate(name: "Huawei delivered (80000000)", prefix: "hms-ok", share: 0.08, expected: "delivered", job: DemoCommand.hmsJob),
        Fate(name: "Huawei token invalid (80300007)", prefix: "hms-gone", share: 0.02, expected: "token_dropped", job: DemoCommand.hmsJob),
        Fate(name: "Huawei flow control (503), retried, delivered", prefix: "hms-busy", share: 0.02, expected: "delivered", job: DemoCommand.hmsJob),
        Fate(name: "HarmonyOS delivered (80000000)", prefix: "harmony-ok", share: 0.04, expected: "delivered", job: DemoCommand.harmonyJob),
        Fate(name: "HarmonyOS token invalid (80300007)", prefix: "harmony-gone", share: 0.01, expected: "token_dropped", job: DemoCommand.harmonyJob),
        Fate(name: "HarmonyOS flow control (503), retried, delivered", prefix: "harmony-busy", share: 0.01, expected: "delivered",
             job: DemoCommand.harmonyJob),
        Fate(name: "Expo ticket ok, receipt ok", prefix: "expo-ok", share: 0.04, expected: "delivered", job: DemoCommand.expoJob),
        Fate(name: "Expo ticket DeviceNotRegistered", prefix: "expo-gone", share: 0.01, expected: "token_dropped", job: DemoCommand.expoJob),
        Fate(name: "Expo receipt DeviceNotRegistered", prefix: "expo-rgone", share: 0.01, expected: "token_dropped", job: DemoCommand.expoJob),
    ]

    static func run(_ args: ParsedArguments) throws -> Int32 {
        let jobCount = try args.int("jobs") ?? 3000
        let workerCount = try args.int("workers") ?? 1
        let timeout = try args.double(renamedFlag(args, "timeout-seconds", deprecated: "timeout")) ?? 120
        guard jobCount >= 10, jobCount <= 5_000_000 else { throw UsageError("--jobs must be 10...5000000") }
        guard (1...16).contains(workerCount) else { throw UsageError("--workers must be 1...16") }
        guard let redisBinary = findProgram("redis-server") else {
            printError("herald demo: redis-server is not installed; run scripts/setup (or apt-get install redis-server)")
            return ExitCode.unavailable
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-demo-\(getpid())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var started: [DemoProcess] = []
        var server: MockAPNsServer? = nil
        var fcmServer: MockFCMServer? = nil
        var pushServer: MockWebPushServer? = nil
        var hmsServer: MockHMSServer? = nil
        var harmonyServer: MockHarmonyServer? = nil
        var expoServer: MockExpoServer? = nil
        defer {
            for process in started.reversed() { process.stop(grace: 10) }
            server?.stop()
            fcmServer?.stop()
            pushServer?.stop()
            hmsServer?.stop()
            harmonyServer?.stop()
            expoServer?.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }

        // 1. Redis
        step("starting redis-server")
        let redisPort = try freePort()
        let redisProcess = try DemoProcess(
            executable: redisBinary,
            arguments: ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory],
            logFile: directory + "/redis.log")
        started.append(redisProcess)
        let redisURL = "redis://127.0.0.1:\(redisPort)/0"
        let redis = try connectWithDeadline(redisURL, seconds: 10)

        // 2. The simulator, with a generated key and the fates above
        step("starting the APNs simulator")
        var mock = MockAPNsConfiguration()
        mock.tls = try MockTLSFiles.generate(in: directory + "/tls")
        let key = try MockProviderKey.generate(keyID: "DEMOKEY123", teamID: "DEMOTEAM12", topics: ["com.example.demo"], directory: directory + "/keys")
        mock.keys = [key]
        mock.faults = MockFaultScript(seed: 7, latencyMs: MockLatency(min: 1, max: 4), rules: [
            MockFaultRule(fate: .unregistered, tokenPrefix: "dead"),
            MockFaultRule(fate: .otherEnvironment, tokenPrefix: "5a"),
            MockFaultRule(fate: .otherTopic, tokenPrefix: "bad0"),
            MockFaultRule(fate: .failFirst, tokenPrefix: "77", status: 429, reason: "TooManyRequests", count: 1),
            MockFaultRule(fate: .failFirst, tokenPrefix: "e5", status: 500, reason: "InternalServerError", count: 1),
        ])
        let simulator = try MockAPNsServer(configuration: mock)
        server = simulator
        step("starting the FCM simulator")
        var fcmMock = MockFCMConfiguration()
        fcmMock.tls = mock.tls
        fcmMock.projectID = "herald-demo"
        fcmMock.serviceAccountDirectory = directory + "/keys"
        fcmMock.faults = MockFCMFaultScript(seed: 7, latencyMs: MockLatency(min: 1, max: 4), rules: [
            MockFCMRule(fate: .unregistered, tokenPrefix: "fcm-gone"),
            MockFCMRule(fate: .senderIdMismatch, tokenPrefix: "fcm-other"),
            MockFCMRule(fate: .failFirst, tokenPrefix: "fcm-busy", status: 503, errorCode: "UNAVAILABLE", count: 1),
        ])
        let fcmSimulator = try MockFCMServer(configuration: fcmMock)
        fcmServer = fcmSimulator
        step("starting the Web Push simulator")
        let pushSimulator = try MockWebPushServer(tls: mock.tls!, faults: MockWebPushFaultScript(rules: [
            MockWebPushRule(subscriptionPrefix: "web-gone-", fate: .gone),
            MockWebPushRule(subscriptionPrefix: "web-busy-", fate: .unavailable, failFirst: 1),
        ], seed: 7, latencyMs: MockLatency(min: 1, max: 4)))
        pushServer = pushSimulator
        step("starting the Huawei Push Kit simulator")
        var hmsMock = MockHMSConfiguration()
        hmsMock.tls = mock.tls
        hmsMock.apps = [MockHMSApp(appId: "10086000", clientSecret: "demo-secret-\(UInt64.random(in: 0...UInt64.max))")]
        hmsMock.faults = MockHMSFaultScript(seed: 7, latencyMs: MockLatency(min: 1, max: 4), invalidTokenPrefixes: ["hms-gone"],
                                            rules: [MockHMSRule(fate: .failFirst, tokenPrefix: "hms-busy", count: 1)])
        let hmsSimulator = try MockHMSServer(configuration: hmsMock)
        hmsServer = hmsSimulator
        let hmsSecretFile = directory + "/keys/hms-client-secret"
        try Data(hmsSimulator.app.clientSecret.utf8).write(to: URL(fileURLWithPath: hmsSecretFile))
        step("starting the HarmonyOS Push Kit simulator")
        var harmonyMock = MockHarmonyConfiguration()
        harmonyMock.tls = mock.tls
        harmonyMock.faults = MockHMSFaultScript(seed: 7, latencyMs: MockLatency(min: 1, max: 4), invalidTokenPrefixes: ["harmony-gone"],
                                                rules: [MockHMSRule(fate: .failFirst, tokenPrefix: "harmony-busy", status: 503, count: 1)])
        let harmonySimulator = try MockHarmonyServer(configuration: harmonyMock)
        harmonyServer = harmonySimulator
        let harmonyKeyFile = directory + "/keys/harmony-service-account.json"
        try harmonySimulator.account.write(to: harmonyKeyFile)
        step("starting the Expo simulator")
        var expoMock = MockExpoConfiguration()
        expoMock.tls = mock.tls
        expoMock.accessToken = "demo-expo-\(UInt64.random(in: 0...UInt64.max))"
        let expoSimulator = try MockExpoServer(configuration: expoMock)
        expoServer = expoSimulator
        let expoTokenFile = directory + "/keys/expo-access-token"
        try Data((expoMock.accessToken ?? "").utf8).write(to: URL(fileURLWithPath: expoTokenFile))
        // The demo's VAPID key: a fixed private scalar, as web-push libraries print one (base64url).
        let vapidKey = Data((1...32).map { UInt8($0) }).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")

        // 3. The worker's configuration
        let configPath = directory + "/herald.json"
        let metricsPort = try freePort()
        let config: [String: Any] = [
            "redis": ["url": redisURL],
            "apns": ["production_url": "https://127.0.0.1:\(simulator.port)", "sandbox_url": "https://127.0.0.1:\(simulator.port)",
                     "ca_file": mock.tls!.caFile ?? ""],
            "fcm": ["url": fcmSimulator.baseURL, "ca_file": fcmSimulator.caFile ?? ""],
            "web_push": ["ca_file": pushSimulator.caFile ?? ""],
            "hms": ["url": hmsSimulator.baseURL, "token_url": hmsSimulator.tokenURL, "ca_file": hmsSimulator.caFile ?? ""],
            "harmony": ["url": harmonySimulator.baseURL, "ca_file": harmonySimulator.caFile ?? ""],
            "expo": ["url": expoSimulator.baseURL, "ca_file": expoSimulator.caFile ?? "", "receipt_delay_seconds": 1, "receipt_interval_seconds": 1],
            "apps": [["name": "demo", "bundle_id": "com.example.demo",
                      "token": ["team_id": "DEMOTEAM12", "key_id": "DEMOKEY123", "key_file": key.privateKeyFile ?? ""]],
                     ["name": "demo-android", "fcm": ["service_account_file": fcmSimulator.serviceAccountFile]],
                     ["name": "demo-web", "webpush": ["vapid_key": vapidKey, "subject": "mailto:demo@example.com", "push_service_hosts": ["127.0.0.1"],
                                                      "allow_ip_literals": true, "allow_private_addresses": true]],
                     ["name": "demo-huawei", "hms": ["app_id": hmsSimulator.app.appId, "client_secret_file": hmsSecretFile]],
                     ["name": "demo-harmony", "harmony": ["service_account_file": harmonyKeyFile]],
                     ["name": "demo-expo", "expo": ["access_token_file": expoTokenFile]]],
            "retry": ["server_error_base_seconds": 1, "throttle_base_seconds": 1, "jitter_fraction": 0.2],
            "worker": ["lease_seconds": 10, "log_level": "warning"],
            "metrics": ["listen": "127.0.0.1:\(metricsPort)"],
        ]
        try JSONSerialization.data(withJSONObject: config, options: [.prettyPrinted, .sortedKeys]).write(to: URL(fileURLWithPath: configPath))

        // 4. Sample jobs
        step("pushing \(jobCount) sample jobs onto herald:queue")
        let (jobs, expected) = try sampleJobs(count: jobCount) { prefix, index in
            try webPushJob(subscription: pushSimulator.subscribe(prefix: prefix), index: index)
        }
        var batch: [[[UInt8]]] = []
        for job in jobs {
            batch.append([Array("LPUSH".utf8), Array("herald:queue".utf8), job])
            if batch.count == 1000 { _ = try redis.pipeline(rawCommands: batch); batch.removeAll() }
        }
        if !batch.isEmpty { _ = try redis.pipeline(rawCommands: batch) }

        // 5. The dashboard (the status page and the queue-wide metrics), then the workers
        let dashboardPort = try freePort()
        started.append(try DemoProcess(
            executable: currentExecutable(),
            arguments: ["dashboard", "--config", configPath, "--listen", "127.0.0.1:\(dashboardPort)"],
            logFile: directory + "/dashboard.log"))
        // The receipts poller: Expo's tickets wait for it.
        started.append(try DemoProcess(executable: currentExecutable(), arguments: ["scheduler", "--receipts", "--config", configPath],
                                       logFile: directory + "/receipts.log"))
        step("starting \(workerCount) worker process\(workerCount == 1 ? "" : "es")")
        let startedAt = Date()
        for index in 0..<workerCount {
            started.append(try DemoProcess(
                executable: currentExecutable(), arguments: ["worker", "--config", configPath, "--id", "demo-worker-\(index + 1)"],
                logFile: directory + "/worker-\(index + 1).log",
                // The first worker serves the configured metrics port, the others one each of their own.
                environment: index == 0 ? [:] : ["HERALD_METRICS_LISTEN": "127.0.0.1:\(try freePort())"]))
        }

        // 6. Progress, read from the results stream
        var tally = Tally()
        var lastID = "0-0"
        var firstPassAt: Date? = nil
        let interactive = isatty(2) == 1
        var lastLine = Date.distantPast
        while tally.terminal < jobCount && Date().timeIntervalSince(startedAt) < timeout {
            lastID = try tally.read(redis: redis, after: lastID)
            if firstPassAt == nil && tally.firstResults >= jobCount { firstPassAt = Date() }
            if interactive {
                FileHandle.standardError.write(Data(("\r" + progressBar(done: tally.terminal, total: jobCount, tally: tally)).utf8))
            } else if Date().timeIntervalSince(lastLine) > 2 {
                printError(progressBar(done: tally.terminal, total: jobCount, tally: tally))
                lastLine = Date()
            }
            if tally.terminal < jobCount { usleep(100_000) }
        }
        let elapsed = Date().timeIntervalSince(startedAt)
        if interactive { FileHandle.standardError.write(Data("\n".utf8)) }
        for process in started where !process.isRunning {
            printError("a demo process exited early; its log: \(process.logFile)")
        }

        // 7. Summary
        let simulatorStats = simulator.stats()
        let fcmStats = fcmSimulator.stats()
        let pushStats = pushSimulator.stats()
        let hmsStats = hmsSimulator.stats()
        print(summary(tally: tally, expected: expected, jobCount: jobCount, elapsed: elapsed,
                      firstPass: firstPassAt.map { $0.timeIntervalSince(startedAt) }, accepted: simulatorStats.accepted,
                      requests: simulatorStats.requests, fcm: (fcmStats.requests, fcmStats.accepted, fcmStats.tokensIssued),
                      webPush: (pushStats.requests, pushStats.delivered),
                      hms: (hmsStats.requests, hmsStats.tokensDelivered, hmsStats.tokensIssued),
                      harmony: (harmonySimulator.stats().requests, harmonySimulator.stats().tokensDelivered), expo: expoSimulator.stats(), redisURL: redisURL))
        let complete = tally.terminal == jobCount && expected == tally.terminalByOutcome
        if args.flag("keep-running") {
            print("\nStill running (Ctrl-C to stop):\n  herald tail --redis \(redisURL)\n  herald stats --redis \(redisURL)")
            print("  status page:     http://127.0.0.1:\(dashboardPort)/")
            print("  worker metrics:  http://127.0.0.1:\(metricsPort)/metrics  (the first worker's)")
            print("  queue metrics:   http://127.0.0.1:\(dashboardPort)/metrics")
            let stop = StopFlag()
            let watcher = SignalWatcher(onFirst: { stop.set() })
            while !stop.isSet { stop.sleep(milliseconds: 500) }
            withExtendedLifetime(watcher) {}
        }
        return complete ? ExitCode.success : ExitCode.failure
    }

    private static func step(_ text: String) { printError("demo: " + text) }

    private static func connectWithDeadline(_ url: String, seconds: Double) throws -> BlockingRedis {
        let parsed = try RedisURL(parsing: url)
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            do {
                let redis = try BlockingRedis(url: parsed)
                _ = try redis.command(["PING"])
                return redis
            } catch {
                if Date() > deadline { throw error }
                usleep(50_000)
            }
        }
    }

    /// Jobs whose token prefixes pick their fate at the simulator, and the terminal outcomes to expect.
    static func sampleJobs(count: Int, webPush: (_ prefix: String, _ index: Int) throws -> [UInt8]) rethrows -> ([[UInt8]], [String: Int]) {
        var jobs: [[UInt8]] = []
        var expected: [String: Int] = [:]
        var assigned = 0
        for fate in fates {
            let n = max(3, Int(Double(count) * fate.share))
            for i in 0..<n {
                if fate.prefix.isEmpty {
                    let malformed = ["this is not JSON \(i)", "{\"token\":\"not-hex-\(i)\",\"payload\":{\"aps\":{}}}",
                                     "{\"token\":\"00aa\(String(format: "%04x", i))\",\"payload\":\"a string, not an object\"}"]
                    jobs.append(Array(malformed[i % 3].utf8))
                } else {
                    jobs.append(fate.webPush ? try webPush(fate.prefix, assigned + i) : fate.job(fate.prefix, assigned + i))
                }
            }
            expected[fate.expected, default: 0] += n
            assigned += n
        }
        for i in assigned..<max(assigned, count) {
            jobs.append(job(token: token(prefix: "00", index: i), index: i))
            expected["delivered", default: 0] += 1
        }
        var generator = SystemRandomNumberGenerator()
        jobs.shuffle(using: &generator)
        return (jobs, expected)
    }

    private static func token(prefix: String, index: Int) -> String {
        let body = String(format: "%016llx", UInt64(index) &* 0x9E37_79B9_7F4A_7C15)
        let filler = String(repeating: "c", count: 64 - prefix.count - body.count)
        return prefix + filler + body
    }

    private static func job(token: String, index: Int) -> [UInt8] {
        Array("{\"id\":\"demo-\(index)\",\"token\":\"\(token)\",\"payload\":{\"aps\":{\"alert\":{\"title\":\"Herald demo\",\"body\":\"Notification \(index)\"},\"sound\":\"default\"},\"order\":\(index)}}".utf8)
    }

    /// An APNs job to a token of `prefix` (its fate at the simulator).
    private static func apnsJob(prefix: String, index: Int) -> [UInt8] { job(token: token(prefix: prefix, index: index), index: index) }

    /// An FCM job to a registration token of `prefix`: the FCM v1 message object, sent to Google as written.
    private static func fcmJob(prefix: String, index: Int) -> [UInt8] {
        let token = "\(prefix)-\(index):APA91bDemo"
        return Array("{\"id\":\"demo-\(index)\",\"platform\":\"fcm\",\"message\":{\"token\":\"\(token)\",\"notification\":{\"title\":\"Herald demo\",\"body\":\"Notification \(index)\"},\"data\":{\"order\":\"\(index)\"},\"android\":{\"priority\":\"HIGH\"}}}".utf8)
    }

    /// A HarmonyOS (Push Kit v3) alert job to a token of `prefix`: its payload sent to Huawei as written.
    private static func harmonyJob(prefix: String, index: Int) -> [UInt8] {
        Array("{\"id\":\"demo-\(index)\",\"platform\":\"harmony\",\"token\":\"\(prefix)-\(index)\",\"push_type\":\"alert\",\"payload\":{\"notification\":{\"category\":\"MARKETING\",\"title\":\"Herald demo\",\"body\":\"Notification \(index)\",\"clickAction\":{\"actionType\":0}}}}".utf8)
    }

    /// A Huawei Push Kit job to a token of `prefix`: the Push Kit message, sent to Huawei as written (`data` is a string there).
    private static func hmsJob(prefix: String, index: Int) -> [UInt8] {
        Array("{\"id\":\"demo-\(index)\",\"platform\":\"hms\",\"message\":{\"notification\":{\"title\":\"Herald demo\",\"body\":\"Notification \(index)\"},\"data\":\"{\\\"order\\\":\(index)}\",\"android\":{\"urgency\":\"HIGH\"},\"token\":[\"\(prefix)-\(index)\"]}}".utf8)
    }

    /// An Expo job to a push token whose bracketed text starts with the fate's word (`expo-rgone` -> `rgone-<index>`).
    private static func expoJob(prefix: String, index: Int) -> [UInt8] {
        Array("{\"id\":\"demo-\(index)\",\"platform\":\"expo\",\"to\":\"ExponentPushToken[\(prefix.dropFirst(5))-\(index)]\",\"payload\":{\"title\":\"Herald demo\",\"body\":\"Notification \(index)\",\"data\":{\"order\":\(index)}}}".utf8)
    }

    /// A Web Push job to a subscription the simulator minted (its id's prefix is its fate there).
    private static func webPushJob(subscription: MockWebPushSubscription, index: Int) -> [UInt8] {
        Array("{\"id\":\"demo-\(index)\",\"platform\":\"webpush\",\"subscription\":\(subscription.json),\"payload\":{\"title\":\"Herald demo\",\"body\":\"Notification \(index)\"},\"ttl\":3600,\"urgency\":\"normal\"}".utf8)
    }

    private static func progressBar(done: Int, total: Int, tally: Tally) -> String {
        let width = 30
        let filled = total == 0 ? width : min(width, done * width / total)
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            + "\(done)/\(total) finished, \(tally.retrying) retries scheduled   "
    }

    private static func summary(tally: Tally, expected: [String: Int], jobCount: Int, elapsed: Double, firstPass: Double?,
                                accepted: Int, requests: Int, fcm: (requests: Int, accepted: Int, tokens: Int),
                                webPush: (requests: Int, delivered: Int), hms: (requests: Int, delivered: Int, tokens: Int),
                                harmony: (requests: Int, delivered: Int), expo: MockExpoStats, redisURL: String) -> String {
        var lines = ["", "Herald demo: \(jobCount) jobs", ""]
        lines.append("outcome".padding(toLength: 16, withPad: " ", startingAt: 0) + "expected".leftPad(10) + "got".leftPad(10))
        for outcome in ["delivered", "token_dropped", "failed", "rejected"] {
            let want = expected[outcome] ?? 0
            let got = tally.terminalByOutcome[outcome] ?? 0
            lines.append(outcome.padding(toLength: 16, withPad: " ", startingAt: 0) + String(want).leftPad(10) + String(got).leftPad(10)
                + (want == got ? "   ok" : "   MISMATCH"))
        }
        lines.append("retrying".padding(toLength: 16, withPad: " ", startingAt: 0) + "".leftPad(10) + String(tally.retrying).leftPad(10)
            + "   (entries before a final outcome)")
        lines.append("")
        if let firstPass {
            lines.append(String(format: "first attempts of all jobs: %.2f s (%.0f jobs/s)", firstPass, Double(jobCount) / max(firstPass, 0.001)))
        }
        lines.append(String(format: "every job finished:        %.2f s (includes the 1 s demo retry delays)", elapsed))
        lines.append("claim-to-result latency:    p50 \(tally.percentile(0.5)) ms, p99 \(tally.percentile(0.99)) ms")
        lines.append("APNs simulator:             \(requests) requests, \(accepted) accepted")
        lines.append("FCM simulator:              \(fcm.requests) requests, \(fcm.accepted) accepted, \(fcm.tokens) access token\(fcm.tokens == 1 ? "" : "s") issued")
        lines.append("Web Push simulator:         \(webPush.requests) requests, \(webPush.delivered) delivered (VAPID checked, payload decrypted)")
        lines.append("Huawei Push Kit simulator:  \(hms.requests) requests, \(hms.delivered) delivered, \(hms.tokens) access token\(hms.tokens == 1 ? "" : "s") issued")
        lines.append("HarmonyOS simulator:        \(harmony.requests) requests, \(harmony.delivered) delivered (PS256 JWT checked)")
        lines.append("Expo simulator:             \(expo.sendRequests) push/send requests for \(expo.messages) messages, \(expo.receiptRequests) getReceipts for \(expo.receiptIDsAsked) tickets")
        lines.append("")
        let herald = currentExecutable()
        lines.append("Where to look next (herald is \(herald)):")
        lines.append("  herald tail  --redis <url>            follow outcomes as they happen (--json, --outcome failed)")
        lines.append("  herald stats --redis <url>            queue, leases, retries, outcomes, dead letters")
        lines.append("  redis-cli LRANGE herald:dead 0 5      malformed jobs with their reasons")
        lines.append("  scripts/demo --keep-running           keep this demo up to try them (this run's Redis was \(redisURL))")
        lines.append("  docs/job-format.md, docs/results.md   the contract for your producers")
        return lines.joined(separator: "\n")
    }
}

/// Outcome counts read from the results stream.
struct Tally {
    var terminalByOutcome: [String: Int] = [:]
    var retrying = 0
    var latencies: [Int] = []
    /// Jobs that have a first result (terminal or retrying at attempt 1).
    var firstResults = 0
    private var seenFirst = Set<String>()

    var terminal: Int { terminalByOutcome.values.reduce(0, +) }

    mutating func read(redis: any BlockingRedisCommands, after lastID: String) throws -> String {
        var last = lastID
        while true {
            let entries = StreamEntry.entries(try redis.command(["XRANGE", "herald:results", "(" + last, "+", "COUNT", "5000"]))
            guard let newest = entries.last else { return last }
            last = newest.id
            for entry in entries {
                let outcome = entry["outcome"] ?? ""
                if let jobID = entry["id"], seenFirst.insert(jobID).inserted { firstResults += 1 }
                if outcome == "retrying" || outcome == "accepted" { retrying += 1 } else { terminalByOutcome[outcome, default: 0] += 1 }
                if let latency = entry["latency_ms"].flatMap({ Int($0) }) { latencies.append(latency) }
            }
        }
    }

    func percentile(_ p: Double) -> Int {
        guard !latencies.isEmpty else { return 0 }
        let sorted = latencies.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
    }
}

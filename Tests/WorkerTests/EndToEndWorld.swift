import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

/// The end-to-end tests that keep the machine busy (volume, several workers, output checks) run one at a time:
/// each starts a redis-server, the simulator and several worker processes, and the machine they run on may have
/// two cores.
@Suite(.serialized) struct EndToEnd {}

/// The end-to-end tests that mostly wait (outages, failovers, restarts, reloads, pacing by a budget), also one at a
/// time, beside `EndToEnd`'s: they use little CPU while they wait, so the two groups overlap on two cores, and no
/// more than two worlds ever run at once. Their bounds on time leave room for the busy test next to them.
@Suite(.serialized) struct EndToEndWaiting {}

/// One app as the simulator registers it and as the worker's configuration names it.
struct E2EApp {
    var name: String
    var bundleID: String
    var teamID: String
    var keyID: String
}

/// Everything one end-to-end test runs against: its own redis-server, an in-process APNs simulator with
/// generated TLS and keys, and `herald worker` processes started from the built executable as a user would.
/// Everything it starts is stopped by pid in `shutdown()` (and by the fixtures' deinit if a test throws).
final class EndToEndWorld: @unchecked Sendable {
    let directory: String
    let redis: RedisServer
    let simulator: MockAPNsServer
    let tls: MockTLSFiles
    let herald: String
    /// Provider keys the simulator accepts, by app name.
    let keys: [String: MockProviderKey]
    let apps: [E2EApp]
    /// The FCM simulator, when the world has an FCM app ("android", its project the simulator's).
    let fcm: MockFCMServer?
    private(set) var workers: [String: ChildProcess] = [:]

    init(apps: [E2EApp] = [E2EApp(name: "main", bundleID: "com.example.e2e", teamID: "TEAME2E001", keyID: "KEYE2E0001")],
         faults: MockFaultScript = MockFaultScript(), appendOnly: Bool = false, recordAccepted: Bool = true,
         fcmFaults: MockFCMFaultScript? = nil, redis existing: RedisServer? = nil,
         configure: (inout MockAPNsConfiguration) -> Void = { _ in }) throws {
        guard let herald = heraldExecutable() else {
            throw TestSupportError("the herald executable is not beside the test bundle: run `swift build` (it builds .build/debug/herald) before the tests")
        }
        self.herald = herald
        ignoreBrokenPipes()
        directory = makeTemporaryDirectory("herald-e2e")
        // A test may bring its own (a Sentinel-managed master): the world then pushes to it and stops it too.
        redis = try existing ?? RedisServer(appendOnly: appendOnly)
        tls = try MockTLSFiles.generate(in: directory + "/tls")
        var keys: [String: MockProviderKey] = [:]
        for app in apps {
            let keyDirectory = directory + "/keys-\(app.name)"
            try FileManager.default.createDirectory(atPath: keyDirectory, withIntermediateDirectories: true)
            keys[app.name] = try MockProviderKey.generate(keyID: app.keyID, teamID: app.teamID, topics: [app.bundleID], directory: keyDirectory)
        }
        self.keys = keys
        self.apps = apps
        var configuration = MockAPNsConfiguration()
        configuration.tls = tls
        configuration.keys = apps.map { keys[$0.name]! }
        configuration.faults = faults
        configuration.recordAccepted = recordAccepted
        configure(&configuration)
        simulator = try MockAPNsServer(configuration: configuration)
        if let fcmFaults {
            var fcmConfiguration = MockFCMConfiguration()
            fcmConfiguration.tls = tls
            fcmConfiguration.serviceAccountDirectory = directory
            fcmConfiguration.faults = fcmFaults
            fcmConfiguration.recordAccepted = recordAccepted
            fcm = try MockFCMServer(configuration: fcmConfiguration)
        } else {
            fcm = nil
        }
    }

    deinit { shutdown() }

    var redisURL: String { redis.url }
    var simulatorURL: String { "https://127.0.0.1:\(simulator.port)" }

    func connectRedis() throws -> BlockingRedis {
        try BlockingRedis(url: try RedisURL(parsing: redisURL))
    }

    /// Writes a worker configuration; `worker` and `retry` settings are merged over short test defaults, `app`
    /// settings (e.g. `environment_fallback`) into every app. `metrics.listen` is off unless a test asks for it
    /// (workers of one test would share the default port). `only`: these apps of the world's (default all);
    /// `keyIDs` and `keyFiles` replace an app's key (a rotated one).
    func writeConfig(name: String = "herald", worker: [String: Any] = [:], retry: [String: Any] = [:], only: Set<String>? = nil,
                     apns: [String: Any] = [:], keyFiles: [String: String] = [:], keyIDs: [String: String] = [:], app appSettings: [String: Any] = [:],
                     fcmSettings: [String: Any] = [:], serviceAccountFile: String? = nil, redis: [String: Any] = [:],
                     budgets: [String: Any] = [:], registry: [String: Any] = [:], metricsListen: String = "") throws -> String {
        var workerSettings: [String: Any] = ["lease_seconds": 3, "max_in_flight": 500, "claim_batch": 100,
                                             "shutdown_deadline_seconds": 5, "log_level": "info"]
        workerSettings.merge(worker) { _, new in new }
        var retrySettings: [String: Any] = ["server_error_base_seconds": 1, "throttle_base_seconds": 1, "jitter_fraction": 0.2,
                                            "configuration_pause_seconds": 2]
        retrySettings.merge(retry) { _, new in new }
        var appList: [[String: Any]] = apps.filter { only?.contains($0.name) ?? true }.map { app -> [String: Any] in
            ["name": app.name, "bundle_id": app.bundleID,
             "token": ["team_id": app.teamID, "key_id": keyIDs[app.name] ?? app.keyID, "key_file": keyFiles[app.name] ?? keys[app.name]!.privateKeyFile!]]
                .merging(appSettings) { _, new in new }
        }
        var config: [String: Any] = [
            "redis": (["url": redisURL] as [String: Any]).merging(redis) { _, new in new },
            "apns": ["production_url": simulatorURL, "sandbox_url": simulatorURL, "ca_file": tls.caFile ?? ""]
                .merging(apns) { _, new in new },
            "retry": retrySettings,
            "worker": workerSettings,
            "metrics": ["listen": metricsListen],
        ]
        if !budgets.isEmpty { config["budgets"] = budgets }
        if !registry.isEmpty { config["registry"] = registry }
        if let fcm {
            appList.append(["name": "android", "fcm": ["service_account_file": serviceAccountFile ?? fcm.serviceAccountFile]])
            config["fcm"] = ["url": fcm.baseURL, "ca_file": fcm.caFile ?? ""].merging(fcmSettings) { _, new in new }
        }
        config["apps"] = appList
        let path = directory + "/\(name).json"
        try JSONSerialization.data(withJSONObject: config, options: [.prettyPrinted, .sortedKeys]).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Starts `herald worker --config FILE --id ID`, as an operator would.
    @discardableResult
    func startWorker(id: String, config: String) throws -> ChildProcess {
        let process = try ChildProcess(name: "worker-\(id)", executable: herald, arguments: ["worker", "--config", config, "--id", id])
        workers[id] = process
        return process
    }

    /// Stops one worker (SIGTERM, SIGKILL after the grace) and forgets it, so the waits do not take its exit for a crash.
    func stopWorker(id: String) {
        workers.removeValue(forKey: id)?.stop(grace: 10)
    }

    /// Runs a `herald` command to completion (with a deadline) and returns its exit status and output.
    func runHerald(_ arguments: [String], seconds: Double = 30) throws -> (status: Int32?, output: String) {
        try HeraldRun.run(herald: herald, arguments, seconds: seconds)
    }

    /// Pushes jobs with pipelined LPUSH, 1000 per round trip.
    func push(_ jobs: [[UInt8]], queue: String = "herald:queue") throws {
        let redis = try connectRedis()
        var batch: [[[UInt8]]] = []
        for job in jobs {
            batch.append([Array("LPUSH".utf8), Array(queue.utf8), job])
            if batch.count == 1000 { try checkReplies(try redis.pipeline(rawCommands: batch)); batch.removeAll() }
        }
        if !batch.isEmpty { try checkReplies(try redis.pipeline(rawCommands: batch)) }
    }

    /// Pushes `count` well-formed jobs (ids `<idPrefix>-<n>`, tokens of `tokenPrefix`) and returns each id with
    /// the outcome `expected` for the ledger's contract check.
    @discardableResult
    func pushJobs(_ count: Int, idPrefix: String, tokenPrefix: String, expected outcome: String = "delivered") throws -> [String: String] {
        var jobs: [[UInt8]] = []
        var expected: [String: String] = [:]
        for i in 0..<count {
            jobs.append(jobBytes(id: "\(idPrefix)-\(i)", token: deviceToken(prefix: tokenPrefix, index: i)))
            expected["\(idPrefix)-\(i)"] = outcome
        }
        try push(jobs)
        return expected
    }

    private func checkReplies(_ replies: [RESPValue]) throws {
        if let error = replies.first(where: { $0.errorMessage != nil }) { throw TestSupportError("LPUSH failed: \(error)") }
    }

    /// Stops every worker still running (SIGTERM, SIGKILL after the grace), the simulator and Redis.
    func shutdown() {
        for worker in workers.values where worker.isRunning { worker.stop(grace: 10) }
        simulator.stop()
        fcm?.stop()
        redis.stop()
    }

    /// Waits for `total` terminal outcomes in `ledger`; throws at once, with the logs, if a worker exits meanwhile.
    func waitForTerminal(_ total: Int, in ledger: ResultsLedger, seconds: Double) throws -> Bool {
        try ledger.waitForTerminal(total, seconds: seconds) {
            for (id, worker) in workers where !worker.isRunning {
                throw TestSupportError("worker \(id) exited:\n\(workerLogs())")
            }
        }
    }

    /// Waits for `total` terminal outcomes, then `linger` seconds more so that anything extra (a second terminal
    /// entry) shows up, and checks the contract against `expected`: whether all finished, and the problems.
    func finish(_ total: Int, in ledger: ResultsLedger, seconds: Double, linger: Double = 1.5,
                expected: [String: String]) throws -> (finished: Bool, problems: [String]) {
        let finished = try waitForTerminal(total, in: ledger, seconds: seconds)
        usleep(UInt32(linger * 1_000_000))
        ledger.poll()
        return (finished, ledger.contractProblems(expected: expected))
    }

    /// The workers' logs, for failure messages.
    func workerLogs(lastLines: Int = 15) -> String {
        workers.sorted { $0.key < $1.key }.map { id, process in
            let lines = process.output.split(separator: "\n").suffix(lastLines).joined(separator: "\n")
            return "--- worker \(id) (running: \(process.isRunning)) ---\n\(lines)"
        }.joined(separator: "\n")
    }

    func removeFiles() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// The in-process simulator writes to sockets that workers close (SIGTERM, SIGKILL); a write to a closed
/// socket raises SIGPIPE, whose default action would end the whole test process. `herald` itself ignores it
/// in main; the Simulators library leaves that to its host, so the tests do it too.
func ignoreBrokenPipes() {
    signal(SIGPIPE, SIG_IGN)
}

/// Runs the `herald` executable once with a deadline; output is stdout and stderr together, status nil when
/// it was still running at the deadline (and was stopped by its pid).
enum HeraldRun {
    static func run(herald: String, _ arguments: [String], seconds: Double = 30) throws -> (status: Int32?, output: String) {
        do {
            let result = try runProgram(herald, arguments, seconds: seconds)
            return (result.status, result.output)
        } catch let timeout as ProgramTimeout {
            return (nil, timeout.output)
        }
    }
}

/// A 64-character hexadecimal device token whose prefix picks its fate at the simulator.
func deviceToken(prefix: String, index: Int) -> String {
    let body = String(format: "%016llx", UInt64(index) &* 0x9E37_79B9_7F4A_7C15)
    let filler = String(repeating: "c", count: 64 - prefix.count - body.count)
    return prefix + filler + body
}

/// A well-formed job with a producer-given id.
func jobBytes(id: String, token: String, app: String? = nil, body: String = "hello") -> [UInt8] {
    let appField = app.map { "\"app\":\"\($0)\"," } ?? ""
    return Array("{\"id\":\"\(id)\",\(appField)\"token\":\"\(token)\",\"payload\":{\"aps\":{\"alert\":{\"title\":\"Herald e2e\",\"body\":\"\(body)\"}}}}".utf8)
}

/// A well-formed FCM job: the FCM v1 message to `token`, with string data.
func fcmJobBytes(id: String, token: String, body: String = "hello") -> [UInt8] {
    Array(#"{"id":"\#(id)","platform":"fcm","message":{"token":"\#(token)","notification":{"title":"Herald e2e","body":"\#(body)"},"data":{"job":"\#(id)"},"android":{"priority":"HIGH"}}}"#.utf8)
}

/// Counts of accepted notifications per token, and the number of extra (duplicate) deliveries.
func duplicateDeliveries(_ accepted: [MockAcceptedNotification]) -> (perToken: [String: Int], duplicates: Int) {
    var perToken: [String: Int] = [:]
    for notification in accepted { perToken[notification.token.lowercased(), default: 0] += 1 }
    let duplicates = perToken.values.reduce(0) { $0 + max(0, $1 - 1) }
    return (perToken, duplicates)
}

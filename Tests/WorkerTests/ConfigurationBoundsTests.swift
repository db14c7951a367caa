import Foundation
import Glibc
import HeraldProviders
import HeraldTestSupport
import Simulators
import Testing
import Worker

/// Every numeric setting has bounds the worker can run with (issue 30, item 3): the values that passed
/// `check-config` and then crashed the worker on an overflow are refused, each naming its key.
@Suite struct ConfigurationBoundsTests {
    private static let app = #""apps":[{"name":"shop","bundle_id":"com.example.shop","token":{"team_id":"ABCDE12345","key_id":"KEY1234567","key_file":"k.p8"}}]"#

    private func write(_ sections: String) throws -> String {
        let path = makeTemporaryDirectory("herald-bounds") + "/herald.json"
        try Data(("{" + Self.app + (sections.isEmpty ? "" : ", " + sections) + "}").utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    private func problems(_ sections: String, environment: [String: String] = [:]) throws -> [String] {
        let path = try write(sections)
        do {
            _ = try ConfigurationLoader.load(path: path, environment: environment)
            return []
        } catch {
            return error.problems
        }
    }

    /// The probe's reproductions: each crashed the worker at start, at the first result, at the first 503 or 429,
    /// or at SIGTERM.
    static let overflowing: [(key: String, json: String)] = [
        ("worker.lease_seconds", #""worker": {"lease_seconds": 2000000000000}"#),
        ("redis.connect_timeout_ms", #""redis": {"connect_timeout_ms": 9223372036854775807}"#),
        ("redis.command_timeout_ms", #""redis": {"command_timeout_ms": 9223372036854775807}"#),
        ("apns.ping_idle_seconds", #""apns": {"ping_idle_seconds": 9223372036854775807}"#),
        ("retry.give_up_after_seconds", #""retry": {"give_up_after_seconds": 9223372036854775807}"#),
        ("retry.server_error_base_seconds", #""retry": {"server_error_base_seconds": 9223372036854775807, "server_error_cap_seconds": 9223372036854775807}"#),
        ("retry.server_error_cap_seconds", #""retry": {"server_error_base_seconds": 9223372036854775807, "server_error_cap_seconds": 9223372036854775807}"#),
        ("retry.throttle_base_seconds", #""retry": {"throttle_base_seconds": 9223372036854775807, "throttle_cap_seconds": 9223372036854775807}"#),
        ("retry.throttle_cap_seconds", #""retry": {"throttle_base_seconds": 9223372036854775807, "throttle_cap_seconds": 9223372036854775807}"#),
        ("worker.shutdown_deadline_seconds", #""worker": {"shutdown_deadline_seconds": 9223372036854775807}"#),
        ("retry.queues.herald:queue.server_error_base_seconds",
         #""retry": {"queues": {"herald:queue": {"server_error_base_seconds": 9223372036854775807, "server_error_cap_seconds": 9223372036854775807}}}"#),
    ]

    @Test(arguments: overflowing)
    func aValueThatOverflowedTheWorkerIsRefusedNamingItsKey(_ case: (key: String, json: String)) throws {
        let found = try problems(`case`.json)
        #expect(found.contains { $0.contains("\(`case`.key) must be ") && $0.contains(", got ") }, "\(found)")
    }

    @Test func integersBeyondInt64AreRefusedNotClampedAnd1e300SaysItIsOutOfRange() throws {
        let huge = try problems(#""worker": {"max_in_flight": 18446744073709551616, "claim_batch": 99999999999999999999999}"#)
        #expect(huge.contains { $0.hasSuffix("worker.max_in_flight must be 1...1000000, got 18446744073709551616") }, "\(huge)")
        #expect(huge.contains { $0.contains("worker.claim_batch must be 1...10000, got ") }, "\(huge)")
        let far = try problems(#""worker": {"lease_seconds": 1e300}"#)
        #expect(far.contains { $0.hasSuffix("worker.lease_seconds must be 2...86400, got 1e+300") }, "\(far)")
        let fraction = try problems(#""worker": {"lease_seconds": 30.5}"#)
        #expect(fraction.contains { $0.hasSuffix("worker.lease_seconds must be a whole number, got 30.5") }, "\(fraction)")
    }

    @Test func environmentOverridesAreBoundedAndNameTheirKey() throws {
        let found = try problems("", environment: ["HERALD_MAX_IN_FLIGHT": "18446744073709551616", "HERALD_APNS_CONNECTIONS": "0"])
        #expect(found.contains("HERALD_MAX_IN_FLIGHT (worker.max_in_flight) must be 1...1000000, got 18446744073709551616"), "\(found)")
        #expect(found.contains("HERALD_APNS_CONNECTIONS (apns.connections_per_pool) must be 1...64, got 0"), "\(found)")
    }

    @Test func retryProblemsNameTheKeysNotSwiftProperties() throws {
        let found = try problems(#"""
        "redis": {"queues": ["q"]},
        "retry": {"server_error_cap_seconds": 10, "jitter_fraction": 1.5, "outage_pause_seconds": 60,
                  "queues": {"q": {"throttle_base_seconds": 700, "throttle_cap_seconds": 650}}}
        """#)
        #expect(found.contains { $0.hasSuffix("retry.server_error_cap_seconds (10) must be at least retry.server_error_base_seconds (900)") }, "\(found)")
        #expect(found.contains { $0.hasSuffix("retry.jitter_fraction must be 0 to below 1, got 1.5") }, "\(found)")
        #expect(found.contains { $0.hasSuffix("retry.outage_pause_cap_seconds (30) must be at least retry.outage_pause_seconds (60)") }, "\(found)")
        #expect(found.contains { $0.hasSuffix("retry.queues.q.throttle_cap_seconds (650) must be at least retry.queues.q.throttle_base_seconds (700)") },
                "\(found)")
        let text = found.joined(separator: "\n")
        for property in ["serverErrorBaseSeconds", "serverErrorCapSeconds", "throttleBaseSeconds", "jitterFraction", "outagePauseSeconds"] {
            #expect(!text.contains(property), "a Swift property name in a message:\n\(text)")
        }
    }

    /// Every declared number at its lowest and at its highest (one at a time, and all at once): the worker's own
    /// arithmetic (back-offs to the last attempt, give-up and expiry times, pauses, the drain deadline) runs
    /// without trapping, and both extremes together are a configuration `check-config` accepts.
    @Test func everyNumericSettingAtItsBoundsGivesDerivedValuesThatCompute() throws {
        let base = try ConfigurationLoader.load(path: try write(""), environment: [:])
        #expect(Configuration.numericSettings.count >= 30, "numeric settings declared: \(Configuration.numericSettings.map(\.key))")
        var lowest = base
        var highest = base
        for (key, access) in Configuration.numericSettings {
            for value in [access.minimum, access.maximum] {
                var c = base
                access.set(&c, value)
                #expect(!ConfigurationLoader.validate(c).contains { $0.hasPrefix(key + " must be") }, "\(key) = \(value) is out of its own bounds")
                _ = DerivedValues.compute(c)
            }
            access.set(&lowest, access.minimum)
            access.set(&highest, access.maximum)
        }
        for extreme in [lowest, highest] {
            #expect(ConfigurationLoader.validate(extreme) == [], "all at one bound")
            _ = DerivedValues.compute(extreme)
        }
    }
}

extension EndToEnd.HeraldCommands {
    /// The probe's path: `check-config` said "configuration OK" and the worker then died of an overflow. Now both
    /// refuse, with exit 78 and the key of every value out of bounds.
    @Test func checkConfigAndTheWorkerRefuseValuesOutOfBoundsNamingEachKey() throws {
        guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
        let directory = makeTemporaryDirectory("herald-bounds-cli")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/herald.json"
        try """
        {"apps": [{"name": "shop", "bundle_id": "com.example.shop", "token": {"team_id": "ABCDE12345", "key_id": "KEY1234567", "key_file": "k.p8"}}],
         "redis": {"url": "redis://127.0.0.1:1/0", "connect_timeout_ms": 9223372036854775807, "command_timeout_ms": 9223372036854775807},
         "apns": {"ping_idle_seconds": 9223372036854775807},
         "retry": {"give_up_after_seconds": 9223372036854775807, "throttle_base_seconds": 9223372036854775807, "throttle_cap_seconds": 9223372036854775807},
         "worker": {"lease_seconds": 2000000000000, "shutdown_deadline_seconds": 9223372036854775807}}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let keys = ["redis.connect_timeout_ms", "redis.command_timeout_ms", "apns.ping_idle_seconds", "retry.give_up_after_seconds",
                    "retry.throttle_base_seconds", "retry.throttle_cap_seconds", "worker.lease_seconds", "worker.shutdown_deadline_seconds"]
        for command in [["check-config", "--config", path, "--skip-redis"], ["worker", "--config", path]] {
            let run = try HeraldRun.run(herald: herald, command)
            #expect(run.status == 78, "\(command[0]): exit \(String(describing: run.status)): \(run.output)")
            #expect(!run.output.contains("configuration OK"), "\(run.output)")
            for key in keys { #expect(run.output.contains("\(key) must be "), "\(command[0]) does not name \(key):\n\(run.output)") }
        }
    }
}

extension EndToEnd {
    /// What `check-config` accepts, the worker runs: every number at its upper bound (but the counts that only
    /// multiply the threads, connections, shards and WAITs a test machine would have to host), through start,
    /// a delivery, a 503 and a 429 (where the back-off base and cap at Int64.max trapped) and a SIGTERM drain
    /// (where the deadline did).
    @Suite struct SettingsAtTheirBounds {
        @Test(.timeLimit(.minutes(2)))
        func aWorkerWithEveryNumberAtItsUpperBoundDeliversRetriesAndDrains() throws {
            let faults = MockFaultScript(seed: 30, latencyMs: MockLatency(min: 0, max: 2), rules: [
                MockFaultRule(fate: .failFirst, tokenPrefix: "e5", status: 503, reason: "ServiceUnavailable", count: 1),
                MockFaultRule(fate: .failFirst, tokenPrefix: "77", status: 429, reason: "TooManyRequests", count: 1),
            ])
            let world = try EndToEndWorld(faults: faults)
            defer { world.shutdown(); world.removeFiles() }
            let resources: Set<String> = ["worker.event_loops", "apns.connections_per_pool", "fcm.connections_per_pool", "redis.shards",
                                          "redis.wait_replicas"]
            var sections: [String: [String: Any]] = [:]
            for (key, access) in Configuration.numericSettings where !resources.contains(key) {
                let parts = key.split(separator: ".", maxSplits: 1).map(String.init)
                sections[parts[0], default: [:]][parts[1]] = Int64(access.maximum)
            }
            let config = try world.writeConfig(worker: sections["worker"] ?? [:], retry: sections["retry"] ?? [:], apns: sections["apns"] ?? [:],
                                               redis: sections["redis"] ?? [:])
            let check = try world.runHerald(["check-config", "--config", config, "--skip-redis"])
            #expect(check.status == 0, "\(check.output)")

            try world.push([jobBytes(id: "ok", token: deviceToken(prefix: "00", index: 1)),
                            jobBytes(id: "five-oh-three", token: deviceToken(prefix: "e5", index: 2)),
                            jobBytes(id: "four-two-nine", token: deviceToken(prefix: "77", index: 3))])
            let worker = try world.startWorker(id: "bounds-1", config: config)
            let redis = try world.connectRedis()
            let ledger = ResultsLedger(redisURL: world.redisURL)
            #expect(try ledger.waitForTerminal(1, seconds: 30), "\(world.workerLogs())")
            #expect(waitUntil(seconds: 30) { (try? redis.command(["ZCARD", "herald:retry"]).int) == 2 },
                    "the 503 and the 429 are scheduled for a retry:\n\(world.workerLogs())")
            #expect(worker.waitForExit(seconds: 0.5) == nil, "the worker died:\n\(worker.output.suffix(2000))")
            worker.signal(SIGTERM)
            let status = worker.waitForExit(seconds: 15)
            #expect(status == 0, "exit \(String(describing: status)) after SIGTERM:\n\(worker.output.suffix(2000))")
        }
    }
}

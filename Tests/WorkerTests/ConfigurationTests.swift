import Foundation
import HeraldProviders
import HeraldTestSupport
import PushCore
import Testing
import Worker

@Suite struct ConfigurationTests {
    private func write(_ json: String) throws -> String {
        let path = makeTemporaryDirectory("herald-config") + "/herald.json"
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    private let oneApp = #"{"apps":[{"name":"shop","bundle_id":"com.example.shop","token":{"team_id":"ABCDE12345","key_id":"KEY1234567","key_file":"k.p8"}}]}"#

    /// Issue 54: a worker's reload was refused because `api.keys` named an app the new file removed, though the
    /// worker does not read `api` (docs/configuration.md). The worker loads ignoring it; `herald api` and
    /// `check-config`, which load it, still refuse the same file.
    @Test func aSectionTheProcessDoesNotReadIsNeitherReadNorChecked() throws {
        let hash = String(repeating: "a", count: 64)
        let path = try write(#"""
            {"apps":[{"name":"shop","bundle_id":"com.example.shop","token":{"team_id":"ABCDE12345","key_id":"KEY1234567","key_file":"k.p8"}}],
             "api":{"keys":[{"name":"k","sha256":"\#(hash)","apps":["removed"]}],"max_connections":0}}
            """#)
        let worker = try ConfigurationLoader.load(path: path, environment: ["HERALD_API_LISTEN": "nonsense"], ignoring: ["api"])
        #expect(worker.api.keys.isEmpty && worker.api.listen == Configuration.APISettings().listen, "left at its defaults")
        do {
            _ = try ConfigurationLoader.load(path: path, environment: [:])
            Issue.record("the full load accepted api.keys naming a removed app")
        } catch {
            #expect(error.problems.contains("api.keys: key 'k' names app 'removed', which is not configured"), "\(error.problems)")
            #expect(error.problems.contains { $0.contains("api.max_connections") }, "\(error.problems)")
        }
    }

    /// The overrides of an ignored section are left out by the declared key's section, not by the variable's name:
    /// `HERALD_LOG_LEVEL` is `worker.log_level`'s though it does not start with `HERALD_WORKER_`.
    @Test func anIgnoredSectionsEnvironmentOverridesAreLeftOutByTheirKeysSection() throws {
        let path = try write(oneApp)
        let environment = ["HERALD_LOG_LEVEL": "debug", "HERALD_API_LISTEN": "127.0.0.1:9", "HERALD_REDIS_PREFIX": "kept"]
        let loaded = try ConfigurationLoader.load(path: path, environment: environment, ignoring: ["worker", "api"])
        #expect(loaded.worker.logLevel == Configuration.WorkerSettings().logLevel, "worker.log_level's override is of an ignored section")
        #expect(loaded.api.listen == Configuration.APISettings().listen, "api.listen's override is of an ignored section")
        #expect(loaded.redis.prefix == "kept", "redis is kept: its override applies")
        let all = try ConfigurationLoader.load(path: path, environment: environment)
        #expect(all.worker.logLevel == "debug" && all.api.listen == "127.0.0.1:9" && all.redis.prefix == "kept")
    }

    /// `read` groups each app's own problems by its name (what `check-config` leaves unproven), beside the list.
    @Test func readGroupsEachAppsOwnProblemsByItsName() throws {
        let path = try write(#"""
            {"apps":[{"name":"shop","bundle_id":"com.example.shop","token":{"team_id":"ABCDE12345","key_id":"KEY1234567","key_file":"k.p8"}},
                     {"name":"droid","platform":"fcm","fcm":{"service_account_file":""}}],
             "redis":{"prefix":""}}
            """#)
        let (configuration, problems) = ConfigurationLoader.read(path: path, environment: [:])
        #expect(configuration.apps.map(\.name) == ["shop", "droid"])
        #expect(problems.apps == ["droid": ["app 'droid': fcm.service_account_file is required"]], "\(problems.apps)")
        #expect(problems.hasProblems(app: "droid") && !problems.hasProblems(app: "shop"))
        #expect(problems.all.contains("redis.prefix must not be empty") && problems.all.last == "app 'droid': fcm.service_account_file is required",
                "\(problems.all)")
    }

    /// A `Configuration()` made without the providers' list, asked for a provider, stops with a message naming the
    /// platform and what to do, not an index out of range (an exit test: the precondition runs in a child process).
    @Test func aConfigurationWithoutProvidersStopsNamingThePlatformAndTheFix() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Configuration().providers.provider(for: .hms)
        }
        let text = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        #expect(text.contains("no provider for platform 'hms'") && text.contains("Configuration(providers: heraldProviders)"), "\(text)")
    }

    /// Issue 52: the file is strict JSON (a trailing comma is refused, as JSON has it), and a broken one is named at
    /// its line and column.
    @Test func brokenJSONIsNamedAtItsLineAndColumnAndATrailingCommaIsRefused() throws {
        for (json, place) in [("{\n  \"redis\": {\"url\": \"redis://x\",}\n}", "line 2, column 32"),
                              ("{\n  \"apps\": [\n    {\"name\": \"a\"},\n  ],\n}", "line 4, column 3"),
                              ("{\"apps\": [}", "line 1, column 11"), ("{\"apps\": ", "line 1, column 10")] {
            let path = try write(json)
            do {
                _ = try ConfigurationLoader.load(path: path, environment: [:])
                Issue.record("accepted: \(json)")
            } catch {
                #expect(error.problems.count == 1 && error.problems[0].contains("not valid JSON at \(place)"), "\(json): \(error.problems)")
            }
        }
    }

    @Test func defaultsFillEverythingButTheApps() throws {
        let configuration = try ConfigurationLoader.load(path: try write(oneApp), environment: [:])
        #expect(configuration.redis.url == "redis://127.0.0.1:6379/0")
        #expect(configuration.redis.queueKeys == ["herald:queue"])
        #expect(configuration.apns.productionURL == "https://api.push.apple.com:443")
        #expect(configuration.worker.maxInFlight == 8000)
        #expect(configuration.retry.maxAttempts == 8)
        #expect(configuration.apps.first?.defaultEnvironment == "production")
    }

    @Test func environmentOverridesTheFile() throws {
        let configuration = try ConfigurationLoader.load(path: try write(oneApp), environment: [
            "HERALD_REDIS_URL": "redis://10.0.0.9:7000/2", "HERALD_QUEUES": "a, b", "HERALD_MAX_IN_FLIGHT": "99",
            "HERALD_APNS_PRODUCTION_URL": "https://127.0.0.1:2197", "HERALD_LOG_LEVEL": "debug",
        ])
        #expect(configuration.redis.url == "redis://10.0.0.9:7000/2")
        #expect(configuration.redis.queueKeys == ["a", "b"])
        #expect(configuration.worker.maxInFlight == 99)
        #expect(configuration.apns.productionURL == "https://127.0.0.1:2197")
        #expect(configuration.worker.logLevel == "debug")
    }

    @Test func keysStartingWithDoubleSlashAreCommentsAtEveryLevelButTyposStillFail() throws {
        let commented = try write(#"""
        {"//": ["a file that explains itself"], "redis": {"//": "Redis 6.2 or newer", "url": "redis://10.0.0.1:6379/0"},
         "apps": [{"//": "one app", "name": "shop", "bundle_id": "com.example.shop",
                   "token": {"//key": "the .p8", "team_id": "ABCDE12345", "key_id": "KEY1234567", "key_file": "k.p8"}}],
         "worker": {"//": {"any": "json"}, "max_in_flight": 12}}
        """#)
        let configuration = try ConfigurationLoader.load(path: commented, environment: [:])
        #expect(configuration.redis.url == "redis://10.0.0.1:6379/0")
        #expect(configuration.worker.maxInFlight == 12)
        #expect(try ConfigurationLoader.loadRedisOnly(path: commented, environment: [:]).url == "redis://10.0.0.1:6379/0")
        // A single slash is not a comment: it is an unknown key like any other typo.
        let typo = try write(#"{"/": "not a comment", "redis": {"ur//l": "x"}, "apps": []}"#)
        do {
            _ = try ConfigurationLoader.load(path: typo, environment: [:])
            Issue.record("unknown keys loaded")
        } catch {
            #expect(error.problems.contains { $0.hasSuffix("unknown setting '/'") })
            #expect(error.problems.contains { $0.hasSuffix("unknown setting 'redis.ur//l'") })
        }
    }

    @Test func environmentFallbackIsOptInAndNeedsBothEnvironments() throws {
        let on = try ConfigurationLoader.load(path: try write(#"""
        {"apps":[{"name":"shop","bundle_id":"com.example.shop","environment_fallback":true,
                  "token":{"team_id":"ABCDE12345","key_id":"KEY1234567","key_file":"k.p8"}}]}
        """#), environment: [:])
        #expect(on.apps[0].environmentFallback)
        #expect(try ConfigurationLoader.load(path: try write(oneApp), environment: [:]).apps[0].environmentFallback == false)
        #expect {
            _ = try ConfigurationLoader.load(path: try write(#"""
            {"apps":[{"name":"shop","bundle_id":"com.example.shop","environment_fallback":true,"environments":["production"],
                      "token":{"team_id":"ABCDE12345","key_id":"KEY1234567","key_file":"k.p8"}}]}
            """#), environment: [:])
        } throws: { ($0 as? ConfigurationError)?.problems.contains { $0.contains("environment_fallback needs both") } == true }
    }

    @Test func idempotencyIsOffUnlessAWindowIsSetAndTheWindowIsBounded() throws {
        func load(_ worker: String) throws -> Configuration {
            try ConfigurationLoader.load(path: try write(#"{"worker":{\#(worker)},"# + oneApp.dropFirst()), environment: [:])
        }
        let off = try ConfigurationLoader.load(path: try write(oneApp), environment: [:])
        #expect(off.worker.idempotencyWindowSeconds == 0)
        #expect(DeliverySettings(configuration: off, workerID: "w").idempotencyWindowMilliseconds == 0)
        let day = try load(#""idempotency_window_seconds":86400"#)
        #expect(DeliverySettings(configuration: day, workerID: "w").idempotencyWindowMilliseconds == 86_400_000)
        for bad in ["-1", "2592001"] {
            #expect {
                _ = try load(#""idempotency_window_seconds":\#(bad)"#)
            } throws: { ($0 as? ConfigurationError)?.problems.contains { $0.contains("idempotency_window_seconds") } == true }
        }
    }

    @Test func theSchedulingHorizonIsAYearByDefaultAndBounded() throws {
        func load(_ worker: String) throws -> Configuration {
            try ConfigurationLoader.load(path: try write(#"{"worker":{\#(worker)},"# + oneApp.dropFirst()), environment: [:])
        }
        #expect(try ConfigurationLoader.load(path: try write(oneApp), environment: [:]).worker.maxScheduleDays == 365)
        #expect(try load(#""max_schedule_days":30"#).worker.maxScheduleDays == 30)
        for bad in ["0", "-1", "3651"] {
            #expect {
                _ = try load(#""max_schedule_days":\#(bad)"#)
            } throws: { ($0 as? ConfigurationError)?.problems.contains { $0.contains("worker.max_schedule_days") } == true }
        }
    }

    @Test func everyProblemIsReportedAtOnce() throws {
        let path = try write(#"""
        {"redis": {"url": "http://nope", "prefx": "x"},
         "worker": {"max_in_flight": "many", "run_reaper": 1},
         "retry": {"max_attempts": 0},
         "apps": [{"name": "a", "bundle_id": "", "token": {"team_id": "short", "key_id": "KEY1234567", "key_file": "k"},
                   "certificate": {"pem_file": "c.pem"}},
                  {"name": "a", "bundle_id": "b", "environments": ["staging"]}]}
        """#)
        do {
            _ = try ConfigurationLoader.load(path: path, environment: ["HERALD_MAX_IN_FLIGHT": "lots"])
            Issue.record("a broken configuration loaded")
        } catch {
            let text = error.problems.joined(separator: "\n")
            for expected in ["unknown setting 'redis.prefx'", "worker.max_in_flight must be a whole number", "worker.run_reaper must be true or false",
                             "HERALD_MAX_IN_FLIGHT must be a whole number", "redis.url: bad Redis URL", "retry.max_attempts must be 1...1000, got 0",
                             "bundle_id is required", "give either \"token\" or \"certificate\", not both", "the name is used twice",
                             "environment 'staging' is not production or sandbox", "needs \"token\""] {
                #expect(text.contains(expected), "missing problem: \(expected)\n\(text)")
            }
        }
    }

    @Test func valuesThatWouldCrashOrStallTheWorkerAreRefusedAndPasswordsNeverPrinted() throws {
        let path = try write(#"""
        {"redis": {"url": "redis://:s3cret@", "queues": ["ok", "bad\"quote"]},
         "apns": {"ping_idle_seconds": -1, "ping_timeout_seconds": 0, "max_queued_per_pool": 0},
         "worker": {"results_max_length": -5, "dead_max_length": 0, "id": ""},
         "apps": [{"name": "shop", "bundle_id": "com.example.shop", "token": {"team_id": "ABCDE12345", "key_id": "KEY1234567", "key_file": "k"}}]}
        """#)
        do {
            _ = try ConfigurationLoader.load(path: path, environment: [:])
            Issue.record("a configuration that would crash the worker loaded")
        } catch {
            let text = error.problems.joined(separator: "\n")
            for expected in ["redis.url:", "redis.queues:", "apns.ping_idle_seconds", "apns.ping_timeout_seconds",
                             "apns.max_queued_per_pool", "worker.results_max_length", "worker.dead_max_length", "worker.id"] {
                #expect(text.contains(expected), "missing problem: \(expected)\n\(text)")
            }
            #expect(!text.contains("s3cret"), "the Redis password was printed:\n\(text)")
        }
    }

    @Test func notJSONAndMissingFilesSayWhat() {
        #expect(throws: ConfigurationError.self) { _ = try ConfigurationLoader.load(path: "/nonexistent/herald.json", environment: [:]) }
        do {
            _ = try ConfigurationLoader.load(path: try write("{not json"), environment: [:])
        } catch let error as ConfigurationError {
            #expect(error.problems.first?.contains("not valid JSON") == true)
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func appsAreFoundByNameThenTopicThenAsTheOnlyOne() throws {
        let shop = Configuration.AppSettings(name: "shop", bundleID: "com.example.shop")
        let shopPlus = Configuration.AppSettings(name: "shop-plus", bundleID: "com.example.shop.plus")
        let directory = AppDirectory([shop, shopPlus])
        #expect(try directory.index(app: "shop-plus", topic: nil) == 1)
        #expect(try directory.index(app: nil, topic: "com.example.shop") == 0)
        #expect(try directory.index(app: nil, topic: "com.example.shop.voip") == 0)
        #expect(try directory.index(app: nil, topic: "com.example.shop.plus.voip") == 1, "the longest bundle ID wins")
        #expect(throws: AppDirectory.LookupError.self) { try directory.index(app: "nope", topic: nil) }
        #expect(throws: AppDirectory.LookupError.self) { try directory.index(app: nil, topic: "org.other") }
        #expect(throws: AppDirectory.LookupError.self) { try directory.index(app: nil, topic: nil) }
        #expect(try AppDirectory([shop]).index(app: nil, topic: nil) == 0)
    }

    @Test func apnsURLsNeedHTTPSAndAHost() {
        #expect(APNsURL("https://api.push.apple.com") == APNsURL("https://api.push.apple.com:443"))
        #expect(APNsURL("https://127.0.0.1:2197")?.port == 2197)
        #expect(APNsURL("http://api.push.apple.com") == nil)
        #expect(APNsURL("https://") == nil)
        #expect(APNsURL("https://host:99999") == nil)
    }
}

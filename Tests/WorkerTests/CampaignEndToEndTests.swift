import DeviceRegistry
import Foundation
import Glibc
import HeraldTestSupport
import PushCore
import Reactor
import RedisQueue
import Testing

extension EndToEnd {
    /// A topic campaign created with `herald campaigns create`, fanned out by `herald scheduler` (one pass at a time,
    /// then a process run to the end) and sent by a worker to the APNs simulator: every active subscriber gets
    /// exactly one terminal outcome whose id names the campaign, stale and removed devices and other topics none.
    @Suite struct Campaigns {
        /// `count` APNs devices of app `main` subscribed to `topic`.
        static func register(_ world: EndToEndWorld, _ count: Int, prefix: String, topic: String) throws -> [DeviceID] {
            let registry = DeviceRegistry(redis: try world.connectRedis(), shards: try QueueShards(single: try QueueKeys(prefix: "herald")))
            return try (0..<count).map { index in
                let id = DeviceID(app: "main", platform: .apns, token: deviceToken(prefix: prefix, index: index))
                try registry.register(id, DeviceAttributes(topics: [topic]))
                return id
            }
        }

        @Test(.timeLimit(.minutes(2)))
        func everyActiveSubscriberEndsOnceWithTheCampaignIDAndNoOneElseIsSent() throws {
            let world = try EndToEndWorld()
            defer { world.shutdown(); world.removeFiles() }
            let shards = try QueueShards(single: try QueueKeys(prefix: "herald"))
            let old = wallClockMillis() - 40 * 86_400_000
            var now = old
            let registry = DeviceRegistry(redis: try world.connectRedis(), shards: shards) { now }
            func register(_ prefix: String, _ count: Int, topic: String) throws -> [DeviceID] {
                try (0..<count).map { index in
                    let id = DeviceID(app: "main", platform: .apns, token: deviceToken(prefix: prefix, index: index))
                    try registry.register(id, DeviceAttributes(topics: [topic], locale: index % 3 == 0 ? "de" : "en"))
                    return id
                }
            }
            let stale = try register("a0", 100, topic: "scores")
            now = wallClockMillis()
            let active = try register("b0", 2000, topic: "scores")
            let removed = try register("c0", 100, topic: "scores")
            _ = try register("d0", 100, topic: "news")
            for id in removed { try registry.unregister(id) }
            #expect(try registry.sweep().madeStale == stale.count)

            let file = world.directory + "/goal.json"
            try Data(#"{"id": "goal-e2e", "app": "main", "audience": {"topic": "scores"}, "notification": {"title": "Goal", "body": "2:1", "localized": {"de": {"title": "Tor"}}}}"#.utf8)
                .write(to: URL(fileURLWithPath: file))
            let redisArgs = ["--redis", world.redisURL]
            let created = try world.runHerald(["campaigns", "create", "--file", file] + redisArgs)
            #expect(created.status == 0 && created.output.contains(#""state":"running""#), "\(created.output)")
            // One pass is one chunk (500): the cursor survives the process, the next one goes on from it.
            // (The stale devices come first in the index: the first chunk skips them.)
            for (pass, pushed) in [(1, 400), (2, 500)] {
                let once = try world.runHerald(["scheduler", "--once"] + redisArgs)
                #expect(once.status == 0 && once.output.contains(#""campaign_jobs":\#(pushed)}"#), "pass \(pass): \(once.output)")
            }
            let scheduler = try ChildProcess(name: "scheduler", executable: world.herald, arguments: ["scheduler"] + redisArgs)
            defer { _ = scheduler.stop() }
            let config = try world.writeConfig()
            try world.startWorker(id: "campaign", config: config)

            let ledger = ResultsLedger(redisURL: world.redisURL)
            let finished = try ledger.waitForTerminal(active.count, seconds: 60)
            #expect(finished, "only \(ledger.terminalCount) results:\n\(world.workerLogs())\n\(scheduler.output)")
            usleep(500_000)
            ledger.poll()
            let expected = Dictionary(uniqueKeysWithValues: active.map {
                (Campaign.jobID(campaign: "goal-e2e", platform: $0.platform, token: $0.token), "delivered")
            })
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")
            #expect(ledger.terminalCount == active.count)
            #expect(ledger.entries.allSatisfy { Campaign.campaignID(ofJob: $0.id) == "goal-e2e" })
            let sentTokens = Set(world.simulator.acceptedNotifications().map(\.token))
            #expect(sentTokens == Set(active.map(\.token)) && world.simulator.acceptedNotifications().count == active.count)

            // The scheduler counts the outcomes from the results stream.
            var status: JSONValue?
            let deadline = Date().addingTimeInterval(20)
            repeat {
                status = JSONValue(parsing: Array(try world.runHerald(["campaigns", "get", "goal-e2e"] + redisArgs).output.utf8))
                if status?["delivered"] == .number("2000") { break }
                usleep(200_000)
            } while Date() < deadline
            #expect(status?["state"] == .string("done") && status?["sent"] == .number("2000") && status?["skipped"] == .number("100"),
                    "\(String(describing: status))")
            #expect(status?["delivered"] == .number("2000") && status?["in_flight"] == .number("0"), "\(String(describing: status))")
        }
        /// Quiet hours from the configuration (`registry.apps`, in the app's zone for devices without one) hold a
        /// campaign's jobs past their `expiration`: each ends `failed` `Expired` and the simulator never sees it;
        /// the same devices' campaign that ignores quiet hours is delivered at once.
        @Test(.timeLimit(.minutes(2)))
        func quietHoursPastTheExpirationEndEachJobExpiredUnsentAndACampaignIgnoringThemIsDelivered() throws {
            let world = try EndToEndWorld()
            defer { world.shutdown(); world.removeFiles() }
            let devices = try Self.register(world, 20, prefix: "f0", topic: "night")
            // A window from an hour ago to two hours ahead in Asia/Kolkata (+05:30), the app's zone.
            let nowMs = wallClockMillis()
            let local = Int((nowMs / 60_000 + 330) % 1440)
            func hhmm(_ minutes: Int) -> String { String(format: "%02d:%02d", (minutes + 1440) % 1440 / 60, (minutes + 1440) % 1440 % 60) }
            let config = try world.writeConfig(registry: ["apps": ["main": ["time_zone": "Asia/Kolkata",
                                                                           "quiet_hours": ["start": hhmm(local - 60), "end": hhmm(local + 120)]]]])
            let redisArgs = ["--redis", world.redisURL]
            for (id, extra) in [("night", #""expiration": \#(nowMs / 1000 + 30)"#), ("loud", #""quiet_hours": false"#)] {
                let file = world.directory + "/\(id).json"
                try Data(#"{"id": "\#(id)", "app": "main", "audience": {"topic": "night"}, "notification": {"title": "Late"}, \#(extra)}"#.utf8)
                    .write(to: URL(fileURLWithPath: file))
                #expect(try world.runHerald(["campaigns", "create", "--file", file] + redisArgs).status == 0)
            }
            let scheduler = try ChildProcess(name: "scheduler", executable: world.herald, arguments: ["scheduler", "--config", config] + redisArgs)
            defer { _ = scheduler.stop() }
            try world.startWorker(id: "night", config: config)

            let ledger = ResultsLedger(redisURL: world.redisURL)
            #expect(try ledger.waitForTerminal(2 * devices.count, seconds: 60), "only \(ledger.terminalCount):\n\(world.workerLogs())\n\(scheduler.output)")
            usleep(500_000)
            ledger.poll()
            var expected: [String: String] = [:]
            for device in devices {
                expected[Campaign.jobID(campaign: "night", platform: device.platform, token: device.token)] = "failed"
                expected[Campaign.jobID(campaign: "loud", platform: device.platform, token: device.token)] = "delivered"
            }
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty && ledger.terminalCount == 2 * devices.count, "\(summarize(problems))")
            #expect(ledger.entries.filter { $0.outcome == "failed" }.allSatisfy { $0.fields["reason"] == "Expired" })
            let accepted = world.simulator.acceptedNotifications()
            #expect(accepted.count == devices.count && Set(accepted.map(\.token)) == Set(devices.map(\.token)), "each device once: the loud campaign's")
            let status = JSONValue(parsing: Array(try world.runHerald(["campaigns", "get", "night"] + redisArgs).output.utf8))
            #expect(status?["waiting_local"] == .number("20") && status?["sent"] == .number("20"), "\(String(describing: status))")
        }

        /// A paced campaign (so it is mid-fan-out when it happens): its scheduler SIGKILLed and another started, then
        /// Redis (AOF, fsync always) killed and restarted under it; then a worker sends it. Every subscriber exactly
        /// one job and one terminal outcome, the simulator each token once.
        @Test(.timeLimit(.minutes(2)))
        func aSchedulerAndRedisKilledMidFanOutNeitherSkipNorRepeatADevice() throws {
            let world = try EndToEndWorld(appendOnly: true)
            defer { world.shutdown(); world.removeFiles() }
            let devices = try Self.register(world, 3000, prefix: "e0", topic: "scores")
            let redisArgs = ["--redis", world.redisURL]
            let file = world.directory + "/paced.json"
            try Data(#"{"id": "paced", "app": "main", "audience": {"topic": "scores"}, "notification": {"title": "Goal"}, "rate_per_second": 1500}"#.utf8)
                .write(to: URL(fileURLWithPath: file))
            #expect(try world.runHerald(["campaigns", "create", "--file", file] + redisArgs).status == 0)
            func sent() throws -> Int {
                let text = try world.runHerald(["campaigns", "get", "paced"] + redisArgs).output
                guard case .number(let n)? = JSONValue(parsing: Array(text.utf8))?["sent"] else { return -1 }
                return Int(n) ?? -1
            }

            let first = try ChildProcess(name: "scheduler-1", executable: world.herald, arguments: ["scheduler"] + redisArgs)
            #expect(waitUntil(seconds: 10, interval: 0.1) { ((try? sent()) ?? 0) > 0 })
            first.signal(SIGKILL)
            _ = first.waitForExit(seconds: 10)
            let atKill = try sent()
            #expect(atKill > 0 && atKill < devices.count, "killed mid-fan-out: \(atKill) sent")

            let second = try ChildProcess(name: "scheduler-2", executable: world.herald, arguments: ["scheduler"] + redisArgs)
            defer { _ = second.stop() }
            usleep(300_000)
            world.redis.crash()
            try world.redis.start()
            #expect(waitUntil(seconds: 30, interval: 0.1) { ((try? sent()) ?? 0) == devices.count }, "the second scheduler finished:\n\(second.output)")
            #expect(try world.connectRedis().command(["LLEN", "herald:queue"]).int == Int64(devices.count), "one job per device, none twice")

            try world.startWorker(id: "paced", config: try world.writeConfig())
            let ledger = ResultsLedger(redisURL: world.redisURL)
            #expect(try ledger.waitForTerminal(devices.count, seconds: 60), "only \(ledger.terminalCount):\n\(world.workerLogs())")
            usleep(500_000)
            ledger.poll()
            let expected = Dictionary(uniqueKeysWithValues: devices.map { (Campaign.jobID(campaign: "paced", platform: $0.platform, token: $0.token), "delivered") })
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty && ledger.terminalCount == devices.count, "\(summarize(problems))")
            let accepted = world.simulator.acceptedNotifications()
            #expect(accepted.count == devices.count && Set(accepted.map(\.token)) == Set(devices.map(\.token)))
        }

        /// The suite's version of the million-device run (scripts/bench-campaign): a topic campaign with
        /// `finish_within` on a queue of its own, fair share with the transactional queue, through its scheduler
        /// stopped (SIGSTOP) for 9 s from a fifth of the deadline (longer than the chunk of catch-up the pacing clock
        /// allows: a rate fixed at creation would end about 4 s late), one worker SIGKILLed at 55 % and Redis (AOF,
        /// fsync always) killed and restarted at 70 %. Every active subscriber exactly one terminal outcome naming the
        /// campaign and sent at least once, stale ones neither, the fan-out's end within 5 % of the deadline, and
        /// transactional jobs pushed meanwhile each end once, before the campaign's fan-out does.
        @Test(.timeLimit(.minutes(3)))
        func aPacedCampaignThroughAWorkerKillAndARedisRestartEndsEveryDeviceOnceByItsDeadline() throws {
            let world = try EndToEndWorld(appendOnly: true)
            defer { world.shutdown(); world.removeFiles() }
            var now = wallClockMillis() - 40 * 86_400_000
            let registry = DeviceRegistry(redis: try world.connectRedis(), shards: try QueueShards(single: try QueueKeys(prefix: "herald"))) { now }
            func devices(_ prefix: String, _ count: Int) -> [(DeviceID, DeviceAttributes)] {
                (0..<count).map { (DeviceID(app: "main", platform: .apns, token: deviceToken(prefix: prefix, index: $0)), DeviceAttributes(topics: ["scores"])) }
            }
            let stale = devices("f0", 150)
            _ = try registry.register(many: stale)
            now = wallClockMillis()
            let active = devices("f1", 3000)
            _ = try registry.register(many: active)
            #expect(try registry.sweep().madeStale == stale.count)

            let config = try world.writeConfig(redis: ["queues": ["herald:queue", "herald:queue:bulk"], "queue_mode": "weighted"])
            let deadlineSeconds = 30.0
            let file = world.directory + "/deadline.json"
            try Data(#"{"id": "deadline", "app": "main", "audience": {"topic": "scores"}, "queue": "bulk", "notification": {"title": "Goal"}, "finish_within": \#(Int(deadlineSeconds))}"#.utf8)
                .write(to: URL(fileURLWithPath: file))
            let created = try world.runHerald(["campaigns", "create", "--file", file, "--config", config])
            #expect(created.status == 0, "\(created.output)")
            let started = Date()
            func at(_ fraction: Double) { Thread.sleep(until: started.addingTimeInterval(deadlineSeconds * fraction)) }
            let scheduler = try ChildProcess(name: "scheduler", executable: world.herald, arguments: ["scheduler", "--config", config])
            defer { _ = scheduler.stop() }
            let victim = try world.startWorker(id: "deadline-a", config: config)
            try world.startWorker(id: "deadline-b", config: config)

            // Transactional jobs, ten every half second for five seconds, onto the other queue.
            var transactional: [String: String] = [:]
            for round in 0..<10 {
                let jobs = (0..<10).map { index -> [UInt8] in
                    let id = "tx-\(round)-\(index)"
                    transactional[id] = "delivered"
                    return jobBytes(id: id, token: deviceToken(prefix: "f2", index: round * 10 + index))
                }
                try world.push(jobs)
                usleep(500_000)
            }
            at(0.2)
            scheduler.signal(SIGSTOP)
            at(0.5)
            scheduler.signal(SIGCONT)
            at(0.55)
            victim.signal(SIGKILL)
            _ = victim.waitForExit(seconds: 10)
            try world.startWorker(id: "deadline-c", config: config)
            at(0.7)
            world.redis.crash()
            try world.redis.start()

            let ledger = ResultsLedger(redisURL: world.redisURL)
            let finished = try ledger.waitForTerminal(active.count + transactional.count, seconds: 90) {
                if !scheduler.isRunning { throw TestSupportError("the scheduler exited:\n\(scheduler.output)") }
            }
            #expect(finished, "only \(ledger.terminalCount) results:\n\(world.workerLogs())\n\(scheduler.output)")
            usleep(1_000_000)
            ledger.poll()
            var expected = transactional
            for (id, _) in active { expected[Campaign.jobID(campaign: "deadline", platform: id.platform, token: id.token)] = "delivered" }
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty && ledger.terminalCount == expected.count, "\(ledger.terminalCount) terminal; \(summarize(problems))")
            #expect(ledger.entries.allSatisfy { expected[$0.id] != nil }, "no stale device and nothing else ended")
            // Sent: every active subscriber at least once (a worker killed mid-send may have sent some twice), no stale one.
            let sentTokens = Set(world.simulator.acceptedNotifications().map(\.token))
            #expect(active.allSatisfy { sentTokens.contains($0.0.token) } && !stale.contains { sentTokens.contains($0.0.token) })

            let redisArgs = ["--redis", world.redisURL]
            let status = JSONValue(parsing: Array(try world.runHerald(["campaigns", "get", "deadline"] + redisArgs).output.utf8))
            guard case .number(let createdAt)? = status?["created_at"], case .number(let finishedAt)? = status?["finished_at"],
                  let createdMs = Int64(createdAt), let finishedMs = Int64(finishedAt) else {
                Issue.record("no finish in \(String(describing: status))")
                return
            }
            let off = Double(finishedMs - createdMs) / 1000 - deadlineSeconds
            #expect(abs(off) <= deadlineSeconds * 0.05, "the fan-out ended \(off) s off its \(deadlineSeconds) s deadline")
            #expect(status?["sent"] == .number("3000") && status?["skipped"] == .number("150"), "\(String(describing: status))")
            let lastTransactional = ledger.entries.filter { transactional[$0.id] != nil && $0.isTerminal }.map(\.millis).max() ?? .max
            #expect(lastTransactional < finishedMs, "transactional jobs waited for the campaign")
            print("e2e campaign deadline: 3000 devices in \(deadlineSeconds) s through a worker SIGKILL and a Redis restart: fan-out ended \(String(format: "%+.2f", off)) s off the deadline; last transactional outcome \(Double(lastTransactional - createdMs) / 1000) s after creation")
        }
    }
}

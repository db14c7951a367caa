import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEndWaiting {
    /// Issue 28's done-when, against the FCM simulator enforcing FCM's quotas with its windows scaled down (a
    /// "minute" of one second, an "hour" of ten), so a run takes seconds.
    @Suite struct Budgets {
        static let devices = 200

        static func token(_ device: Int) -> String { "dev-\(device)-dGVzdA:APA91bHerald_budget" }

        /// 100 jobs to each of 200 devices, interleaved; or, with HERALD_BUDGETS_GROUPED=1 (`scripts/budgets-check
        /// --grouped`), each device's 100 in a row, so each device has a backlog its app's other jobs must get past.
        static func jobs(_ prefix: String) -> (jobs: [[UInt8]], expected: [String: String]) {
            let grouped = ProcessInfo.processInfo.environment["HERALD_BUDGETS_GROUPED"] == "1"
            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            for i in 0..<20_000 {
                let id = "\(prefix)-\(i)"
                jobs.append(fcmJobBytes(id: id, token: token(grouped ? i / (20_000 / devices) : i % devices)))
                expected[id] = "delivered"
            }
            return (jobs, expected)
        }

        /// Two workers, 20,000 jobs, every device over its quota if sent at once: once with budgets below the
        /// quotas (device 9 a second against the simulator's 20 a "minute" and 100 an "hour", the app 1,800 a
        /// second against 2,000 a "minute"), once without, same jobs, same simulator. Counts the simulator's quota
        /// refusals (429) of each and checks every job is delivered. About a minute: run by scripts/budgets-check
        /// (HERALD_BUDGETS_QUOTA_RUN=1), not by scripts/test, which must stay under 15 minutes.
        @Test(.timeLimit(.minutes(4)), .enabled(if: ProcessInfo.processInfo.environment["HERALD_BUDGETS_QUOTA_RUN"] == "1"))
        func budgetsKeepTwoWorkersInsideTheQuotasThatSendingAtOnceBreaks() throws {
            let quotas = MockFCMFaultScript(seed: 28, projectQuotaPerMinute: 2_000, deviceQuota: true, deviceQuotaPerMinute: 20,
                                            deviceQuotaPerHour: 100, quotaMinuteMs: 1_000, quotaHourMs: 10_000)
            let world = try EndToEndWorld(recordAccepted: false, fcmFaults: quotas)
            defer { world.shutdown(); world.removeFiles() }
            let fcm = try #require(world.fcm)
            var figures: [String: (rejections: Int, seconds: Double)] = [:]
            for (run, budgets) in [("on", ["device_per_second": 9, "app_per_second": 1_800] as [String: Any]), ("off", [:])] {
                try fcm.replaceFaults(quotas)
                fcm.resetStats()
                let redis = try world.connectRedis()
                _ = try redis.command(["DEL", "herald:results"])
                let config = try world.writeConfig(name: "budgets-\(run)", worker: ["max_in_flight": 2_000, "claim_batch": 200],
                                                   budgets: budgets)
                let (jobs, expected) = Self.jobs(run)
                try world.push(jobs)
                let started = Date()
                try world.startWorker(id: "\(run)-1", config: config)
                try world.startWorker(id: "\(run)-2", config: config)
                let ledger = ResultsLedger(redisURL: world.redisURL)
                let (finished, problems) = try world.finish(jobs.count, in: ledger, seconds: 150, expected: expected)
                let seconds = Date().timeIntervalSince(started)
                #expect(finished, "\(run): \(ledger.terminalCount) of \(jobs.count) finished\n\(world.workerLogs())")
                #expect(problems.isEmpty, "\(run): \(summarize(problems))")
                for id in ["\(run)-1", "\(run)-2"] { world.stopWorker(id: id) }
                figures[run] = (fcm.stats().quotaRejections, seconds)
                let held = ledger.entries.filter { $0.outcome == "retrying" && $0.fields["reason"]?.hasPrefix("RateLimited:") == true }.count
                print("budgets \(run): \(fcm.stats().quotaRejections) quota 429s, \(held) jobs paced, \(jobs.count) delivered in \(String(format: "%.1f", seconds)) s")
            }
            let on = try #require(figures["on"]), off = try #require(figures["off"])
            #expect(off.rejections > 100, "without budgets the quotas are broken (else the test proves nothing): \(off.rejections)")
            #expect(on.rejections * 100 < off.rejections, "with budgets fewer than 1 % of the 429s: \(on.rejections) against \(off.rejections)")
        }

        /// 10,000 jobs to one token under a per-device budget of 1,000 a second: every job is delivered, the run
        /// takes at least the 10 s the budget allows, and by the simulator's own clock no second holds more than
        /// 1,000 sends and the stalls of a loaded machine.
        /// Issue 54: a device budget key holding a time ~292 years ahead trapped the worker (and again after every
        /// restart) and was written back with a 292,000-year TTL. A real worker now reports it, resets it and
        /// delivers the device's jobs, paced from a fresh start.
        @Test(.timeLimit(.minutes(2)))
        func aBudgetKeyFarInTheFutureIsResetAndTheJobsDelivered() throws {
            let world = try EndToEndWorld()
            defer { world.shutdown(); world.removeFiles() }
            let config = try world.writeConfig(name: "corrupt-budget", budgets: ["device_per_second": 20])
            let token = deviceToken(prefix: "00", index: 1)
            let key = "herald:budget:device:\(token):s"
            _ = try world.connectRedis().command(["SET", key, String(Int64.max / 1000), "PX", String(Int64.max / 1_000_000)])
            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            for i in 0..<10 {
                jobs.append(jobBytes(id: "corrupt-\(i)", token: token))
                expected["corrupt-\(i)"] = "delivered"
            }
            try world.push(jobs)
            let worker = try world.startWorker(id: "c1", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            let (finished, problems) = try world.finish(jobs.count, in: ledger, seconds: 30, expected: expected)
            #expect(finished, "\(ledger.terminalCount) of \(jobs.count)\n\(world.workerLogs())")
            #expect(problems.isEmpty, "\(summarize(problems))")
            #expect(worker.isRunning, "the worker did not trap")
            #expect(worker.output.contains("budget key held no usable time; reset"), "\(world.workerLogs())")
            let ttl = try #require(world.connectRedis().command(["PTTL", key]).int)
            #expect(ttl < 60_000, "the key lives as long as its pacing, not 292,000 years: \(ttl) ms")
        }

        @Test(.timeLimit(.minutes(3)))
        func tenThousandJobsToOneTokenGoAtMostNASecond() throws {
            let perSecond = 1_000
            let world = try EndToEndWorld(recordAccepted: true, fcmFaults: MockFCMFaultScript(seed: 28))
            defer { world.shutdown(); world.removeFiles() }
            let fcm = try #require(world.fcm)
            let config = try world.writeConfig(name: "paced", worker: ["max_in_flight": 2_000, "claim_batch": 200],
                                               budgets: ["device_per_second": perSecond])
            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            for i in 0..<10_000 {
                jobs.append(fcmJobBytes(id: "one-\(i)", token: Self.token(0)))
                expected["one-\(i)"] = "delivered"
            }
            try world.push(jobs)
            try world.startWorker(id: "p1", config: config)
            try world.startWorker(id: "p2", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            let (finished, problems) = try world.finish(jobs.count, in: ledger, seconds: 120, expected: expected)
            #expect(finished, "\(ledger.terminalCount) of \(jobs.count)\n\(world.workerLogs())")
            #expect(problems.isEmpty, "\(summarize(problems))")
            let times = fcm.acceptedMessages().map(\.timeMillis).sorted()
            #expect(times.count == jobs.count)
            let buckets = Dictionary(grouping: times) { $0 / 1000 }.values.map(\.count)
            var sliding = 0
            var low = 0
            for high in times.indices {
                while times[high] - times[low] >= 1000 { low += 1 }
                sliding = max(sliding, high - low + 1)
            }
            let span = Double((times.last ?? 0) - (times.first ?? 0)) / 1000
            print("paced: \(times.count) sends over \(String(format: "%.1f", span)) s, busiest calendar second \(buckets.max() ?? 0), busiest sliding second \(sliding) (budget \(perSecond))")
            // The slots hold at most `perSecond` in any second (`BudgetCheckTests`, by Redis's clock). What the
            // simulator stamps is later by `pacedGraceMilliseconds` at most and the way there, and by any stall
            // of a worker or of the simulator (in this process, beside other tests): a stall of some tens of ms
            // on a loaded two-core machine bunches that much of the sends (CI saw 1,023 in a calendar second,
            // 1,047 in a sliding one; 1,125 in a sliding one with a build beside it). So a second may hold up to half
            // as much again: unpaced, the 10,000 would go in about a second (ten times the budget), and the whole run
            // can be no faster than the budget, which no stall can fake.
            #expect(span >= Double(times.count) / Double(perSecond), "10,000 sends over \(span) s")
            #expect((buckets.max() ?? 0) <= perSecond + perSecond / 2, "busiest calendar second: \(buckets.max() ?? 0)")
            #expect(sliding <= perSecond + perSecond / 2, "busiest sliding second: \(sliding)")
            #expect(!ledger.entries.contains { $0.outcome == "failed" })
        }
    }
}

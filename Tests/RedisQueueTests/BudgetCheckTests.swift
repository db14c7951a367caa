import Glibc
import Testing
@testable import RedisQueue

/// Issue 28, item 2: the GCRA script against a real redis-server, key-checked (`TestRedis.blocking`): budgets
/// shared by several workers, each job told to go now or the time reserved for it.
@Suite struct BudgetCheckTests {
    private func queue(_ keys: QueueKeys, worker: String) throws -> BlockingJobQueue {
        try BlockingJobQueue(redis: try TestRedis.blocking(), keys: keys, workerID: worker)
    }

    private func serverMillis() throws -> Int64 {
        let reply = try BlockingRedis(url: TestRedis.url).command(["TIME"])
        let parts = reply.array?.compactMap(\.string).compactMap { Int64($0) } ?? []
        return parts[0] * 1000 + parts[1] / 1000
    }

    /// The call's layout, which the script reads by position: each budget's key once in first-use order, then the
    /// calendars of those that keep one; ARGV the job and budget counts, per budget its interval and its calendar's
    /// 1-based KEYS position (0: none), per job its limit count and its budgets' positions.
    @Test func theCheckDeclaresEachBudgetOnceThenItsCalendarAndPointsJobsAtThem() throws {
        let commands = try QueueCommands(keys: QueueKeys(prefix: "p"), workerID: "w", queueKeys: nil, options: JobQueueOptions())
        let app = BudgetLimit(name: "app:a:s", intervalMicros: 10_000, calendar: true)
        let device = BudgetLimit(name: "device:d:s", intervalMicros: 500_000)
        let queue = BudgetLimit(name: "queue:q:s", intervalMicros: 2_000, calendar: true)
        let (_, keys, arguments) = commands.budgetCheck([[device, app], [], [app], [device, app, queue]])
        #expect(keys.map { String(decoding: $0, as: UTF8.self) } ==
                ["p:budget:device:d:s", "p:budget:app:a:s", "p:budget:queue:q:s", "p:budgetcal:app:a:s", "p:budgetcal:queue:q:s"])
        #expect(arguments.decoded.map { String(decoding: $0, as: UTF8.self) } ==
                ["4", "3", "500000", "0", "10000", "4", "2000", "5", "2", "1", "2", "0", "1", "2", "3", "1", "2", "3"])
    }

    /// Two workers ask in turn, 50 jobs a call, for 1,000 sends to one device at 100 a second: one goes at once,
    /// every other gets its own time, 10 ms after the one before whichever worker asked; so any second holds
    /// at most 100.
    @Test func twoWorkersShareOneBudgetAndEverySendGetsItsOwnSlot() throws {
        let keys = TestRedis.keys()
        let workers = [try queue(keys, worker: "w1"), try queue(keys, worker: "w2")]
        let limit = [BudgetLimit(name: "device:tok:s", intervalMicros: 10_000)]
        let start = try serverMillis()
        var times: [Int64] = []
        var allowed = 0
        // The first send goes at the server's time during the first call, somewhere between `start` and
        // `afterFirst` (a sanitized build can spend tens of milliseconds there); the rest are spaced from it.
        var afterFirst = start
        for call in 0..<20 {
            for verdict in try workers[call % 2].checkBudgets(Array(repeating: limit, count: 50)) {
                switch verdict {
                case .allowed: allowed += 1; times.append(start)
                case .held(let at, let index): #expect(index == 0); times.append(at)
                }
            }
            if call == 0 { afterFirst = try serverMillis() }
        }
        #expect(allowed == 1, "only the first fits now: the rest would make a burst")
        #expect(times.count == 1000)
        let held = Array(times.dropFirst())
        #expect(zip(held, held.dropFirst()).allSatisfy { $1 - $0 == 10 }, "evenly spaced across both workers")
        #expect(held.first! - start >= 9 && held.first! - afterFirst <= 11, "10 ms after the one that went")
        let perSecond = Dictionary(grouping: held) { ($0 - held.first!) / 1000 }.values.map(\.count).max()
        #expect(perSecond == 100)
        // The budget's key lives as long as its reservations and no longer.
        let ttl = try BlockingRedis(url: TestRedis.url).command(["PTTL", "\(keys.prefix):budget:device:tok:s"]).int ?? -1
        #expect(ttl > 9_000 && ttl <= 10_100)
    }

    /// A job counts against each of its budgets; the one that holds it longest names it, and a job without
    /// budgets in the same call goes.
    @Test func aJobWaitsForTheStrictestOfItsBudgets() throws {
        let keys = TestRedis.keys()
        let worker = try queue(keys, worker: "w")
        let app = BudgetLimit(name: "app:shop:s", intervalMicros: 10_000, calendar: true)
        let deviceA = BudgetLimit(name: "device:a:s", intervalMicros: 500_000)
        let deviceB = BudgetLimit(name: "device:b:s", intervalMicros: 500_000)
        let start = try serverMillis()
        let verdicts = try worker.checkBudgets([[deviceA, app], [deviceB, app], [], [deviceA, app], [deviceB, app]])
        let end = try serverMillis()
        #expect(verdicts[0] == .allowed)
        #expect(verdicts[2] == .allowed)
        guard case .held(let b, 1) = verdicts[1], case .held(let a2, 0) = verdicts[3], case .held(let b2, 0) = verdicts[4] else {
            Issue.record("verdicts: \(verdicts)")
            return
        }
        // Reservations count from the server's time during the call, between `start` and `end`.
        #expect(b - start >= 9 && b - end <= 11, "device b is fresh: the app's spacing holds it")
        #expect(a2 - start >= 499 && a2 - end <= 501, "device a's second waits half a second")
        #expect(b2 - b == 500)
    }

    /// A long backlog to one device does not hold back its app's jobs to other devices: the backlog's sends are
    /// reserved in the app's calendar at the device's times, and the app's frontier stays near now.
    @Test func aBacklogToOneDeviceLeavesTheAppsOtherDevicesTheirTurn() throws {
        let keys = TestRedis.keys()
        let worker = try queue(keys, worker: "w")
        let app = BudgetLimit(name: "app:shop:s", intervalMicros: 10_000, calendar: true)
        let busy = BudgetLimit(name: "device:busy:s", intervalMicros: 1_000_000)
        let start = try serverMillis()
        let backlog = try worker.checkBudgets(Array(repeating: [busy, app], count: 20))
        let others = try worker.checkBudgets((0..<5).map { [BudgetLimit(name: "device:d\($0):s", intervalMicros: 1_000_000), app] })
        let end = try serverMillis()
        #expect(backlog[0] == .allowed)
        let backlogTimes = backlog.dropFirst().compactMap { if case .held(let at, 0) = $0 { at } else { nil } }
        #expect(backlogTimes.count == 19, "the device's budget holds its backlog: \(backlog)")
        #expect(zip(backlogTimes, backlogTimes.dropFirst()).allSatisfy { $1 - $0 == 1_000 }, "\(backlogTimes)")
        // The app's next free times follow the one send that went, 10 ms apart, not the backlog's 19 s.
        let otherTimes = others.compactMap { if case .held(let at, 1) = $0 { at } else { nil } }
        #expect(otherTimes.count == 5, "\(others)")
        #expect(otherTimes.allSatisfy { $0 - end <= 61 }, "other devices wait for the app's spacing only: \(otherTimes.map { $0 - start })")
        #expect(zip(otherTimes, otherTimes.dropFirst()).allSatisfy { $1 - $0 == 10 }, "\(otherTimes)")
        // The calendar lives as long as its last reservation.
        let redis = try BlockingRedis(url: TestRedis.url)
        #expect(try redis.command(["ZCARD", "\(keys.prefix):budgetcal:app:shop:s"]).int == 19)
        let ttl = try redis.command(["PTTL", "\(keys.prefix):budgetcal:app:shop:s"]).int ?? -1
        #expect(ttl > 17_000 && ttl <= 19_100, "ttl \(ttl)")
    }

    /// Whatever the mix, no two reservations of one budget come closer than its interval, across calls, workers
    /// and calendars; the frontier swallows calendar entries as it reaches them.
    @Test func mixedBudgetsNeverPutTwoSendsOfOneBudgetWithinItsInterval() throws {
        let keys = TestRedis.keys()
        let workers = [try queue(keys, worker: "w1"), try queue(keys, worker: "w2")]
        let apps = (0..<2).map { BudgetLimit(name: "app:a\($0):s", intervalMicros: 20_000, calendar: true) }
        // half the devices keep calendars too, so calendars meet calendars
        let devices = (0..<6).map { BudgetLimit(name: "device:d\($0):s", intervalMicros: 150_000 + 50_000 * Int64($0 % 3), calendar: $0 < 3) }
        let queueBudget = BudgetLimit(name: "queue:q:s", intervalMicros: 5_000, calendar: true)
        var rng = SystemRandomNumberGenerator()
        var reserved: [String: [(lo: Int64, hi: Int64)]] = [:]  // ms bounds of each reservation's time
        for call in 0..<12 {
            var jobs: [[BudgetLimit]] = []
            for _ in 0..<40 {
                var limits = [devices.randomElement(using: &rng)!]
                if Bool.random(using: &rng) { limits.append(apps.randomElement(using: &rng)!) }
                if Int.random(in: 0..<4, using: &rng) == 0 { limits.append(queueBudget) }
                jobs.append(limits.shuffled(using: &rng))
            }
            let before = try serverMillis()
            let verdicts = try workers[call % 2].checkBudgets(jobs)
            let after = try serverMillis()
            for (limits, verdict) in zip(jobs, verdicts) {
                // held times are rounded up to the ms; an allowed send went at the server's time during the call
                let bounds: (Int64, Int64) = if case .held(let at, _) = verdict { (at - 1, at) } else { (before, after) }
                for limit in limits { reserved[limit.name, default: []].append(bounds) }
            }
            if call % 4 == 3 { usleep(300_000) }  // let some frontiers fall behind now
        }
        let intervals = Dictionary(uniqueKeysWithValues: (apps + devices + [queueBudget]).map { ($0.name, $0.intervalMicros / 1000) })
        for (name, times) in reserved {
            let sorted = times.sorted { $0.lo < $1.lo }
            // the latest the later one can be, less the earliest the earlier one can be: at least the interval
            for (a, b) in zip(sorted, sorted.dropFirst()) {
                #expect(b.hi - a.lo >= intervals[name]!, "\(name): reservations \(a) and \(b) closer than \(intervals[name]!) ms")
            }
        }
    }

    /// A calendar entry holds the interval after it too, so its keys outlive it by that much: a send just after
    /// the entry's time still waits out the interval.
    @Test func aCalendarEntryStillHoldsItsIntervalOnceItsTimeHasPassed() throws {
        let keys = TestRedis.keys()
        let worker = try queue(keys, worker: "w")
        let app = BudgetLimit(name: "app:shop:s", intervalMicros: 300_000, calendar: true)
        let device = BudgetLimit(name: "device:d:s", intervalMicros: 600_000)
        let verdicts = try worker.checkBudgets([[device, app], [device, app]])
        guard verdicts[0] == .allowed, case .held(let entry, 0) = verdicts[1] else {
            Issue.record("verdicts: \(verdicts)")
            return
        }
        #expect(try BlockingRedis(url: TestRedis.url).command(["ZCARD", "\(keys.prefix):budgetcal:app:shop:s"]).int == 1)
        while try serverMillis() < entry + 50 { usleep(10_000) }
        let after = try worker.checkBudgets([[app]])
        guard case .held(let next, 0) = after[0] else {
            Issue.record("a send 50 ms after the entry went at once: \(after)")
            return
        }
        #expect(next - entry >= 299, "the interval after the entry: \(next - entry) ms")
    }

    /// A chain of calendar entries longer than the clash search (1,000 steps) sends the job past the chain's end,
    /// never onto an entry: 1,100 devices' second jobs fill the app's calendar an interval apart, and a job whose
    /// own budget lands at the chain's start still gets a time of its own.
    @Test func aChainLongerThanTheSearchIsGonePastNotLandedOn() throws {
        let keys = TestRedis.keys()
        let worker = try queue(keys, worker: "w")
        let app = BudgetLimit(name: "app:shop:s", intervalMicros: 1_000, calendar: true)
        let y = BudgetLimit(name: "device:y:s", intervalMicros: 10_000_500)
        let devices = (0..<1_100).map { BudgetLimit(name: "device:d\($0):s", intervalMicros: 10_000_000) }
        let jobs = [[y, app]] + devices.map { [$0, app] } + devices.map { [$0, app] } + [[y, app]]
        let verdicts = try worker.checkBudgets(jobs)
        let held = verdicts.compactMap { if case .held(let at, _) = $0 { at } else { nil } }
        #expect(held.count == jobs.count - 1)
        // each held time is rounded up to the ms and the app's interval is 1 ms: distinct times, or two sends met
        #expect(Set(held).count == held.count, "\(held.count - Set(held).count) times taken twice")
    }

    /// A caller that declares no calendar for a budget (one whose kind of budget keeps none) leaves its calendar flag
    /// in place, so the callers that keep one still go around its entries.
    @Test func aCallerWithoutTheCalendarLeavesItForTheOthers() throws {
        let keys = TestRedis.keys()
        let worker = try queue(keys, worker: "w")
        let app = BudgetLimit(name: "app:shop:s", intervalMicros: 100_000, calendar: true)
        let plainApp = BudgetLimit(name: "app:shop:s", intervalMicros: 100_000)
        let device = BudgetLimit(name: "device:d:s", intervalMicros: 1_000_000)
        guard case .held(let entry, 0) = try worker.checkBudgets([[device, app], [device, app]])[1] else {
            Issue.record("no calendar entry")
            return
        }
        _ = try worker.checkBudgets([[plainApp]])
        let times = try worker.checkBudgets(Array(repeating: [app], count: 12)).compactMap { if case .held(let at, 0) = $0 { at } else { nil } }
        #expect(times.count == 12)
        #expect(times.allSatisfy { abs($0 - entry) >= 99 }, "a send within the interval of the entry at \(entry): \(times)")
    }

    /// A calendar key of another type is reported and left alone; its budget still spaces its sends, as a plain
    /// GCRA (the backlog's reservations move the app's frontier).
    @Test func aCalendarKeyOfAnotherTypeIsReportedAndItsBudgetStillHolds() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let worker = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        var problems: [QueueKeyProblem] = []
        worker.onKeyProblem = { problems.append($0) }
        let calendar = "\(keys.prefix):budgetcal:app:shop:s"
        _ = try redis.command(["RPUSH", calendar, "x"])
        let app = BudgetLimit(name: "app:shop:s", intervalMicros: 10_000, calendar: true)
        let busy = BudgetLimit(name: "device:busy:s", intervalMicros: 1_000_000)
        let verdicts = try worker.checkBudgets([[busy, app], [busy, app], [app]])
        #expect(verdicts[0] == .allowed)
        guard case .held(let second, 0) = verdicts[1], case .held(let third, 0) = verdicts[2] else {
            Issue.record("verdicts: \(verdicts)")
            return
        }
        #expect(third - second == 10, "without its calendar the app's next send follows the backlog's")
        #expect(try redis.command(["LLEN", calendar]).int == 1)
        #expect(problems.map(\.key) == [calendar] && problems.first?.expected == "zset")
    }

    /// A budget key of another type is reported and left alone; its jobs go as if it were unset.
    @Test func aBudgetKeyOfAnotherTypeIsReportedAndLeftAlone() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let worker = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        var problems: [QueueKeyProblem] = []
        worker.onKeyProblem = { problems.append($0) }
        let key = "\(keys.prefix):budget:app:shop:s"
        _ = try redis.command(["RPUSH", key, "x"])
        let limit = [BudgetLimit(name: "app:shop:s", intervalMicros: 1_000_000)]
        #expect(try worker.checkBudgets([limit, limit]) == [.allowed, .allowed])
        #expect(try redis.command(["LLEN", key]).int == 1)
        #expect(problems.map(\.key) == [key] && problems.first?.expected == "string")
    }

    /// Issue 54: a frontier ~292 years ahead (as a stray write left one) crashed the worker and was written back
    /// with a 292,000-year TTL. Now any frontier that is not a time, or lies beyond the 3,650-day horizon, is
    /// reported and reset: the job goes now, the key is rewritten with a fresh frontier and a short life.
    @Test(arguments: ["9223372036854775807", "1e300", "inf", "nan", "soon"])
    func aFrontierThatIsNoUsableTimeIsReportedAndReset(value: String) throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let worker = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        var problems: [QueueKeyProblem] = []
        worker.onKeyProblem = { problems.append($0) }
        let key = "\(keys.prefix):budget:device:tok:s"
        _ = try redis.command(["SET", key, value])
        let limit = [BudgetLimit(name: "device:tok:s", intervalMicros: 1_000_000)]
        let before = try serverMillis()
        let verdicts = try worker.checkBudgets([limit, limit])
        #expect(verdicts.first == .allowed, "\(value): the first job goes at once")
        guard case .held(let at, _)? = verdicts.last else { Issue.record("\(value): the second job waits its interval"); return }
        #expect(at >= before + 1000 && at <= before + 2000, "\(value): \(at - before) ms")
        #expect(problems.map(\.key) == [key] && problems.first?.wasReset == true, "\(problems)")
        #expect(problems.first?.description.contains("reset") == true)
        let frontier = try #require(Double(redis.command(["GET", key]).string ?? ""))
        #expect(frontier < Double(before + 10_000) * 1000, "\(value): rewritten with a fresh frontier, not the bad value")
        let ttl = try #require(redis.command(["PTTL", key]).int)
        #expect(ttl > 0 && ttl <= 3_000, "\(value): a short life, not the bad value's: \(ttl) ms")
        // The next call finds a good frontier: nothing more to report.
        _ = try worker.checkBudgets([limit])
        #expect(problems.count == 1)
    }

    /// A frontier far ahead but within the horizon is a backlog pacing made: honoured, not reset.
    @Test func aFrontierWithinTheHorizonIsHonoured() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let worker = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w")
        var problems: [QueueKeyProblem] = []
        worker.onKeyProblem = { problems.append($0) }
        let key = "\(keys.prefix):budget:device:tok:h"
        let tenDays: Int64 = 10 * 86_400_000
        let now = try serverMillis()
        _ = try redis.command(["SET", key, String((now + tenDays) * 1000)])
        let verdicts = try worker.checkBudgets([[BudgetLimit(name: "device:tok:h", intervalMicros: 3_600_000_000)]])
        guard case .held(let at, _)? = verdicts.first else { Issue.record("held behind the backlog"); return }
        #expect(at - now >= tenDays - 1000 && at - now <= tenDays + 1000)
        #expect(problems.isEmpty)
    }
}

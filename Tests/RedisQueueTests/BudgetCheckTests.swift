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
        let app = BudgetLimit(name: "app:shop:s", intervalMicros: 10_000)
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
}

import Foundation
import HeraldTestSupport
import RedisQueue
import Testing

extension EndToEnd {
    /// Fair share, measured: a 50,000-job backlog in one queue does not hold up jobs pushed to a second queue of
    /// equal weight; they are delivered while the backlog is still there, push to result p99 under a second.
    @Suite struct FairShare {
        @Test(.timeLimit(.minutes(3)))
        func jobsOfASecondEqualWeightQueueAreDeliveredWithinASecondBehindABigBacklog() throws {
            let world = try EndToEndWorld(recordAccepted: false)
            defer { world.shutdown(); world.removeFiles() }
            let bulk = "herald:queue:bulk", login = "herald:queue:login"
            let backlog = 50_000
            try world.push((0..<backlog).map { jobBytes(id: "bulk-\($0)", token: deviceToken(prefix: "00", index: $0)) }, queue: bulk)
            let config = try world.writeConfig(worker: ["max_in_flight": 200, "claim_batch": 50],
                                               redis: ["queues": [bulk, login], "queue_mode": "weighted", "queue_weights": [bulk: 1, login: 1]])
            try world.startWorker(id: "fair-1", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            // Steady state first: the worker is busy with the backlog.
            #expect(try waitUntil(seconds: 60, interval: 0.1) {
                _ = ledger.poll()
                if let (id, worker) = world.workers.first(where: { !$0.value.isRunning }) {
                    throw TestSupportError("worker \(id) exited:\n\(worker.output)")
                }
                return ledger.terminalCount >= 1_000
            }, "the backlog is not being worked:\n\(world.workerLogs())")

            // 200 login codes, 20 every 100 ms, each with the time it was pushed.
            var pushedAt: [String: Int64] = [:]
            for round in 0..<10 {
                let ids = (0..<20).map { "login-\(round * 20 + $0)" }
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                try world.push(ids.enumerated().map { jobBytes(id: $1, token: deviceToken(prefix: "00", index: 1_000_000 + round * 20 + $0)) }, queue: login)
                for id in ids { pushedAt[id] = now }
                usleep(100_000)
            }
            var logins: [String: Int64] = [:]
            let allDelivered = waitUntil(seconds: 60, interval: 0.05) {
                _ = ledger.poll()
                for entry in ledger.entries where entry.id.hasPrefix("login-") && entry.outcome == "delivered" { logins[entry.id] = entry.millis }
                return logins.count == pushedAt.count
            }
            let bulkLeft = try world.connectRedis().command(["LLEN", bulk]).int ?? 0
            #expect(allDelivered, "\(logins.count) of \(pushedAt.count) login jobs delivered:\n\(world.workerLogs())")
            #expect(bulkLeft > 0, "the login jobs were delivered while the backlog was still queued, not after it")
            let latencies = logins.map { $0.value - pushedAt[$0.key]! }.sorted()
            let p99 = latencies[min(latencies.count - 1, latencies.count * 99 / 100)]
            // Under a sanitizer everything runs several times slower; the fairness itself is the same.
            let sanitized = ProcessInfo.processInfo.environment["TSAN_OPTIONS"] != nil || ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil
            #expect(p99 < (sanitized ? 5_000 : 1_000), "push to result p99 \(p99) ms (\(bulkLeft) bulk jobs still queued)")
            print("fair share: login push-to-result p50 \(latencies[latencies.count / 2]) ms, p99 \(p99) ms, bulk still queued \(bulkLeft)")
        }
    }
}

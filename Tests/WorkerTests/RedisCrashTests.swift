import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEndWaiting {
    /// Redis is killed (SIGKILL) mid-run and restarted on the same port with its append-only file
    /// (`appendfsync always`): the workers reconnect by themselves, nothing Redis acknowledged is lost, and
    /// every job still ends with exactly one terminal outcome.
    @Suite struct RedisCrash {
        /// Down 1 s (shorter than the 3 s lease) and 5 s (longer: after the restart the workers' heartbeats
        /// have lapsed, the reapers hand their leases to whoever claims first, and the lease-lost rule must
        /// keep each job to one terminal entry).
        @Test(.timeLimit(.minutes(3)), arguments: [1.0, 5.0])
        func redisKilledMidRunAndRestartedLosesNothing(outageSeconds: Double) throws {
            let faults = MockFaultScript(seed: 5, latencyMs: MockLatency(min: 2, max: 10), rules: [
                MockFaultRule(fate: .unregistered, tokenPrefix: "dead"),
                MockFaultRule(fate: .failFirst, tokenPrefix: "e5", status: 500, reason: "InternalServerError", count: 1),
            ])
            let world = try EndToEndWorld(faults: faults, appendOnly: true)
            defer { world.shutdown(); world.removeFiles() }

            let total = 10_000
            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            var deadTokens = Set<String>()
            for i in 0..<total {
                let id = "r-\(i)"
                let prefix = i % 10 == 3 ? "dead" : (i % 10 == 7 ? "e5" : "00")
                let token = deviceToken(prefix: prefix, index: i)
                jobs.append(jobBytes(id: id, token: token))
                expected[id] = prefix == "dead" ? "token_dropped" : "delivered"
                if prefix == "dead" { deadTokens.insert(token) }
            }
            try world.push(jobs)
            let config = try world.writeConfig(worker: ["max_in_flight": 200, "claim_batch": 50, "lease_seconds": 3],
                                               retry: ["server_error_base_seconds": 1])
            let started = Date()
            try world.startWorker(id: "crash-1", config: config)
            try world.startWorker(id: "crash-2", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)

            #expect(try ledger.waitForTerminal(total * 3 / 10, seconds: 60), "no progress:\n\(world.workerLogs())")
            let queuedAtCrash = try world.connectRedis().command(["LLEN", "herald:queue"]).int ?? 0
            world.redis.crash()
            // Everything read before the crash had been acknowledged by Redis (and fsynced: appendfsync always).
            let acknowledged = ledger.entries
            usleep(UInt32(outageSeconds * 1_000_000))
            try world.redis.start()
            let restartedAt = Date()

            let finished = try ledger.waitForTerminal(total, seconds: 120) {
                for (id, worker) in world.workers where !worker.isRunning {
                    throw TestSupportError("worker \(id) exited after the Redis crash:\n\(world.workerLogs())")
                }
            }
            let elapsed = Date().timeIntervalSince(started)
            usleep(1_500_000)
            ledger.poll()
            #expect(queuedAtCrash > 1000, "the crash must land mid-run: queue \(queuedAtCrash)")
            #expect(finished, "only \(ledger.terminalCount) of \(total) finished after the restart:\n\(world.workerLogs(lastLines: 30))")

            // Nothing acknowledged was lost: every entry read before the crash is still there, unchanged.
            let survived = Array(ledger.entries.prefix(acknowledged.count))
            #expect(survived == acknowledged, "results acknowledged before the crash changed or vanished")
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")

            let redis = try world.connectRedis()
            let dropped = try readStream(redis, "herald:dropped-tokens")
            #expect(dropped.count == deadTokens.count, "dropped-token entries \(dropped.count), expected \(deadTokens.count)")
            #expect(Set(dropped.compactMap { $0.fields["token"] }) == deadTokens)
            #expect(try redis.command(["LLEN", "herald:queue"]).int == 0)
            #expect(try redis.command(["ZCARD", "herald:retry"]).int == 0)

            // Both workers noticed and came back on their own.
            for (id, worker) in world.workers {
                #expect(worker.output.contains("redis connection lost"), "worker \(id) did not log the lost connection")
                // A worker whose back-off (up to 5 s) was still running when the others finished the jobs
                // reconnects a little later: wait for it, with a deadline.
                let reconnected = waitUntil(seconds: 15) { worker.output.components(separatedBy: "redis connected").count >= 3 }
                #expect(reconnected, "worker \(id) did not reconnect")
            }
            let (perToken, duplicates) = duplicateDeliveries(world.simulator.acceptedNotifications())
            #expect(perToken.count == expected.values.filter { $0 == "delivered" }.count)
            // Sent twice only when a lease lapsed during the outage and another worker took the job.
            #expect(duplicates <= 2 * 200, "\(duplicates) duplicates")
            let leasesLost = world.workers.values.map { $0.output.components(separatedBy: "lease lost").count - 1 }.reduce(0, +)
            print("e2e redis crash (down \(outageSeconds) s, lease 3 s): lease-lost warnings \(leasesLost); \(total) jobs, 2 workers, \(String(format: "%.1f", elapsed)) s; crashed with \(queuedAtCrash) queued and \(acknowledged.count) results written, all kept; finished \(String(format: "%.1f", Date().timeIntervalSince(restartedAt))) s after the restart; simulator duplicates \(duplicates)")

            for (id, worker) in world.workers {
                worker.signal(SIGTERM)
                #expect(worker.waitForExit(seconds: 10) == 0, "worker \(id) did not exit 0")
            }
        }
    }
}

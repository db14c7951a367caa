import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEndWaiting {
    /// systemd and docker-compose restart a crashed worker under the same id. Its predecessor's leases must
    /// not be overwritten by the new process's claims, nor stranded behind its fresh heartbeat: the new
    /// process returns them first, and every job still ends exactly once.
    @Suite struct RestartSameID {
        @Test(.timeLimit(.minutes(2)))
        func aWorkerKilledAndRestartedUnderItsIDLosesNothing() throws {
            let faults = MockFaultScript(seed: 5, latencyMs: MockLatency(min: 5, max: 20))
            let world = try EndToEndWorld(faults: faults)
            defer { world.shutdown(); world.removeFiles() }
            let total = 6_000
            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            for i in 0..<total {
                let id = "r-\(i)"
                jobs.append(jobBytes(id: id, token: deviceToken(prefix: "00", index: i)))
                expected[id] = "delivered"
            }
            try world.push(jobs)
            // A long lease: the reaper must not be what saves the jobs here.
            let config = try world.writeConfig(worker: ["max_in_flight": 300, "claim_batch": 100, "lease_seconds": 60])
            let first = try world.startWorker(id: "fixed-id", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            let redis = try world.connectRedis()
            #expect(try ledger.waitForTerminal(total / 4, seconds: 60), "no progress:\n\(world.workerLogs())")
            first.signal(SIGKILL)
            #expect(first.waitForExit(seconds: 10) != nil)
            let stranded = try redis.command(["HLEN", "herald:leases:fixed-id"]).int ?? 0
            #expect(stranded > 0, "the kill must leave leases behind")

            let second = try world.startWorker(id: "fixed-id", config: config)
            let finished = try ledger.waitForTerminal(total, seconds: 90) {
                if !second.isRunning { throw TestSupportError("the restarted worker exited:\n\(second.output.suffix(2000))") }
            }
            usleep(500_000)
            ledger.poll()
            #expect(finished, "\(ledger.terminalCount) of \(total) finished (\(stranded) leases were stranded):\n\(second.output.suffix(2000))")
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")
            #expect(second.output.contains("returned jobs left in flight by an earlier process with this worker id"))
            let (_, duplicates) = duplicateDeliveries(world.simulator.acceptedNotifications())
            print("e2e restart under the same id: \(stranded) stranded leases returned; \(duplicates) duplicate deliveries")
            #expect(duplicates <= 300)
            second.signal(SIGTERM)
            #expect(second.waitForExit(seconds: 10) == 0)
        }
    }
}

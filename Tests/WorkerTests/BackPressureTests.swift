import Foundation
import HeraldTestSupport
import Simulators
import Testing

extension EndToEnd {
    /// A pool whose queue is far smaller than what the worker holds in flight pushes back; the worker keeps
    /// the refused jobs and sends them as answers free room. Nothing is lost, nothing is sent twice.
    @Suite struct BackPressure {
        @Test(.timeLimit(.minutes(2)))
        func aFullPoolPushesBackAndEveryJobIsStillDeliveredOnce() throws {
            let faults = MockFaultScript(seed: 3, latencyMs: MockLatency(min: 2, max: 6))
            let world = try EndToEndWorld(faults: faults)
            defer { world.shutdown(); world.removeFiles() }
            let total = 3_000
            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            for i in 0..<total {
                let id = "bp-\(i)"
                jobs.append(jobBytes(id: id, token: deviceToken(prefix: "00", index: i)))
                expected[id] = "delivered"
            }
            try world.push(jobs)
            // One connection of (at most) 1000 streams and a pool queue of 20: most of the 1,500 claimed jobs
            // are refused by the pool at first and wait in the worker's backlog.
            let config = try world.writeConfig(worker: ["max_in_flight": 1500, "claim_batch": 500],
                                               apns: ["connections_per_pool": 1, "max_queued_per_pool": 20])
            try world.startWorker(id: "bp-1", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            let finished = try world.waitForTerminal(total, in: ledger, seconds: 90)
            usleep(500_000)
            ledger.poll()
            #expect(finished, "\(ledger.terminalCount) of \(total) finished:\n\(world.workerLogs(lastLines: 20))")
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")
            let (perToken, duplicates) = duplicateDeliveries(world.simulator.acceptedNotifications())
            #expect(perToken.count == total)
            #expect(duplicates == 0)
            for (id, worker) in world.workers {
                worker.signal(SIGTERM)
                #expect(worker.waitForExit(seconds: 10) == 0, "worker \(id) did not exit 0")
            }
        }
    }
}

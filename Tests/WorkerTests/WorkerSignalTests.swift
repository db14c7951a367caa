import Foundation
import Glibc
import HeraldTestSupport
import MockAPNs
import RedisQueue
import Testing

extension EndToEnd {
    /// Four workers share a queue; one gets SIGTERM mid-run (drains, returns its leases, exits 0) and one
    /// SIGKILL (its leases expire and the others take the jobs). Every job still ends exactly once in the
    /// results; notifications the simulator accepted twice (the killed worker's unrecorded sends) are counted.
    @Suite struct WorkerSignals {
        @Test(.timeLimit(.minutes(3)))
        func sigtermAndSigkillMidRunLoseNothing() throws {
            let faults = MockFaultScript(seed: 3, latencyMs: MockLatency(min: 5, max: 20), rules: [])
            let world = try EndToEndWorld(faults: faults)
            defer { world.shutdown(); world.removeFiles() }

            let total = 20_000
            let maxInFlight = 150
            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            for i in 0..<total {
                let id = "s-\(i)"
                jobs.append(jobBytes(id: id, token: deviceToken(prefix: "00", index: i), body: "signal test \(i)"))
                expected[id] = "delivered"
            }
            try world.push(jobs)
            let config = try world.writeConfig(worker: [
                "max_in_flight": maxInFlight, "claim_batch": 50, "lease_seconds": 2, "shutdown_deadline_seconds": 5,
            ])
            let started = Date()
            for n in 1...4 { try world.startWorker(id: "sig-\(n)", config: config) }
            let terminated = world.workers["sig-1"]!
            let killed = world.workers["sig-2"]!
            let redis = try world.connectRedis()
            let ledger = ResultsLedger(redisURL: world.redisURL)

            // SIGTERM once a quarter of the jobs are done, SIGKILL at 40 %: both while plenty are queued.
            #expect(try ledger.waitForTerminal(total / 4, seconds: 60), "no progress:\n\(world.workerLogs())")
            let queuedAtTerm = try redis.command(["LLEN", "herald:queue"]).int ?? 0
            let termLeases = try redis.command(["HLEN", "herald:leases:sig-1"]).int ?? 0
            terminated.signal(SIGTERM)
            let termSentAt = Date()
            #expect(try ledger.waitForTerminal(total * 2 / 5, seconds: 60), "no progress after SIGTERM:\n\(world.workerLogs())")
            let queuedAtKill = try redis.command(["LLEN", "herald:queue"]).int ?? 0
            let killedLeases = try redis.command(["HLEN", "herald:leases:sig-2"]).int ?? 0
            killed.signal(SIGKILL)
            #expect(queuedAtTerm > 1000 && queuedAtKill > 1000, "signals must land mid-run: queue \(queuedAtTerm), \(queuedAtKill)")

            // The SIGTERMed worker exits 0 within its deadline (5 s) plus start-up slack, leaving no leases.
            let termStatus = terminated.waitForExit(seconds: 5 + 5)
            let termSeconds = Date().timeIntervalSince(termSentAt)
            #expect(termStatus == 0, "SIGTERM exit status \(String(describing: termStatus)):\n\(terminated.output.suffix(2000))")
            #expect(try redis.command(["HLEN", "herald:leases:sig-1"]).int == 0, "the drained worker left leases")
            #expect(try redis.command(["ZSCORE", "herald:workers", "sig-1"]).isNil, "the drained worker is still registered")
            #expect(terminated.output.contains("\"stopped\""), "no 'stopped' log line:\n\(terminated.output.suffix(2000))")
            #expect(killed.waitForExit(seconds: 5) != nil)

            let finished = try ledger.waitForTerminal(total, seconds: 120) {
                for id in ["sig-3", "sig-4"] where !(world.workers[id]!.isRunning) {
                    throw TestSupportError("worker \(id) exited:\n\(world.workerLogs())")
                }
            }
            let elapsed = Date().timeIntervalSince(started)
            usleep(1_500_000)
            ledger.poll()
            #expect(finished, "only \(ledger.terminalCount) of \(total) finished:\n\(world.workerLogs())")
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")
            #expect(ledger.entries.count == total, "entries other than one `delivered` per job: \(ledger.entries.count - total)")

            // The killed worker's leases were reaped; nothing is left anywhere.
            #expect(try redis.command(["HLEN", "herald:leases:sig-2"]).int == 0)
            #expect(try redis.command(["LLEN", "herald:queue"]).int == 0)
            #expect(try redis.command(["ZCARD", "herald:retry"]).int == 0)

            // Duplicates: sends the killed worker made whose results it never recorded. Counted, reported, bounded
            // by what one worker may hold in flight.
            let accepted = world.simulator.acceptedNotifications()
            let (perToken, duplicates) = duplicateDeliveries(accepted)
            #expect(perToken.count == total, "tokens delivered: \(perToken.count)")
            #expect(duplicates <= maxInFlight, "\(duplicates) duplicate deliveries > max_in_flight \(maxInFlight)")
            let byWorker = Dictionary(grouping: ledger.entries, by: { $0.fields["worker"] ?? "" }).mapValues(\.count)
            print("e2e signals: \(total) jobs, 4 workers, \(String(format: "%.1f", elapsed)) s; SIGTERM at queue \(queuedAtTerm) (worker held \(termLeases) leases, exited 0 after \(String(format: "%.2f", termSeconds)) s), SIGKILL at queue \(queuedAtKill) (worker held \(killedLeases) leases); simulator accepted \(accepted.count) for \(perToken.count) tokens: \(duplicates) duplicate deliveries (bound \(maxInFlight)); results by worker \(byWorker.sorted { $0.key < $1.key })")

            for id in ["sig-3", "sig-4"] {
                let worker = world.workers[id]!
                worker.signal(SIGTERM)
                #expect(worker.waitForExit(seconds: 10) == 0, "worker \(id) did not exit 0")
            }
        }
    }
}

import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEnd {
    /// APNs misbehaving at the connection level while jobs flow: GOAWAY every few hundred requests, refused
    /// streams, dropped TCP connections, occasional 500s. Every job still ends exactly once; notifications
    /// sent twice because a connection died before its answer are counted and reported.
    @Suite struct FlakyAPNs {
        @Test(.timeLimit(.minutes(3)))
        func goawaysDropsAndRefusalsStillEndEveryJobOnce() throws {
            let faults = MockFaultScript(seed: 9, latencyMs: MockLatency(min: 1, max: 5), goawayAfterRequests: 1500, rules: [
                MockFaultRule(fate: .refuseStream, rate: 0.01),
                MockFaultRule(fate: .drop, rate: 0.0005),
                MockFaultRule(fate: .error, rate: 0.01, status: 500, reason: "InternalServerError"),
            ])
            let world = try EndToEndWorld(faults: faults)
            defer { world.shutdown(); world.removeFiles() }
            let total = 8_000
            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            for i in 0..<total {
                let id = "f-\(i)"
                jobs.append(jobBytes(id: id, token: deviceToken(prefix: "00", index: i)))
                expected[id] = "delivered"
            }
            try world.push(jobs)
            let config = try world.writeConfig(worker: ["max_in_flight": 300, "claim_batch": 100])
            let started = Date()
            try world.startWorker(id: "flaky-1", config: config)
            try world.startWorker(id: "flaky-2", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            let finished = try world.waitForTerminal(total, in: ledger, seconds: 120)
            let elapsed = Date().timeIntervalSince(started)
            usleep(1_500_000)
            ledger.poll()
            #expect(finished, "\(ledger.terminalCount) of \(total) finished:\n\(world.workerLogs(lastLines: 30))")
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")
            let retrying = ledger.entries.filter { !$0.isTerminal }
            #expect(retrying.allSatisfy { $0.fields["reason"] == "InternalServerError" }, "\(Set(retrying.map { $0.fields["reason"] ?? "" }))")
            let stats = world.simulator.stats()
            let (perToken, duplicates) = duplicateDeliveries(world.simulator.acceptedNotifications())
            #expect(perToken.count == total)
            // A connection that dies with requests in flight may have had them delivered: those are resent, at
            // most what one worker holds in flight per lost connection. (A graceful GOAWAY costs none; see
            // gracefulGoawaysCauseNoDuplicatesOrStall.)
            #expect(duplicates <= (stats.connectionsDropped + stats.goawaysSent) * 300,
                    "\(duplicates) duplicates for \(stats.connectionsDropped) dropped connections and \(stats.goawaysSent) GOAWAYs")
            #expect(stats.goawaysSent > 0 && stats.refusedStreams > 0)
            print("e2e flaky APNs: \(total) jobs in \(String(format: "%.1f", elapsed)) s; \(stats.requests) requests, \(stats.goawaysSent) GOAWAYs, \(stats.refusedStreams) refused streams, \(stats.connectionsDropped) dropped connections, \(stats.byStatus["500", default: 0]) answers 500 -> \(retrying.count) retries; \(duplicates) duplicate deliveries")
            for (id, worker) in world.workers {
                worker.signal(SIGTERM)
                #expect(worker.waitForExit(seconds: 10) == 0, "worker \(id) did not exit 0")
            }
        }
    

        /// Graceful GOAWAYs alone (NO_ERROR, every 700 requests per connection, as a server being rotated
        /// would send): the pool reconnects at once and nothing is sent twice. Before the pool counted a
        /// connection that had answered requests and then said GOAWAY as healthy, each GOAWAY from a
        /// connection younger than 10 s counted as a failure: reconnect back-off grew (1, 3, 13, 43-56 s) and
        /// one worker stalled with 300 jobs in flight (5,600 of 8,000 done after 60 s), with duplicates from
        /// requests cancelled at their timeout after APNs had processed them.
        @Test(.timeLimit(.minutes(3)))
        func gracefulGoawaysCauseNoDuplicatesOrStall() throws {
            let faults = MockFaultScript(seed: 9, latencyMs: MockLatency(min: 1, max: 5), goawayAfterRequests: 700, rules: [])
            let world = try EndToEndWorld(faults: faults)
            defer { world.shutdown(); world.removeFiles() }
            let total = 8_000
            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            for i in 0..<total {
                jobs.append(jobBytes(id: "g-\(i)", token: deviceToken(prefix: "00", index: i)))
                expected["g-\(i)"] = "delivered"
            }
            try world.push(jobs)
            let config = try world.writeConfig(worker: ["max_in_flight": 300, "claim_batch": 100])
            let worker = try world.startWorker(id: "goaway-1", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            let finished = try ledger.waitForTerminal(total, seconds: 60)
            #expect(finished, "\(ledger.terminalCount) of \(total) in 60 s:\n\(world.workerLogs(lastLines: 20))")
            #expect(ledger.contractProblems(expected: expected).isEmpty)
            let stats = world.simulator.stats()
            let (_, duplicates) = duplicateDeliveries(world.simulator.acceptedNotifications())
            #expect(stats.goawaysSent > 0)
            #expect(duplicates == 0, "\(duplicates) notifications delivered twice after \(stats.goawaysSent) graceful GOAWAYs")
            #expect(!worker.output.contains("apns reconnect scheduled"), "a graceful GOAWAY triggered reconnect back-off")
            worker.signal(SIGTERM)
            let status = worker.waitForExit(seconds: 10)
            #expect(status == 0, "exit \(status.map(String.init) ?? "none in 10 s") after SIGTERM:\n\(world.workerLogs(lastLines: 60))")
        }
    }
}

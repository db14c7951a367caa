import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEnd {
    /// Issue 30's fault run (items 12-14): two workers, a tight request timeout, few streams, and a simulator that sends
    /// GOAWAYs, refuses streams and drops connections (which makes the pools reconnect and back off). Counted
    /// from the simulator's own record of accepted requests, no job is delivered twice unless its answer was
    /// lost on a connection that ended right then (a drop, or a GOAWAY's close). (Item 13, the first send after
    /// an outage, is `EndToEndWaiting.Outage`'s.)
    @Suite struct FaultRun {
        @Test(.timeLimit(.minutes(3)))
        func aFaultRunSendsNoJobTwiceUnlessItsConnectionEndedWithItsAnswer() throws {
            // recordOnReceipt: a push counts as delivered when it reaches the simulator, as at a real provider, so a
            // request written with its deadline nearly over and then cancelled by the client (item 12) counts too.
            let faults = MockFaultScript(seed: 30, latencyMs: MockLatency(min: 20, max: 40), goawayAfterRequests: 500, recordOnReceipt: true, rules: [
                MockFaultRule(fate: .refuseStream, rate: 0.02),
                MockFaultRule(fate: .drop, rate: 0.004),
            ])
            // 20 streams a connection at 20-40 ms each: with 300 jobs in flight per worker, requests wait in the pool
            // for a stream about as long as their 400 ms timeout, so some are written with their deadline nearly
            // over. Herald before issue 30's fix wrote them, cancelled them at the deadline and sent them again
            // (60 of 284 duplicates on connections that lived on, against e06c362's release build).
            let world = try EndToEndWorld(faults: faults) { $0.maxConcurrentStreams = 20 }
            defer { world.shutdown(); world.removeFiles() }
            let total = 5_000
            let expected = try world.pushJobs(total, idPrefix: "fr", tokenPrefix: "30")
            // One connection per pool: a drop leaves the pool with none, so requests wait for the reconnect (and its
            // back-off) too.
            let config = try world.writeConfig(
                worker: ["max_in_flight": 300, "claim_batch": 100],
                retry: ["outage_pause_seconds": 1, "outage_pause_cap_seconds": 3],
                apns: ["request_timeout_ms": 400, "connect_timeout_ms": 1_000, "connections_per_pool": 1])
            try world.startWorker(id: "fault-run-1", config: config)
            try world.startWorker(id: "fault-run-2", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            let (finished, problems) = try world.finish(total, in: ledger, seconds: 150, expected: expected)
            #expect(finished, "\(ledger.terminalCount) of \(total) finished:\n\(world.workerLogs(lastLines: 30))")
            #expect(problems.isEmpty, "\(summarize(problems))")

            let accepted = world.simulator.acceptedNotifications()
            let stats = world.simulator.stats()
            let unexcused = Self.duplicatesNotExcusedByAnEndedConnection(accepted)
            let duplicates = duplicateDeliveries(accepted).duplicates
            #expect(stats.goawaysSent > 0 && stats.refusedStreams > 0 && stats.connectionsDropped > 0,
                    "the faults did not all happen: \(stats)")
            #expect(unexcused.isEmpty, "\(unexcused.count) of \(duplicates) duplicates were accepted on a connection that lived on: \(unexcused.prefix(5))")
            print("e2e fault run: \(total) jobs; \(stats.requests) requests, \(stats.goawaysSent) GOAWAYs, \(stats.refusedStreams) refused streams, \(stats.connectionsDropped) dropped connections; \(duplicates) duplicate deliveries, \(unexcused.count) not explained by an ended connection")
            for (id, worker) in world.workers {
                worker.signal(SIGTERM)
                #expect(worker.waitForExit(seconds: 10) == 0, "worker \(id) did not exit 0")
            }
        }

        /// Tokens accepted twice whose first copy's connection went on accepting other requests for more than
        /// 100 ms afterwards (20 times the simulator's latency): that answer went out before theirs and was not
        /// lost with its connection, so the second copy resent a request Herald had given up on too early (one
        /// written with its deadline nearly over, item 12).
        static func duplicatesNotExcusedByAnEndedConnection(_ accepted: [MockAcceptedNotification]) -> [String] {
            var lastOnConnection: [Int: Int64] = [:]
            for notification in accepted { lastOnConnection[notification.connection] = max(lastOnConnection[notification.connection] ?? 0, notification.timeMillis) }
            var firstCopy: [String: MockAcceptedNotification] = [:]
            var unexcused: [String] = []
            for notification in accepted.sorted(by: { $0.timeMillis < $1.timeMillis }) {
                let token = notification.token.lowercased()
                guard let first = firstCopy[token] else {
                    firstCopy[token] = notification
                    continue
                }
                if (lastOnConnection[first.connection] ?? 0) > first.timeMillis + 100 { unexcused.append(token) }
            }
            return unexcused
        }
    }
}

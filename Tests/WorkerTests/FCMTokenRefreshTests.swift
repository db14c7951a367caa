import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEndWaiting {
    /// Access tokens that FCM stops accepting: a revoked token is replaced once and the jobs go on; when FCM
    /// refuses the fresh token too, the app parks (jobs wait, nothing fails) until FCM accepts again.
    @Suite struct FCMTokenRefresh {
        @Test(.timeLimit(.minutes(2)))
        func aRevokedTokenIsRefreshedOnceAndA401OnTheFreshOneParksTheApp() throws {
            let world = try EndToEndWorld(faults: MockFaultScript(rules: []), fcmFaults: MockFCMFaultScript(latencyMs: MockLatency(min: 1, max: 3), rules: []))
            defer { world.shutdown(); world.removeFiles() }
            let fcm = try #require(world.fcm)
            let config = try world.writeConfig(retry: ["configuration_pause_seconds": 2])
            let worker = try world.startWorker(id: "refresh-1", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            var expected: [String: String] = [:]
            func push(_ range: Range<Int>) throws {
                try world.push(range.map { fcmJobBytes(id: "fcm-\($0)", token: "phone-\($0):APA91b") })
                for i in range { expected["fcm-\(i)"] = "delivered" }
            }

            // 1. Revoked: every send with the old token gets 401 UNAUTHENTICATED; one new token, all delivered.
            try push(0..<100)
            #expect(try ledger.waitForTerminal(100, seconds: 30), "first jobs:\n\(world.workerLogs())")
            fcm.revokeAccessTokens()
            try push(100..<200)
            #expect(try ledger.waitForTerminal(200, seconds: 30), "after the revocation:\n\(world.workerLogs())")
            #expect(fcm.stats().tokensIssued == 2, "one token, then one refresh: \(fcm.stats().tokensIssued)")
            #expect(!ledger.entries.contains { !$0.isTerminal }, "a stale token parks nothing")

            // 2. FCM refuses every token (a revoked service account): the refreshed one too, so the app parks.
            try fcm.replaceFaults(MockFCMFaultScript(rules: [MockFCMRule(fate: .unauthenticated)]))
            try push(200..<300)
            let parked = waitUntil(seconds: 30, interval: 0.1) {
                ledger.poll()
                return ledger.entries.contains { ($0.fields["reason"] ?? "") == "AppPaused: UNAUTHENTICATED: access token refused after a refresh" }
            }
            #expect(parked, "the app did not park:\n\(world.workerLogs(lastLines: 30))")
            #expect(ledger.terminalCount == 200, "no job ended while FCM refused every token")
            #expect(worker.output.contains("app paused: credential rejected"))
            try fcm.replaceFaults(MockFCMFaultScript(rules: []))
            #expect(try ledger.waitForTerminal(300, seconds: 40), "after FCM accepted again:\n\(world.workerLogs(lastLines: 30))")
            usleep(500_000)
            ledger.poll()
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")
            #expect(!worker.output.contains("ya29."), "an access token reached the log")
            worker.signal(SIGTERM)
            #expect(worker.waitForExit(seconds: 10) == 0)
        }

        /// Issue 54's trial: tokens revoked again and again while 5,000 good jobs go out (each revocation makes the
        /// sends in flight meet 401s, then refreshes). A refresh spends no attempt, so no good job fails (before:
        /// 3 of 5,000 ended `MaxAttempts:QUOTA_EXCEEDED`, most of their attempts spent on 401 refreshes); every job
        /// is delivered once.
        @Test(.timeLimit(.minutes(3)))
        func tokensRevokedAgainAndAgainFailNoGoodJob() throws {
            let world = try EndToEndWorld(faults: MockFaultScript(rules: []), fcmFaults: MockFCMFaultScript(latencyMs: MockLatency(min: 1, max: 3), rules: []))
            defer { world.shutdown(); world.removeFiles() }
            let fcm = try #require(world.fcm)
            let config = try world.writeConfig(worker: ["max_in_flight": 500, "claim_batch": 100], retry: ["configuration_pause_seconds": 1])
            let total = 5_000
            var expected: [String: String] = [:]
            try world.push((0..<total).map { i in
                expected["rv-\(i)"] = "delivered"
                return fcmJobBytes(id: "rv-\(i)", token: "phone-\(i):APA91b")
            })
            let worker = try world.startWorker(id: "revoked", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            var revocations = 0
            let finished = try ledger.waitForTerminal(total, seconds: 120) {
                if !worker.isRunning { throw TestSupportError("the worker exited:\n\(worker.output.suffix(2000))") }
                if revocations < 40 {
                    fcm.revokeAccessTokens()
                    revocations += 1
                }
            }
            usleep(500_000)
            ledger.poll()
            #expect(finished, "\(ledger.terminalCount) of \(total):\n\(world.workerLogs(lastLines: 30))")
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")
            #expect(!ledger.entries.contains { $0.outcome == "failed" }, "a good job failed")
            let attempts = ledger.entries.filter(\.isTerminal).compactMap { $0.fields["attempt"].flatMap { Int($0) } }
            print("token revocation: \(revocations) revocations, \(fcm.stats().tokensIssued) tokens issued, \(total) jobs, "
                  + "most attempts \(attempts.max() ?? 0), \(ledger.entries.filter { !$0.isTerminal }.count) retrying entries")
            #expect(fcm.stats().tokensIssued > 1, "the revocations took effect")
            #expect(attempts.allSatisfy { $0 == 1 }, "a refresh spent an attempt: \(attempts.max() ?? 0)")
        }
    }
}

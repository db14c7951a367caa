import Foundation
import HeraldTestSupport
import RedisQueue
import Testing

extension EndToEndWaiting {
    /// `herald scheduled` against a running worker: `deliver_at` jobs wait in the retry set; the ones cancelled end
    /// `cancelled` and never reach the simulator, the others are delivered when due, each job with one terminal
    /// outcome; the idempotency key of a cancelled id says `done`, so a later copy is a duplicate.
    @Suite struct ScheduledCancel {
        @Test(.timeLimit(.minutes(2)))
        func cancelledDeliverAtJobsEndCancelledAndAreNeverSentWhileTheOthersAre() throws {
            let world = try EndToEndWorld()
            defer { world.shutdown(); world.removeFiles() }
            let due = Int64(Date().timeIntervalSince1970 * 1000) + 6_000
            var jobs: [[UInt8]] = []
            for i in 0..<20 {
                for kind in ["keep", "drop"] {
                    let token = deviceToken(prefix: kind == "keep" ? "00" : "0d", index: i)
                    jobs.append(Array(#"{"id":"\#(kind)-\#(i)","token":"\#(token)","deliver_at":\#(due),"payload":{"aps":{"alert":"later"}}}"#.utf8))
                }
            }
            try world.push(jobs)
            let config = try world.writeConfig(worker: ["idempotency_window_seconds": 600])
            let worker = try world.startWorker(id: "scheduled-1", config: config)
            let redis = try world.connectRedis()
            #expect(waitUntil(seconds: 20) { (try? redis.command(["ZCARD", "herald:retry"]).int) == 40 }, "\(world.workerLogs())")

            let listed = try world.runHerald(["scheduled", "list", "--json", "--redis", world.redisURL, "--due-within", "1h"])
            let objects = listed.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            #expect(listed.status == 0 && objects.count == 40, "\(listed.output)")
            #expect(objects.allSatisfy { ($0["due_ms"] as? Int).map(Int64.init) == due && $0["attempt"] as? Int == 1 }, "\(listed.output)")
            let refused = try world.runHerald(["scheduled", "cancel", "--redis", world.redisURL])
            #expect(refused.status == 64 && refused.output.contains("give a filter"), "\(refused.output)")
            let dropIDs = (0..<20).flatMap { ["--id", "drop-\($0)"] }
            let dry = try world.runHerald(["scheduled", "cancel", "--dry-run", "--redis", world.redisURL] + dropIDs)
            #expect(dry.status == 0 && dry.output.contains("20 job(s) would be cancelled"), "\(dry.output)")
            #expect(try redis.command(["ZCARD", "herald:retry"]).int == 40, "a dry run changes nothing")
            let cancel = try world.runHerald(["scheduled", "cancel", "--redis", world.redisURL] + dropIDs)
            #expect(cancel.status == 0 && cancel.output.contains("20 job(s) cancelled"), "\(cancel.output)")
            let again = try world.runHerald(["scheduled", "cancel", "--redis", world.redisURL, "--id", "drop-0"])
            #expect(again.output.contains("0 job(s) cancelled"), "\(again.output)")

            let ledger = ResultsLedger(redisURL: world.redisURL)
            let finished = try ledger.waitForTerminal(40, seconds: 60) {
                if !worker.isRunning { throw TestSupportError("worker exited:\n\(world.workerLogs())") }
            }
            #expect(finished, "\(ledger.terminalCount) of 40 finished:\n\(world.workerLogs())")
            let problems = ledger.contractProblems(expected: Dictionary(uniqueKeysWithValues: (0..<20).flatMap { [("keep-\($0)", "delivered"), ("drop-\($0)", "cancelled")] }))
            #expect(problems.isEmpty, "\(problems)")
            let sent = Set(world.simulator.acceptedNotifications().map(\.token))
            #expect(sent.count == 20 && sent.allSatisfy { $0.hasPrefix("00") }, "only the kept jobs reach the simulator: \(sent.sorted())")
            #expect(try redis.command(["GET", "herald:once:drop-3"]).string == "done")

            // A later copy of a cancelled id is a duplicate, as after any terminal outcome.
            try world.push([Array(#"{"id":"drop-3","token":"\#(deviceToken(prefix: "0d", index: 3))","payload":{"aps":{"alert":"again"}}}"#.utf8)])
            #expect(try ledger.waitForTerminal(41, seconds: 30), "\(world.workerLogs())")
            #expect(ledger.byJob["drop-3"]?.last?.outcome == "duplicate", "\(ledger.byJob["drop-3"] ?? [])")
        }
    }
}

import Foundation
import HeraldTestSupport
import RedisQueue
import Testing

extension EndToEndWaiting {
    /// `herald queue` against two running workers: a paused queue is left alone by both (the other queue goes on),
    /// the pause shows in `herald queue list` and on the dashboard's metrics, resume sends everything once, and
    /// purge empties a queue (a dry run changes nothing).
    @Suite struct QueuePause {
        @Test(.timeLimit(.minutes(2)))
        func aPausedQueueIsLeftByEveryWorkerUntilResumedAndPurgeEmptiesOne() throws {
            let world = try EndToEndWorld()
            defer { world.shutdown(); world.removeFiles() }
            let bulk = "herald:queue:bulk"
            let queues = ["herald:queue", bulk]
            let config = try world.writeConfig(redis: ["queues": queues])
            let common = ["--config", config]
            let refused = try world.runHerald(["queue", "pause"] + common)
            #expect(refused.status == 64 && refused.output.contains("--queue"), "\(refused.output)")
            let unknown = try world.runHerald(["queue", "pause", "--queue", "herald:queue:nobody"] + common)
            #expect(unknown.status == 64 && unknown.output.contains("not one of the configured queues"), "\(unknown.output)")
            let pause = try world.runHerald(["queue", "pause", "--queue", bulk] + common)
            #expect(pause.status == 0 && pause.output.contains("paused"), "\(pause.output)")

            try world.push((0..<100).map { jobBytes(id: "main-\($0)", token: deviceToken(prefix: "00", index: $0)) })
            try world.push((0..<100).map { jobBytes(id: "bulk-\($0)", token: deviceToken(prefix: "0b", index: $0)) }, queue: bulk)
            let workers = try ["pause-1", "pause-2"].map { try world.startWorker(id: $0, config: config) }
            let dashboardPort = freeLoopbackPort()
            let dashboard = try ChildProcess(name: "dashboard", executable: world.herald, arguments: ["dashboard"] + common + ["--listen", "127.0.0.1:\(dashboardPort)"])
            defer { dashboard.stop() }

            let ledger = ResultsLedger(redisURL: world.redisURL)
            #expect(try ledger.waitForTerminal(100, seconds: 60) {
                for worker in workers where !worker.isRunning { throw TestSupportError("worker exited:\n\(world.workerLogs())") }
            }, "\(world.workerLogs())")
            // Both workers claim all the while; the paused queue keeps every job.
            usleep(1_500_000)
            ledger.poll()
            #expect(ledger.terminalCount == 100 && ledger.entries.allSatisfy { $0.id.hasPrefix("main-") }, "\(ledger.terminalByOutcome)")
            let redis = try world.connectRedis()
            #expect(try redis.command(["LLEN", bulk]).int == 100)
            let list = try world.runHerald(["queue", "list", "--json"] + common)
            let rows = list.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            #expect(rows.first { $0["queue"] as? String == bulk }?["paused"] as? Bool == true, "\(list.output)")
            #expect(rows.first { $0["queue"] as? String == bulk }?["length"] as? Int == 100, "\(list.output)")
            #expect(rows.first { $0["queue"] as? String == "herald:queue" }?["paused"] as? Bool == false, "\(list.output)")
            var page = ""
            #expect(waitUntil(seconds: 20) {
                page = (try? httpGet(port: dashboardPort, "/metrics", timeoutSeconds: 3).body) ?? ""
                return page.contains(#"herald_queue_paused{queue="herald:queue:bulk"} 1"#)
            }, "\(page)")
            #expect(page.contains(#"herald_queue_paused{queue="herald:queue"} 0"#))

            let resume = try world.runHerald(["queue", "resume", "--queue", bulk] + common)
            #expect(resume.status == 0, "\(resume.output)")
            #expect(try ledger.waitForTerminal(200, seconds: 60), "\(world.workerLogs())")
            let expected = Dictionary(uniqueKeysWithValues: (0..<100).flatMap { [("main-\($0)", "delivered"), ("bulk-\($0)", "delivered")] })
            #expect(ledger.contractProblems(expected: expected).isEmpty, "\(ledger.contractProblems(expected: expected))")
            #expect(duplicateDeliveries(world.simulator.acceptedNotifications()).duplicates == 0)

            // Purge: paused again so nothing is claimed meanwhile; a dry run keeps every job.
            _ = try world.runHerald(["queue", "pause", "--queue", bulk] + common)
            try world.push((0..<50).map { jobBytes(id: "purge-\($0)", token: deviceToken(prefix: "0c", index: $0)) }, queue: bulk)
            let dry = try world.runHerald(["queue", "purge", "--queue", bulk, "--dry-run"] + common)
            #expect(dry.status == 0 && dry.output.contains("would purge about 50"), "\(dry.output)")
            #expect(try redis.command(["LLEN", bulk]).int == 50)
            let purge = try world.runHerald(["queue", "purge", "--queue", bulk] + common)
            #expect(purge.status == 0 && purge.output.contains("purged 50 job(s)"), "\(purge.output)")
            #expect(try redis.command(["LLEN", bulk]).int == 0)
        }
    }
}

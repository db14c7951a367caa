import Foundation
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEnd {
    /// Device pushes and broadcasts on two channels through one worker process, with channels created, read, listed
    /// and one deleted mid-run by `herald channels` as a user would: the deleted channel's later jobs end as
    /// `channel_dropped` (and on `herald:dropped-channels`), every other job is delivered, each exactly once. The
    /// simulator's faults apply to broadcasts as to device pushes: channel b's first broadcast meets a 500 and is
    /// retried (server_error_base_seconds 1 in these tests).
    @Suite struct BroadcastRun {
        @Test(.timeLimit(.minutes(3)))
        func aChannelDeletedMidRunDropsItsJobsAndNothingElse() throws {
            // Channel management on a port of its own, as at Apple: a client that sent it to the push host would get 404.
            let world = try EndToEndWorld { $0.managementPort = 0 }
            defer { world.shutdown(); world.removeFiles() }
            let management = "https://127.0.0.1:\(world.simulator.managementPort ?? 0)"
            let config = try world.writeConfig(apns: ["channels_production_url": management, "channels_sandbox_url": management])

            func channels(_ words: [String]) throws -> [String: Any] {
                let run = try world.runHerald(["channels"] + words + ["--config", config, "--environment", "production"])
                let line = run.output.split(separator: "\n").last.map(String.init) ?? ""
                let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
                #expect(run.status == 0, "herald channels \(words): \(run.output)")
                return object
            }
            let a = try #require(try channels(["create", "--storage", "none"])["channel"] as? String)
            let b = try #require(try channels(["create", "--storage", "most-recent"])["channel"] as? String)
            #expect(a != b)
            #expect(try channels(["get", "--channel", b])["message_storage_policy"] as? Int == 1)
            #expect(Set(try channels(["list"])["channels"] as? [String] ?? []) == [a, b])
            try world.simulator.replaceFaults(MockFaultScript(rules: [
                MockFaultRule(fate: .failFirst, token: b, status: 500, reason: "InternalServerError", count: 1),
            ]))

            var expected: [String: String] = [:]
            func batch(_ round: Int, deleted: String?) -> [[UInt8]] {
                var jobs: [[UInt8]] = []
                for i in 0..<300 {
                    let id = "d\(round)-\(i)"
                    jobs.append(jobBytes(id: id, token: deviceToken(prefix: "00", index: round * 1000 + i)))
                    expected[id] = "delivered"
                }
                for (name, channel) in [("a", a), ("b", b)] {
                    for i in 0..<100 {
                        let id = "\(name)\(round)-\(i)"
                        jobs.append(Array(#"{"id":"\#(id)","channel":"\#(channel)","payload":{"aps":{"timestamp":1685952000,"event":"update","content-state":{"score":"\#(i)"}}}}"#.utf8))
                        expected[id] = channel == deleted ? "channel_dropped" : "delivered"
                    }
                }
                return jobs.shuffled()
            }

            let ledger = ResultsLedger(redisURL: world.redisURL)
            let running: () throws -> Void = {
                for (id, worker) in world.workers where !worker.isRunning { throw TestSupportError("worker \(id) exited:\n\(world.workerLogs())") }
            }
            try world.push(batch(1, deleted: nil))
            try world.startWorker(id: "broadcast-1", config: config)
            #expect(try ledger.waitForTerminal(500, seconds: 90, check: running), "\(ledger.terminalByOutcome)\n\(world.workerLogs())")

            // Mid-run: the worker keeps going while channel a is deleted, then more of everything arrives.
            #expect(try channels(["delete", "--channel", a])["outcome"] as? String == "deleted")
            #expect(try channels(["list"])["channels"] as? [String] == [b])
            try world.push(batch(2, deleted: a))
            #expect(try ledger.waitForTerminal(1000, seconds: 90, check: running), "\(ledger.terminalByOutcome)\n\(world.workerLogs())")
            usleep(500_000)
            ledger.poll()

            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")
            #expect(ledger.terminalByOutcome == ["delivered": 900, "channel_dropped": 100])
            let dropped = ledger.entries.filter { $0.outcome == "channel_dropped" }
            #expect(dropped.allSatisfy { $0.fields["channel"] == a && $0.fields["reason"] == "ChannelNotRegistered" && $0.fields["token"] == nil })
            let retried = ledger.entries.filter { $0.outcome == "retrying" }
            #expect(retried.count == 1 && retried.first?.fields["channel"] == b && retried.first?.fields["reason"] == "InternalServerError",
                    "\(retried.map(\.fields))")
            let broadcastsDelivered = ledger.entries.filter { $0.outcome == "delivered" && $0.fields["channel"] != nil }
            #expect(broadcastsDelivered.count == 300)
            #expect(broadcastsDelivered.allSatisfy { $0.fields["apns_id"] != nil && $0.fields["topic"] == "com.example.e2e" })

            let redis = try world.connectRedis()
            let stream = try readStream(redis, "herald:dropped-channels")
            #expect(stream.count == 100)
            #expect(stream.allSatisfy { $0.fields == ["channel": a, "bundle_id": "com.example.e2e", "environment": "production", "reason": "ChannelNotRegistered"] })
            #expect(try readStream(redis, "herald:dropped-tokens").isEmpty)

            // What the simulator saw: each delivered broadcast once, on its channel; the device pushes once each.
            let received = world.simulator.broadcastsReceived()
            #expect(received.filter { $0.channel == a }.count == 100)
            #expect(received.filter { $0.channel == b }.count == 200)
            #expect(Set(received.map(\.requestID)).count == received.count)
            #expect(received.allSatisfy { $0.expiration == 0 && $0.priority == 10 })
            let devices = duplicateDeliveries(world.simulator.acceptedNotifications())
            #expect(devices.perToken.count == 600 && devices.duplicates == 0)
            #expect(world.simulator.channels().map(\.id) == [b])
        }
    }
}

import Foundation
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEndWaiting {
    /// One push service down must not hold Web Push to the others (issue 23, item 4).
    @Suite struct WebPushOriginOutage {
        /// Two push services, one of them down (every TLS handshake refused): the other's jobs are delivered while
        /// it lasts; the down one's are not failed (handed back, no attempt spent) and are delivered once it is back.
        @Test(.timeLimit(.minutes(1)))
        func oneServiceDownHoldsOnlyItsOwnJobsWhichGoOutOnceItIsBack() throws {
            let world = try EndToEndWorld()
            defer { world.shutdown(); world.removeFiles() }
            let up = try MockWebPushServer(tls: world.tls)
            let down = try MockWebPushServer(tls: world.tls)
            defer { up.stop(); down.stop() }
            try down.refuseConnections(true)

            var jobs: [[UInt8]] = []
            var upIDs: [String] = [], downIDs: [String] = []
            for i in 0..<20 {
                for (server, prefix) in [(up, "up"), (down, "down")] {
                    let id = "\(prefix)-\(i)"
                    let subscription = try server.subscribe()
                    jobs.append(Array(#"{"id":"\#(id)","app":"web","platform":"webpush","subscription":\#(subscription.json),"payload":"\#(id)","ttl":60}"#.utf8))
                    if prefix == "up" { upIDs.append(id) } else { downIDs.append(id) }
                }
            }
            try world.push(jobs)
            let metricsPort = freeLoopbackPort()
            let path = try world.writeConfig(retry: ["max_attempts": 2, "outage_pause_seconds": 1, "outage_pause_cap_seconds": 1],
                                             metricsListen: "127.0.0.1:\(metricsPort)")
            var config = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
            var apps = try #require(config["apps"] as? [[String: Any]])
            apps.append(["name": "web", "webpush": ["vapid_key": String(repeating: "B", count: 42) + "A", "subject": "mailto:e2e@example.com",
                                                    "push_service_hosts": ["127.0.0.1"], "allow_ip_literals": true, "allow_private_addresses": true]])
            config["apps"] = apps
            config["web_push"] = ["ca_file": world.tls.caFile ?? ""]
            try JSONSerialization.data(withJSONObject: config, options: [.sortedKeys]).write(to: URL(fileURLWithPath: path))
            try world.startWorker(id: "web-outage", config: path)

            let ledger = ResultsLedger(redisURL: world.redisURL)
            #expect(try ledger.waitForTerminal(upIDs.count, seconds: 20), "only \(ledger.terminalCount) finished:\n\(world.workerLogs())")
            usleep(1_500_000)  // the down service's pauses go round at least once more
            ledger.poll()
            #expect(ledger.contractProblems(expected: Dictionary(uniqueKeysWithValues: upIDs.map { ($0, "delivered") })).isEmpty)
            let grouped = ledger.byJob
            #expect(upIDs.allSatisfy { grouped[$0]?.map(\.outcome) == ["delivered"] }, "the service that is up never waited")
            // The service's message id (from `Location`) in `message_id`, and in the deprecated `fcm_name` as before.
            #expect(upIDs.allSatisfy { id in grouped[id]?.first.map { !($0.fields["message_id"] ?? "").isEmpty && $0.fields["message_id"] == $0.fields["fcm_name"] } ?? false },
                    "\(upIDs.prefix(3).map { grouped[$0]?.first?.fields ?? [:] })")
            let heldBack = downIDs.compactMap { grouped[$0] }.flatMap { $0 }
            #expect(!heldBack.isEmpty && heldBack.allSatisfy { $0.outcome == "retrying" }, "\(Set(heldBack.map(\.outcome)))")
            #expect(heldBack.allSatisfy { $0.fields["reason"]?.hasPrefix("Unavailable:") == true }, "\(Set(heldBack.compactMap { $0.fields["reason"] }))")
            #expect(down.stats().requests == 0)
            // The paused push service is on the pause gauge, its origin in `environment`.
            let pausedSeries = #"herald_app_paused{app="web",environment="\#(down.origin)",kind="outage"} 1"#
            var sawPause = false
            for _ in 0..<30 where !sawPause {
                if let page = try? httpGet(port: metricsPort, "/metrics", timeoutSeconds: 5), page.body.contains(pausedSeries) { sawPause = true } else { usleep(100_000) }
            }
            #expect(sawPause, "no \(pausedSeries)")

            try down.refuseConnections(false)
            #expect(try ledger.waitForTerminal(jobs.count, seconds: 30), "only \(ledger.terminalCount) finished after the service came back:\n\(world.workerLogs())")
            let problems = ledger.contractProblems(expected: Dictionary(uniqueKeysWithValues: (upIDs + downIDs).map { ($0, "delivered") }))
            #expect(problems.isEmpty, "\(problems.prefix(10))")
            #expect(Set(down.messages().map { String(decoding: $0.plaintext, as: UTF8.self) }) == Set(downIDs))
        }
    }
}

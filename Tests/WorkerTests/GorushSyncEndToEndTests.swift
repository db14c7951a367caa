import Foundation
import HeraldTestSupport
import Simulators
import Testing

extension EndToEnd {
    /// Issue 52: gorush's sync mode end to end. `POST /api/push` with `"sync": true` to `herald api`, a worker with the
    /// job-status index on and the APNs and FCM simulators: the answer waits for the worker's outcomes and names the
    /// device APNs refused in gorush's `failed-push` log, the delivered ones in none, and nothing pending.
    @Suite struct GorushSync {
        @Test(.timeLimit(.minutes(2)))
        func aSyncPushAnswersWithTheWorkersOutcomes() throws {
            let faults = MockFaultScript(seed: 52, rules: [MockFaultRule(fate: .unregistered, tokenPrefix: "dead")])
            let world = try EndToEndWorld(faults: faults, fcmFaults: MockFCMFaultScript(rules: []))
            defer { world.shutdown(); world.removeFiles() }
            let path = try world.writeConfig(worker: ["flush_interval_ms": 5])
            var config = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
            config["results"] = ["index_ttl_seconds": 60]
            try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: path))
            let port = freeLoopbackPort()
            let api = try ChildProcess(name: "api", executable: world.herald, arguments: ["api", "--config", path, "--listen", "127.0.0.1:\(port)"])
            defer { _ = api.stop(grace: 5) }
            #expect(waitUntil(seconds: 20) { api.output.contains("api: ") || !api.isRunning }, "\(api.output)")
            try world.startWorker(id: "gorush-sync", config: path)

            let ok = deviceToken(prefix: "0c", index: 1), dead = deviceToken(prefix: "dead", index: 2)
            let body = #"{"sync": true, "notifications": [{"notif_id": "g-1", "tokens": ["\#(ok)", "\#(dead)"], "platform": 1, "message": "hi"}, "#
                + #"{"notif_id": "g-2", "tokens": ["fcm-sync-token"], "platform": 2, "title": "t", "message": "hi"}]}"#
            let run = try runProgram("curl", ["-s", "--max-time", "60", "-H", "Content-Type: application/json", "--data-binary", body,
                                              "http://127.0.0.1:\(port)/api/push?sync_timeout_ms=30000"], seconds: 70)
            let answer = (try? JSONSerialization.jsonObject(with: Data(run.output.utf8))) as? [String: Any] ?? [:]
            let logs = answer["logs"] as? [[String: Any]] ?? []
            #expect(answer["success"] as? String == "ok" && answer["counts"] as? Int == 3, "\(run.output)\n\(world.workerLogs())")
            #expect((answer["pending"] as? [Any])?.isEmpty == true, "\(run.output)")
            #expect(logs.count == 1, "\(run.output)")
            #expect(logs.first?["platform"] as? String == "ios" && (logs.first?["token"] as? String)?.lowercased() == dead.lowercased()
                && (logs.first?["error"] as? String ?? "").hasPrefix("token_dropped") && logs.first?["notif_id"] as? String == "g-1", "\(logs)")
            // Both simulators were really sent to.
            #expect(Set(world.simulator.acceptedNotifications().map { $0.token.lowercased() }).contains(ok.lowercased()))
            #expect(world.fcm!.acceptedMessages().count == 1)
        }
    }
}

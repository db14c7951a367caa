import Foundation
import Glibc
import HeraldTestSupport
import MockAPNs
import RedisQueue
import Testing

extension EndToEnd {
    /// APNs, FCM and Web Push jobs through the same queue and workers, against the three simulators.
    @Suite struct WebPushMixed {
        /// 3,000 jobs, a third per platform, Web Push ones of every fate; one worker is SIGKILLed mid-run and a
        /// replacement started. Every job ends once with its expected outcome; Web Push deliveries were
        /// decrypted by the push service and carry its message id; gone subscriptions reach the dropped-tokens
        /// stream with their endpoint and platform; bad Web Push jobs are refused locally.
        @Test(.timeLimit(.minutes(3)))
        func apnsFCMAndWebPushJobsEachEndOnceThroughASigkill() throws {
            let world = try EndToEndWorld(faults: MockFaultScript(seed: 3, rules: [MockFaultRule(fate: .unregistered, tokenPrefix: "dead")]),
                                          fcmFaults: MockFCMFaultScript(seed: 3, rules: [MockFCMRule(fate: .unregistered, tokenPrefix: "unreg-")]))
            defer { world.shutdown(); world.removeFiles() }
            let push = try MockWebPushServer(tls: world.tls, faults: MockWebPushFaultScript(rules: [
                MockWebPushRule(subscriptionPrefix: "gone-", fate: .gone),
                MockWebPushRule(subscriptionPrefix: "nf-", fate: .notFound),
                MockWebPushRule(subscriptionPrefix: "big-", fate: .tooLarge),
                MockWebPushRule(subscriptionPrefix: "busy-", fate: .unavailable, failFirst: 1),
            ]))
            defer { push.stop() }

            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            var webFates: [String: (outcome: String, reason: String?, endpoint: String)] = [:]
            let webPlan: [(prefix: String, count: Int, outcome: String, reason: String?)] = [
                ("ok-", 600, "delivered", nil), ("gone-", 150, "token_dropped", "Gone"), ("nf-", 100, "token_dropped", "NotFound"),
                ("big-", 50, "failed", "PayloadTooLarge"), ("busy-", 100, "delivered", nil),
            ]
            var index = 0
            for plan in webPlan {
                for _ in 0..<plan.count {
                    let subscription = try push.subscribe(prefix: plan.prefix)
                    let id = "web-\(index)"
                    let app = index % 2 == 0 ? #""app":"web","# : ""
                    jobs.append(Array(#"{"id":"\#(id)",\#(app)"platform":"webpush","subscription":\#(subscription.json),"payload":"job \#(index)","ttl":60}"#.utf8))
                    expected[id] = plan.outcome
                    webFates[id] = (plan.outcome, plan.reason, subscription.endpoint)
                    index += 1
                }
            }
            for i in 0..<1000 {
                let id = "apns-\(i)"
                jobs.append(jobBytes(id: id, token: deviceToken(prefix: i % 10 == 0 ? "dead" : "00", index: i), body: "job \(i)"))
                expected[id] = i % 10 == 0 ? "token_dropped" : "delivered"
                let fid = "fcm-\(i)"
                jobs.append(fcmJobBytes(id: fid, token: "\(i % 10 == 0 ? "unreg" : "ok")-\(i)-dGVzdA:APA91bHerald_e2e", body: "job \(i)"))
                expected[fid] = i % 10 == 0 ? "token_dropped" : "delivered"
            }
            // A multicast: one job, 20 subscriptions, fanned out in Redis into one job each.
            var multicastEndpoints: [String] = []
            var multicastJSON: [String] = []
            for _ in 0..<20 {
                let subscription = try push.subscribe(prefix: "multi-")
                multicastEndpoints.append(subscription.endpoint)
                multicastJSON.append(subscription.json)
            }
            jobs.append(Array(#"{"id":"web-multi","subscriptions":[\#(multicastJSON.joined(separator: ","))],"payload":{"to":"many"}}"#.utf8))
            // Refused locally, never sent: a key of the wrong length, an endpoint off the allow-list, a payload
            // too large once encrypted.
            let sample = try push.subscribe(prefix: "never-")
            let badKey = sample.json.replacingOccurrences(of: sample.p256dh, with: String(sample.p256dh.dropLast(3)))
            let foreign = sample.json.replacingOccurrences(of: push.origin, with: "https://evil.example")
            let rejected: [(String, String, String)] = [
                ("web-bad-key", badKey, #""x""#), ("web-foreign", foreign, #""x""#),
                ("web-too-large", sample.json, "\"" + String(repeating: "a", count: 4000) + "\""),
            ]
            var rejectedReasons: [String: String] = [:]
            for (id, subscription, payload) in rejected {
                jobs.append(Array(#"{"id":"\#(id)","platform":"webpush","subscription":\#(subscription),"payload":\#(payload)}"#.utf8))
                expected[id] = "rejected"
            }
            rejectedReasons = ["web-bad-key": "BadSubscription", "web-foreign": "EndpointRefused", "web-too-large": "PayloadTooLarge"]
            let ordered = jobs
            for (i, job) in ordered.enumerated() { jobs[(i * 7919) % ordered.count] = job }
            try world.push(jobs)

            let vapidKey = Data((1...32).map { UInt8($0) }).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let path = try world.writeConfig(worker: ["max_in_flight": 300, "claim_batch": 100, "lease_seconds": 4], retry: ["max_attempts": 3])
            var config = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
            var apps = try #require(config["apps"] as? [[String: Any]])
            apps.append(["name": "web", "webpush": ["vapid_key": vapidKey, "subject": "mailto:e2e@example.com", "push_service_hosts": ["127.0.0.1"],
                                                    "allow_ip_literals": true, "allow_private_addresses": true]])
            config["apps"] = apps
            config["web_push"] = ["ca_file": world.tls.caFile ?? ""]
            try JSONSerialization.data(withJSONObject: config, options: [.sortedKeys]).write(to: URL(fileURLWithPath: path))

            let check = try world.runHerald(["check-config", "--config", path, "--skip-redis"])
            #expect(check.status == 0, "\(check.output)")
            #expect(check.output.contains("ok   app 'web' (webpush, mailto:e2e@example.com): signed a test VAPID token; applicationServerKey B"), "\(check.output)")

            let victim = try world.startWorker(id: "web-a", config: path)
            try world.startWorker(id: "web-b", config: path)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            let total = expected.count + multicastEndpoints.count
            #expect(try ledger.waitForTerminal(total / 4, seconds: 60), "only \(ledger.terminalCount) finished before the kill:\n\(world.workerLogs())")
            victim.signal(SIGKILL)
            _ = victim.waitForExit(seconds: 10)
            try world.startWorker(id: "web-c", config: path)
            let finished = try ledger.waitForTerminal(total, seconds: 120)
            usleep(1_500_000)
            ledger.poll()
            #expect(finished, "only \(ledger.terminalCount) of \(total) finished:\n\(world.workerLogs())")
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(problems.prefix(20))")

            var details: [String] = []
            let grouped = ledger.byJob
            for (id, fate) in webFates {
                guard let terminal = grouped[id]?.last else { continue }
                if terminal.fields["platform"] != "webpush" { details.append("\(id): platform \(terminal.fields["platform"] ?? "-")") }
                if terminal.fields["token"] != fate.endpoint { details.append("\(id): token \(terminal.fields["token"] ?? "-")") }
                if let reason = fate.reason, terminal.fields["reason"] != reason { details.append("\(id): reason \(terminal.fields["reason"] ?? "-")") }
            }
            for (id, reason) in rejectedReasons where !(grouped[id]?.last?.fields["reason"] ?? "").hasPrefix(reason) {
                details.append("\(id): rejected as \(grouped[id]?.last?.fields["reason"] ?? "-"), expected \(reason)")
            }
            #expect(details.isEmpty, "\(details.prefix(20))")
            let multicastExpected = Dictionary(uniqueKeysWithValues: multicastEndpoints.map { ("web-multi " + $0, "delivered") })
            let multicastProblems = ledger.contractProblems(expected: multicastExpected) { $0.id + " " + ($0.fields["token"] ?? "") }
            #expect(multicastProblems.isEmpty, "\(multicastProblems.prefix(5))")
            #expect(push.messages().filter { $0.subscription.hasPrefix("multi-") }.count >= 20)
            // Every delivered Web Push job's payload reached the push service, decrypted.
            let received = Set(push.messages().map { String(decoding: $0.plaintext, as: UTF8.self) })
            let deliveredWeb = webFates.filter { $0.value.outcome == "delivered" }.map { id, _ in "job " + id.dropFirst(4) }
            #expect(deliveredWeb.allSatisfy(received.contains), "\(deliveredWeb.filter { !received.contains($0) }.prefix(5))")
            #expect(push.stats().requests > 0 && push.stats().vapidRefused == 0)

            let dropped = ResultsLedger(redisURL: world.redisURL, stream: "herald:dropped-tokens")
            dropped.poll()
            let webDropped = Set(dropped.entries.filter { $0.fields["platform"] == "webpush" }.compactMap { $0.fields["token"] })
            let goneEndpoints = Set(webFates.values.filter { $0.outcome == "token_dropped" }.map(\.endpoint))
            #expect(webDropped == goneEndpoints)
        }
    }
}

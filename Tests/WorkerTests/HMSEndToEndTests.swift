import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

/// Huawei Push Kit end to end: `herald worker` processes deliver hms jobs from Redis to `herald mock-hms` (built to
/// Huawei's documented API by another hand), beside APNs jobs, with the outcomes of docs/hms.md; `check-config`
/// and `herald send --platform hms` against the same simulator.
extension EndToEnd {
    @Suite struct HMSDelivery {
        static let appID = "10000001"
        static let secret = "s3cret-for-the-e2e"

        /// The world's APNs side plus a Push Kit simulator sharing its TLS files, and a config with one Huawei app.
        final class HMSWorld: @unchecked Sendable {
            let world: EndToEndWorld
            let hms: MockHMSServer
            let secretFile: String

            init(faults: MockHMSFaultScript) throws {
                world = try EndToEndWorld(faults: MockFaultScript(latencyMs: MockLatency(min: 0, max: 2), rules: []))
                var configuration = MockHMSConfiguration()
                configuration.tls = world.tls
                configuration.apps = [MockHMSApp(appId: HMSDelivery.appID, clientSecret: HMSDelivery.secret)]
                configuration.faults = faults
                configuration.recordAccepted = true
                hms = try MockHMSServer(configuration: configuration)
                secretFile = world.directory + "/hms-secret"
                try Data((HMSDelivery.secret + "\n").utf8).write(to: URL(fileURLWithPath: secretFile))
                chmod(secretFile, 0o600)
            }

            /// The world's config with the Huawei app and the `hms` section pointed at the simulator.
            func writeConfig(secretFile: String? = nil, retry: [String: Any] = [:]) throws -> String {
                let path = try world.writeConfig(retry: retry)
                var config = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
                var apps = config["apps"] as? [[String: Any]] ?? []
                apps.append(["name": "huawei", "hms": ["app_id": HMSDelivery.appID, "client_secret_file": secretFile ?? self.secretFile]])
                config["apps"] = apps
                config["hms"] = ["url": hms.baseURL, "token_url": hms.tokenURL, "ca_file": hms.caFile ?? ""]
                try JSONSerialization.data(withJSONObject: config, options: [.sortedKeys]).write(to: URL(fileURLWithPath: path))
                return path
            }

            func stop() {
                world.shutdown()
                hms.stop()
                world.removeFiles()
            }
        }

        static func job(id: String, tokens: [String], data: String = #""{\"k\":1}""#) -> [UInt8] {
            let list = tokens.map { "\"\($0)\"" }.joined(separator: ",")
            return Array(#"{"id":"\#(id)","platform":"hms","app":"huawei","message":{"notification":{"title":"Herald e2e","body":"\#(id)"},"data":\#(data),"android":{"urgency":"HIGH","ttl":"3600s"},"token":[\#(list)]}}"#.utf8)
        }

        /// Good tokens delivered, illegal ones dropped (80300007), a 503 retried and delivered, a malformed message
        /// refused locally with Push Kit's code, a many-token job sent as one request with an outcome per token, the APNs
        /// jobs beside them untouched; the message reaches the simulator byte for byte.
        @Test(.timeLimit(.minutes(3)))
        func aWorkerDeliversHMSJobsWithPushKitsOutcomes() throws {
            let env = try HMSWorld(faults: MockHMSFaultScript(invalidTokenPrefixes: ["dead"],
                                                              rules: [MockHMSRule(fate: .failFirst, tokenPrefix: "flaky-", count: 1)]))
            defer { env.stop() }
            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            for i in 0..<100 { jobs.append(Self.job(id: "hms-ok-\(i)", tokens: ["good-\(i)"])); expected["hms-ok-\(i)"] = "delivered" }
            for i in 0..<20 { jobs.append(Self.job(id: "hms-dead-\(i)", tokens: ["dead-\(i)"])); expected["hms-dead-\(i)"] = "token_dropped" }
            for i in 0..<5 { jobs.append(Self.job(id: "hms-flaky-\(i)", tokens: ["flaky-\(i)"])); expected["hms-flaky-\(i)"] = "delivered" }
            jobs.append(Self.job(id: "hms-bad", tokens: ["good-x"], data: #"{"k":1}"#))
            expected["hms-bad"] = "rejected"
            jobs.append(Self.job(id: "hms-multi", tokens: ["multi-a", "dead-multi", "multi-b", "multi-a"]))
            for i in 0..<50 {
                jobs.append(jobBytes(id: "apns-\(i)", token: deviceToken(prefix: "01", index: i)))
                expected["apns-\(i)"] = "delivered"
            }
            try env.world.push(jobs)
            let config = try env.writeConfig()
            try env.world.startWorker(id: "hms-1", config: config)
            let ledger = ResultsLedger(redisURL: env.world.redisURL)
            let total = expected.count + 3
            let (finished, problems) = try env.world.finish(total, in: ledger, seconds: 60, expected: expected)
            #expect(finished, "\(ledger.terminalCount) of \(total):\n\(env.world.workerLogs(lastLines: 30))")
            #expect(problems.isEmpty, "\(summarize(problems))")
            let perToken = ledger.contractProblems(expected: ["hms-multi multi-a": "delivered", "hms-multi multi-b": "delivered",
                                                              "hms-multi dead-multi": "token_dropped"]) { $0.id + " " + ($0.fields["token"] ?? "") }
            #expect(perToken.isEmpty, "\(summarize(perToken))")
            let reasons = Dictionary(ledger.entries.filter(\.isTerminal).map { ($0.id + " " + ($0.fields["token"] ?? ""), $0.fields["reason"] ?? "") }) { a, _ in a }
            #expect(reasons["hms-dead-0 dead-0"]?.hasPrefix("80300007") == true, "\(reasons["hms-dead-0 dead-0"] ?? "-")")
            #expect(reasons.first { $0.key.hasPrefix("hms-bad") }?.value == "80100003 message.data must be a string")
            // Byte for byte, the illegal ones never delivered, one access token for the run.
            let accepted = env.hms.acceptedMessages()
            let good = try #require(accepted.first { $0.tokens == ["good-7"] })
            #expect(good.message == #"{"notification":{"title":"Herald e2e","body":"hms-ok-7"},"data":"{\"k\":1}","android":{"urgency":"HIGH","ttl":"3600s"},"token":["good-7"]}"#)
            // The many-token job is one request as written (Push Kit's many-token send), answered a partial success.
            let multi = accepted.filter { ($0.tokens?.count ?? 0) > 1 }
            #expect(multi.count == 1 && multi.first?.tokens == ["multi-a", "dead-multi", "multi-b", "multi-a"] && multi.first?.code == "80100000",
                    "\(multi.map { ($0.tokens ?? [], $0.code) })")
            let deliveredTokens: Set<String> = Set(accepted.filter { $0.code == "80000000" }.compactMap { $0.tokens?.first })
            #expect(deliveredTokens.count == 105, "\(deliveredTokens.count) tokens delivered alone")
            // Each delivered entry names the requestId Push Kit answered its send with.
            let requestIDs = Dictionary(accepted.filter { $0.code == "80000000" || $0.code == "80100000" }.flatMap { m in (m.tokens ?? []).map { ($0, m.requestId) } }) { a, _ in a }
            let delivered = ledger.entries.filter { $0.outcome == "delivered" && $0.fields["platform"] == "hms" }
            #expect(!delivered.isEmpty && delivered.allSatisfy { entry in
                entry.fields["fcm_name"].map { !$0.isEmpty && requestIDs[entry.fields["token"] ?? ""] == $0 && entry.fields["message_id"] == $0 } ?? false
            }, "delivered hms entries without their send's requestId (message_id and fcm_name): \(delivered.prefix(3).map(\.fields))")
            #expect(env.hms.stats().tokensIssued == 1, "\(env.hms.stats())")
            let dropped = try readStream(try env.world.connectRedis(), "herald:dropped-tokens").filter { $0.fields["platform"] == "hms" }
            #expect(dropped.count == 21 && dropped.allSatisfy { $0.fields["app"] == "huawei" }, "\(dropped.count) hms dropped tokens")
            // Push Kit expires the access token (401 80200003): the next jobs are resent once with a fresh one.
            env.hms.expireAccessTokens()
            try env.world.push((0..<10).map { Self.job(id: "hms-late-\($0)", tokens: ["late-\($0)"]) })
            let late = Dictionary(uniqueKeysWithValues: (0..<10).map { ("hms-late-\($0)", "delivered") })
            let (lateFinished, lateProblems) = try env.world.finish(total + 10, in: ledger, seconds: 30, expected: late)
            #expect(lateFinished && lateProblems.isEmpty, "\(summarize(lateProblems))\n\(env.world.workerLogs(lastLines: 20))")
            #expect(env.hms.stats().tokensIssued == 2, "\(env.hms.stats())")
            let worker = try #require(env.world.workers["hms-1"])
            #expect(!worker.output.contains(Self.secret), "the client secret reached the log")
        }

        /// A wrong client secret: check-config fails naming Huawei's refusal, and the worker parks the Huawei app
        /// (its jobs wait, nothing sent) while APNs delivers; with the right secret in the file its jobs go out.
        @Test(.timeLimit(.minutes(2)))
        func aRefusedSecretParksTheHuaweiAppUntilFixed() throws {
            let env = try HMSWorld(faults: MockHMSFaultScript())
            defer { env.stop() }
            let wrong = env.world.directory + "/wrong-secret"
            try Data("not-the-secret".utf8).write(to: URL(fileURLWithPath: wrong))
            chmod(wrong, 0o600)
            let good = try env.writeConfig()
            let check = try env.world.runHerald(["check-config", "--config", good, "--skip-redis"])
            #expect(check.status == 0 && check.output.contains("ok   app 'huawei' (hms, app \(Self.appID)): client secret read; got an access token"),
                    "\(check.output)")
            let config = try env.writeConfig(secretFile: wrong, retry: ["configuration_pause_seconds": 2])
            let refused = try env.world.runHerald(["check-config", "--config", config, "--skip-redis"])
            #expect(refused.status != 0 && refused.output.contains("FAIL app 'huawei'") && refused.output.contains("1101"), "\(refused.output)")
            #expect(!refused.output.contains("not-the-secret") && !check.output.contains(Self.secret))

            var expected: [String: String] = [:]
            var jobs: [[UInt8]] = []
            for i in 0..<30 {
                jobs.append(Self.job(id: "hms-\(i)", tokens: ["good-\(i)"]))
                jobs.append(jobBytes(id: "apns-\(i)", token: deviceToken(prefix: "01", index: i)))
                expected["hms-\(i)"] = "delivered"
                expected["apns-\(i)"] = "delivered"
            }
            try env.world.push(jobs)
            let worker = try env.world.startWorker(id: "hms-park", config: config)
            let ledger = ResultsLedger(redisURL: env.world.redisURL)
            let parked = waitUntil(seconds: 30, interval: 0.1) {
                ledger.poll()
                let apns = ledger.entries.filter { $0.outcome == "delivered" && $0.fields["platform"] == "apns" }.count
                return apns == 30 && worker.output.contains("app paused")
                    && ledger.entries.contains { $0.fields["app"] == "huawei" && ($0.fields["reason"] ?? "").hasPrefix("AppPaused: TokenRefused") }
            }
            #expect(parked, "APNs not delivered or the Huawei app not parked:\n\(env.world.workerLogs(lastLines: 30))")
            ledger.poll()
            #expect(!ledger.entries.contains { $0.fields["app"] == "huawei" && $0.isTerminal && !($0.fields["reason"] ?? "").hasPrefix("AppPaused") })
            #expect(env.hms.stats().requests == 0, "a send went out without a token")
            try Data(Self.secret.utf8).write(to: URL(fileURLWithPath: wrong), options: .atomic)
            let finished = try ledger.waitForTerminal(60, seconds: 40) {
                if !worker.isRunning { throw TestSupportError("worker exited:\n\(env.world.workerLogs())") }
            }
            usleep(500_000)
            ledger.poll()
            #expect(finished, "\(ledger.terminalCount) of 60 after the fix:\n\(env.world.workerLogs(lastLines: 30))")
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")
            #expect(!worker.output.contains("not-the-secret") && !worker.output.contains(Self.secret))
        }

        /// `herald send --platform hms`: 0 and Push Kit's 80000000 for a good token, 1 and 80300007 for an illegal
        /// one, 65 with Push Kit's code for a message refused locally.
        @Test(.timeLimit(.minutes(1)))
        func sendSpeaksToPushKit() throws {
            let env = try HMSWorld(faults: MockHMSFaultScript(invalidTokenPrefixes: ["dead"]))
            defer { env.stop() }
            func send(_ message: String) throws -> (status: Int32?, output: String) {
                try env.world.runHerald(["send", "--platform", "hms", "--app-id", Self.appID, "--client-secret-file", env.secretFile,
                                         "--url", env.hms.baseURL, "--token-url", env.hms.tokenURL, "--ca-file", env.hms.caFile ?? "",
                                         "--message", message])
            }
            let ok = try send(#"{"notification":{"title":"hi","body":"there"},"token":["good-1"]}"#)
            #expect(ok.status == 0 && ok.output.contains(#""code":"80000000""#), "\(ok.output)")
            let dead = try send(#"{"data":"x","token":["dead-1"]}"#)
            #expect(dead.status == 1 && dead.output.contains(#""code":"80300007""#) && dead.output.contains(#""outcome":"failed""#), "\(dead.output)")
            let bad = try send(#"{"data":{"k":"v"},"token":["good-1"]}"#)
            #expect(bad.status == 65 && bad.output.contains("80100003 message.data must be a string"), "\(bad.output)")
            #expect(!(ok.output + dead.output).contains(Self.secret))
        }
    }
}

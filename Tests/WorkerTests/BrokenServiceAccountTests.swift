import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEndWaiting {
    /// An FCM app whose service account Google does not know (seed 003's "invalid_grant: account not found"):
    /// the app pauses like one with a broken APNs key (jobs wait, nothing dropped, one clear log line, the
    /// access token never logged) while the APNs app delivers; once the right file is in place its jobs go out.
    @Suite struct BrokenServiceAccount {
        @Test(.timeLimit(.minutes(2)))
        func anUnknownServiceAccountPausesTheFCMAppUntilFixed() throws {
            let world = try EndToEndWorld(faults: MockFaultScript(latencyMs: MockLatency(min: 0, max: 2), rules: []),
                                          fcmFaults: MockFCMFaultScript(rules: []))
            defer { world.shutdown(); world.removeFiles() }
            let fcm = try #require(world.fcm)
            let rightFile = try Data(contentsOf: URL(fileURLWithPath: fcm.serviceAccountFile))
            // Same project, an account the simulator has never issued.
            let stranger = try MockServiceAccount.generate(projectID: fcm.projectID, clientEmail: "stranger@\(fcm.projectID).iam.gserviceaccount.com")
            let brokenFile = world.directory + "/stranger.json"
            try stranger.write(to: brokenFile, tokenURI: fcm.tokenURI)

            let perPlatform = 200
            var expected: [String: String] = [:]
            var jobs: [[UInt8]] = []
            for i in 0..<perPlatform {
                jobs.append(jobBytes(id: "apns-\(i)", token: deviceToken(prefix: "01", index: i)))
                jobs.append(fcmJobBytes(id: "fcm-\(i)", token: "android-\(i):APA91b"))
                expected["apns-\(i)"] = "delivered"
                expected["fcm-\(i)"] = "delivered"
            }
            try world.push(jobs)
            let metricsPort = freeLoopbackPort()
            let config = try world.writeConfig(retry: ["configuration_pause_seconds": 2], serviceAccountFile: brokenFile,
                                               metricsListen: "127.0.0.1:\(metricsPort)")
            // check-config names the account, proves the key signs, and prints no key material; the refusal
            // itself only the token endpoint can give.
            let check = try world.runHerald(["check-config", "--config", config, "--skip-redis"])
            #expect(check.status == 0 && check.output.contains("(fcm, project \(fcm.projectID)): signed a test assertion as stranger@"),
                    "\(check.output)")
            #expect(!check.output.contains("PRIVATE KEY"))
            let worker = try world.startWorker(id: "sa-1", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)

            let paused = waitUntil(seconds: 30, interval: 0.1) {
                ledger.poll()
                let delivered = ledger.entries.filter { $0.outcome == "delivered" && $0.fields["platform"] == "apns" }.count
                let parked = ledger.entries.filter { $0.fields["app"] == "android" && ($0.fields["reason"] ?? "").hasPrefix("AppPaused: TokenRefused") }
                return delivered == perPlatform && !parked.isEmpty && worker.output.contains("app paused")
            }
            #expect(paused, "APNs not delivered or the FCM app not paused:\n\(world.workerLogs(lastLines: 30))")
            usleep(2_500_000)
            ledger.poll()
            let beforeFix = ledger.entries.filter { $0.fields["app"] == "android" }
            #expect(!beforeFix.contains { $0.isTerminal }, "FCM jobs ended before the file was fixed")
            #expect(beforeFix.allSatisfy { ($0.fields["reason"] ?? "").hasPrefix("AppPaused") && $0.fields["attempt"] == "1" })
            let pauseLines = worker.output.split(separator: "\n").filter { $0.contains("app paused") }
            #expect(pauseLines.allSatisfy { $0.contains("invalid_grant") && $0.contains("account not found") && $0.contains("android") },
                    "pause log lines: \(pauseLines.prefix(3))")
            #expect(fcm.stats().requests == 0, "nothing reached messages:send without a token")
            // The refusals are counted for the app, apart from an unreachable endpoint.
            let page = try httpGet(port: metricsPort, "/metrics", timeoutSeconds: 5).body
            let refusals = page.split(separator: "\n").first { $0.hasPrefix(#"herald_provider_token_exchange_failures_total{app="android",kind="refused"}"#) }
            #expect((refusals.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) } ?? 0) >= 1, "\(refusals.map(String.init) ?? page)")
            #expect(page.contains(#"herald_provider_token_exchange_failures_total{app="android",kind="unavailable"} 0"#))

            try rightFile.write(to: URL(fileURLWithPath: brokenFile), options: .atomic)
            let finished = try ledger.waitForTerminal(2 * perPlatform, seconds: 40) {
                if !worker.isRunning { throw TestSupportError("worker exited:\n\(world.workerLogs())") }
            }
            usleep(500_000)
            ledger.poll()
            #expect(finished, "\(ledger.terminalCount) of \(2 * perPlatform) finished after the fix:\n\(world.workerLogs(lastLines: 30))")
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")
            #expect(Set(fcm.acceptedMessages().compactMap(\.token)).count == perPlatform)
            #expect(worker.output.contains("app resumed"))
            #expect(!worker.output.contains("ya29."), "an access token reached the log")
            #expect(!worker.output.contains("PRIVATE KEY"))
            print("e2e broken service account: \(perPlatform) FCM jobs parked (\(beforeFix.count) AppPaused entries, \(pauseLines.count) pause lines) and delivered after the fix; \(fcm.stats().tokenErrors) token errors at the simulator")
            worker.signal(SIGTERM)
            #expect(worker.waitForExit(seconds: 10) == 0)
        }
    }
}

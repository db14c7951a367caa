import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEndWaiting {
    /// Two apps of different teams; one's key file holds the wrong private key. That app pauses (one clear
    /// log line, `retrying` entries with reason AppPaused, no job lost) while the other delivers; once the
    /// operator puts the right key in place, the paused app reloads it and its jobs are delivered.
    @Suite struct BrokenKey {
        @Test(.timeLimit(.minutes(2)))
        func brokenKeyPausesItsAppUntilFixed() throws {
            let good = E2EApp(name: "good", bundleID: "com.example.good", teamID: "TEAMGOOD01", keyID: "KEYGOOD001")
            let broken = E2EApp(name: "broken", bundleID: "com.example.broken", teamID: "TEAMBROKE1", keyID: "KEYBROKE01")
            let world = try EndToEndWorld(apps: [good, broken], faults: MockFaultScript(latencyMs: MockLatency(min: 0, max: 2), rules: []))
            defer { world.shutdown(); world.removeFiles() }

            // The broken app's key file: the same Key ID, but a private key the simulator has never seen.
            let wrongDirectory = world.directory + "/wrong-key"
            try FileManager.default.createDirectory(atPath: wrongDirectory, withIntermediateDirectories: true)
            let impostor = try MockProviderKey.generate(keyID: broken.keyID, teamID: broken.teamID, directory: wrongDirectory)
            let brokenKeyFile = impostor.privateKeyFile!
            let rightKey = try Data(contentsOf: URL(fileURLWithPath: world.keys["broken"]!.privateKeyFile!))
            #expect(try Data(contentsOf: URL(fileURLWithPath: brokenKeyFile)) != rightKey)

            let perApp = 300
            var jobs: [[UInt8]] = []
            var goodIDs: [String: String] = [:]
            var brokenIDs: [String: String] = [:]
            for i in 0..<perApp {
                jobs.append(jobBytes(id: "good-\(i)", token: deviceToken(prefix: "01", index: i), app: "good"))
                goodIDs["good-\(i)"] = "delivered"
                jobs.append(jobBytes(id: "broken-\(i)", token: deviceToken(prefix: "02", index: i), app: "broken"))
                brokenIDs["broken-\(i)"] = "delivered"
            }
            try world.push(jobs)
            let config = try world.writeConfig(retry: ["configuration_pause_seconds": 2], keyFiles: ["broken": brokenKeyFile])
            let worker = try world.startWorker(id: "keys-1", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)

            // While the key is wrong: the good app delivers everything, the broken one is paused.
            let paused = waitUntil(seconds: 30, interval: 0.1) {
                ledger.poll()
                let delivered = ledger.entries.filter { $0.outcome == "delivered" && $0.fields["app"] == "good" }.count
                let pausedEntries = ledger.entries.filter { $0.fields["app"] == "broken" && ($0.fields["reason"] ?? "").hasPrefix("AppPaused") }.count
                return delivered == perApp && pausedEntries >= 1 && worker.output.contains("app paused")
            }
            #expect(paused, "good app not delivered or broken app not paused:\n\(world.workerLogs(lastLines: 30))")
            // Let the pause come round once more with the key still wrong: it must pause again, not deliver.
            usleep(2_500_000)
            ledger.poll()
            let beforeFix = ledger.entries.filter { $0.fields["app"] == "broken" }
            #expect(!beforeFix.contains { $0.isTerminal }, "broken app jobs ended before the key was fixed: \(Set(beforeFix.filter(\.isTerminal).map { "\($0.outcome) \($0.fields["reason"] ?? "")" }))")
            #expect(beforeFix.allSatisfy { ($0.fields["reason"] ?? "").hasPrefix("AppPaused") })
            let pauseLines = worker.output.split(separator: "\n").filter { $0.contains("app paused") }
            #expect(pauseLines.allSatisfy { $0.contains("\"error\"") && $0.contains("broken") && $0.contains("InvalidProviderToken") },
                    "pause log lines: \(pauseLines.prefix(3))")
            #expect(!worker.output.contains("BEGIN PRIVATE KEY"), "a key reached the log")

            // The operator puts the right key in place (a rename, as editors and deploy tools do).
            try rightKey.write(to: URL(fileURLWithPath: brokenKeyFile), options: .atomic)
            let fixedAt = Date()
            let finished = try ledger.waitForTerminal(2 * perApp, seconds: 40) {
                if !worker.isRunning { throw TestSupportError("worker exited:\n\(world.workerLogs())") }
            }
            usleep(1_000_000)
            ledger.poll()
            #expect(finished, "\(ledger.terminalCount) of \(2 * perApp) finished after the fix:\n\(world.workerLogs(lastLines: 30))")
            let problems = ledger.contractProblems(expected: goodIDs.merging(brokenIDs) { a, _ in a })
            #expect(problems.isEmpty, "\(summarize(problems))")
            #expect(ledger.entries.filter { $0.fields["app"] == "good" }.count == perApp, "the good app had retries")
            let brokenRetries = ledger.entries.filter { $0.fields["app"] == "broken" && !$0.isTerminal }
            #expect(brokenRetries.allSatisfy { ($0.fields["reason"] ?? "").hasPrefix("AppPaused") && $0.fields["retry_at"] != nil })
            #expect(worker.output.contains("app resumed"))
            let accepted = world.simulator.acceptedNotifications()
            #expect(accepted.filter { $0.topic == broken.bundleID }.count == perApp)
            // A paused app does not hammer APNs: each pause costs one rejected request, not one per claimed job.
            let invalidAnswers = world.simulator.stats().byReason["InvalidProviderToken", default: 0]
            let allPauseLines = worker.output.split(separator: "\n").filter { $0.contains("app paused") }.count
            #expect(invalidAnswers >= 1)
            #expect(invalidAnswers <= allPauseLines, "\(invalidAnswers) requests with the broken key for \(allPauseLines) pauses")
            print("e2e broken key: \(perApp) jobs per app; \(brokenRetries.count) AppPaused entries, \(pauseLines.count) pause log lines before the fix; delivered \(String(format: "%.1f", Date().timeIntervalSince(fixedAt))) s after the key was fixed; simulator InvalidProviderToken answers \(invalidAnswers) for \(allPauseLines) pauses")

            worker.signal(SIGTERM)
            #expect(worker.waitForExit(seconds: 10) == 0)
        }
    }
}

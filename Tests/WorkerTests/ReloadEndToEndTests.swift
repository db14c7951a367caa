import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEndWaiting {
    /// SIGHUP reloads a running worker's configuration: a rotated key and an added app take effect under load
    /// with every job ending once; an invalid file is refused, named in the log, and delivery goes on.
    @Suite struct Reload {
        static let apps = [E2EApp(name: "main", bundleID: "com.example.e2e", teamID: "TEAME2E001", keyID: "KEYE2E0001"),
                           E2EApp(name: "second", bundleID: "com.example.second", teamID: "TEAME2E002", keyID: "KEYE2E0002")]
        static let rotatedKeyID = "KEYE2E0009"

        @Test(.timeLimit(.minutes(3)))
        func aRotatedKeyAndAnAddedAppTakeEffectUnderLoadWithNothingLostOrSentTwice() throws {
            // The simulator knows the rotated key from the start, as Apple does once it is made in the portal.
            let rotatedDirectory = makeTemporaryDirectory("herald-rotated-key")
            defer { try? FileManager.default.removeItem(atPath: rotatedDirectory) }
            let rotated = try MockProviderKey.generate(keyID: Self.rotatedKeyID, teamID: "TEAME2E001", topics: ["com.example.e2e"],
                                                       directory: rotatedDirectory)
            let world = try EndToEndWorld(apps: Self.apps, faults: MockFaultScript(seed: 11, latencyMs: MockLatency(min: 5, max: 20))) {
                $0.keys.append(rotated)
                $0.recordRequests = true
            }
            defer { world.shutdown(); world.removeFiles() }
            let before = 5_000, added = 1_000
            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            for i in 0..<before {
                jobs.append(jobBytes(id: "m-\(i)", token: deviceToken(prefix: "00", index: i), app: "main"))
                expected["m-\(i)"] = "delivered"
            }
            try world.push(jobs)
            let worker: [String: Any] = ["max_in_flight": 100, "claim_batch": 50, "event_loops": 2, "lease_seconds": 30]
            let config = try world.writeConfig(worker: worker, only: ["main"])
            let process = try world.startWorker(id: "reload-1", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            #expect(try world.waitForTerminal(before / 5, in: ledger, seconds: 60), "no progress:\n\(world.workerLogs())")

            _ = try world.writeConfig(worker: worker, keyFiles: ["main": rotated.privateKeyFile!], keyIDs: ["main": Self.rotatedKeyID])
            process.signal(SIGHUP)
            let reloaded = waitUntil(seconds: 30) { process.output.contains("\"msg\":\"configuration reloaded\"") }
            #expect(reloaded, "no reload:\n\(world.workerLogs(lastLines: 30))")
            // Issue 52: the reload's drain says it is a reload's, not a shutdown's.
            #expect(process.output.contains("\"msg\":\"draining for a reload\"") && process.output.contains("drained for the reload"),
                    "\(process.output.suffix(3000))")
            #expect(!process.output.contains("\"msg\":\"draining\"") && !process.output.contains("\"msg\":\"stopped\""), "\(process.output.suffix(3000))")
            let requestsAtReload = world.simulator.recordedRequests().count
            #expect(ledger.poll() && ledger.terminalCount < before, "the load must still be flowing at the reload (\(ledger.terminalCount) done)")

            jobs = []
            for i in 0..<added {
                jobs.append(jobBytes(id: "s-\(i)", token: deviceToken(prefix: "00", index: before + i), app: "second"))
                expected["s-\(i)"] = "delivered"
            }
            try world.push(jobs)
            let finished = try world.waitForTerminal(before + added, in: ledger, seconds: 90)
            usleep(300_000)
            ledger.poll()
            #expect(finished, "\(ledger.terminalCount) of \(before + added) finished:\n\(world.workerLogs(lastLines: 30))")
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(problems.count) problems: \(problems.prefix(10))")
            let accepted = world.simulator.acceptedNotifications()
            let (perToken, duplicates) = duplicateDeliveries(accepted)
            #expect(duplicates == 0)
            #expect(perToken.count == before + added, "\(perToken.count) tokens delivered")
            #expect(accepted.filter { $0.topic == "com.example.second" }.count == added)

            // Every request after the reload is signed with the new key (each app's own).
            let requests = world.simulator.recordedRequests()
            let kids = requests.map { (topic: $0.header("apns-topic") ?? "", kid: keyID(ofBearer: $0.header("authorization"))) }
            let mainBefore = kids.prefix(requestsAtReload).filter { $0.topic == "com.example.e2e" }
            let mainAfter = kids.dropFirst(requestsAtReload).filter { $0.topic == "com.example.e2e" }
            #expect(mainBefore.contains { $0.kid == "KEYE2E0001" }, "requests before the reload use the old key")
            #expect(!mainAfter.isEmpty && mainAfter.allSatisfy { $0.kid == Self.rotatedKeyID },
                    "after the reload: \(Dictionary(grouping: mainAfter, by: \.kid).mapValues(\.count))")
            #expect(kids.dropFirst(requestsAtReload).filter { $0.topic == "com.example.second" }.allSatisfy { $0.kid == "KEYE2E0002" })
            print("e2e reload under load: \(mainBefore.count) requests before, \(mainAfter.count) after with the rotated key; \(duplicates) duplicates")
            process.signal(SIGTERM)
            #expect(process.waitForExit(seconds: 15) == 0)
        }

        @Test(.timeLimit(.minutes(2)))
        func anInvalidConfigurationIsRefusedByNameAndTheOldOneKeepsDelivering() throws {
            let world = try EndToEndWorld()
            defer { world.shutdown(); world.removeFiles() }
            let port = freeLoopbackPort()
            let config = try world.writeConfig(metricsListen: "127.0.0.1:\(port)")
            let process = try world.startWorker(id: "reload-2", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            var expected: [String: String] = [:]
            func deliver(_ prefix: String, from: Int) throws {
                try world.push((0..<200).map { i in
                    expected["\(prefix)-\(i)"] = "delivered"
                    return jobBytes(id: "\(prefix)-\(i)", token: deviceToken(prefix: "00", index: from + i))
                })
                #expect(try world.waitForTerminal(expected.count, in: ledger, seconds: 30), "\(prefix):\n\(world.workerLogs(lastLines: 30))")
            }
            try deliver("a", from: 0)
            // A key file that is not there, then a bound violated: each refused, named, and the old one runs on.
            let missing = world.directory + "/keys-main/AuthKey_GONE.p8"
            let invalid: [(keyFiles: [String: String], worker: [String: Any], named: String)] = [
                (["main": missing], [:], "AuthKey_GONE.p8"), ([:], ["max_in_flight": 0], "worker.max_in_flight"),
            ]
            for (attempt, (keyFiles, workerSettings, named)) in invalid.enumerated() {
                #expect(try world.writeConfig(worker: workerSettings, keyFiles: keyFiles, metricsListen: "127.0.0.1:\(port)") == config)
                process.signal(SIGHUP)
                let refusals = { process.output.split(separator: "\n").filter { $0.contains("configuration reload refused") }.map(String.init) }
                #expect(waitUntil(seconds: 20) { refusals().count == attempt + 1 }, "\(world.workerLogs(lastLines: 30))")
                let line = refusals().last ?? ""
                #expect(line.contains(named) && line.contains("\"level\":\"error\""), "\(line)")
            }
            try deliver("b", from: 1_000)
            var page = try httpGet(port: port, "/metrics").body
            #expect(page.contains("herald_config_reloads_total{result=\"refused\"} 2"))
            #expect(page.contains("herald_config_reloads_total{result=\"ok\"} 0"))
            let startedAt = metricValue(page, "herald_config_last_reload_success_timestamp_seconds") ?? 0
            #expect(startedAt > Date().timeIntervalSince1970 - 600)

            // Fixed again, with a setting only a restart changes: it keeps its value and is named.
            _ = try world.writeConfig(redis: ["command_timeout_ms": 4_000], metricsListen: "127.0.0.1:\(port)")
            usleep(1_100_000)
            process.signal(SIGHUP)
            #expect(waitUntil(seconds: 20) { process.output.contains("\"msg\":\"configuration reloaded\"") }, "\(world.workerLogs(lastLines: 30))")
            let warning = process.output.split(separator: "\n").first { $0.contains("need a restart") }.map(String.init) ?? ""
            #expect(warning.contains("redis.command_timeout_ms"), "\(warning)")
            try deliver("c", from: 2_000)
            page = try httpGet(port: port, "/metrics").body
            #expect(page.contains("herald_config_reloads_total{result=\"ok\"} 1"))
            #expect((metricValue(page, "herald_config_last_reload_success_timestamp_seconds") ?? 0) > startedAt)
            #expect(ledger.contractProblems(expected: expected).isEmpty)
            #expect(duplicateDeliveries(world.simulator.acceptedNotifications()).duplicates == 0)
            process.signal(SIGTERM)
            #expect(process.waitForExit(seconds: 15) == 0)
        }

        @Test(.timeLimit(.minutes(2)))
        func aSigtermDuringAReloadDrainsAndExitsWithNothingLost() throws {
            // Slow answers keep the reload's drain going long enough for the SIGTERM to land in it.
            let world = try EndToEndWorld(faults: MockFaultScript(seed: 3, latencyMs: MockLatency(min: 400, max: 800)))
            defer { world.shutdown(); world.removeFiles() }
            let total = 600
            var expected: [String: String] = [:]
            try world.push((0..<total).map { i in
                expected["t-\(i)"] = "delivered"
                return jobBytes(id: "t-\(i)", token: deviceToken(prefix: "00", index: i))
            })
            let config = try world.writeConfig(worker: ["max_in_flight": 100, "claim_batch": 50, "lease_seconds": 30])
            let first = try world.startWorker(id: "reload-3", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            #expect(try world.waitForTerminal(50, in: ledger, seconds: 30), "\(world.workerLogs(lastLines: 30))")
            first.signal(SIGHUP)
            #expect(waitUntil(seconds: 10) { first.output.contains("\"msg\":\"draining for a reload\"") }, "\(first.output.suffix(2000))")
            first.signal(SIGTERM)
            #expect(first.waitForExit(seconds: 20) == 0, "\(first.output.suffix(3000))")
            #expect(!first.output.contains("configuration reloaded"))
            #expect(first.output.contains("shutdown requested"))

            let second = try world.startWorker(id: "reload-3b", config: config)
            let finished = try ledger.waitForTerminal(total, seconds: 60) {
                if !second.isRunning { throw TestSupportError("the second worker exited:\n\(second.output.suffix(2000))") }
            }
            usleep(300_000)
            ledger.poll()
            #expect(finished, "\(ledger.terminalCount) of \(total):\n\(world.workerLogs(lastLines: 30))")
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(problems.count) problems: \(problems.prefix(10))")
            #expect(duplicateDeliveries(world.simulator.acceptedNotifications()).duplicates == 0)
            second.signal(SIGTERM)
            #expect(second.waitForExit(seconds: 15) == 0)
        }
    }
}

/// The `kid` in the header of an APNs provider token (`bearer <header>.<claims>.<signature>`).
private func keyID(ofBearer authorization: String?) -> String {
    guard let token = authorization?.split(separator: " ").last, let header = token.split(separator: ".").first else { return "" }
    var base64 = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while base64.count % 4 != 0 { base64 += "=" }
    guard let data = Data(base64Encoded: base64), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return "" }
    return object["kid"] as? String ?? ""
}

/// The value of an unlabelled sample on a metrics page.
private func metricValue(_ page: String, _ name: String) -> Double? {
    page.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
}

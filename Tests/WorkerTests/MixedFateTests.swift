import Foundation
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEnd {
    /// 10,000 jobs of every fate through two real worker processes: each ends with exactly the expected
    /// terminal outcome and nothing else, and retries arrive only after their delays.
    @Suite struct MixedFate {
        /// A fate given by token prefix: the simulator's rule and the terminal outcome Herald must record.
        struct Fate {
            let prefix: String
            let count: Int
            let outcome: String
            /// Reason of the one `retrying` entry before the terminal one, if the fate has one.
            let retryReason: String?
            let terminalReason: String?
        }

        static let fates: [Fate] = [
            Fate(prefix: "dead", count: 500, outcome: "token_dropped", retryReason: nil, terminalReason: "Unregistered"),
            Fate(prefix: "5a", count: 400, outcome: "token_dropped", retryReason: nil, terminalReason: "BadDeviceToken"),
            Fate(prefix: "bad0", count: 200, outcome: "failed", retryReason: nil, terminalReason: "DeviceTokenNotForTopic"),
            Fate(prefix: "77", count: 400, outcome: "delivered", retryReason: "TooManyRequests", terminalReason: nil),
            Fate(prefix: "e5", count: 400, outcome: "delivered", retryReason: "InternalServerError", terminalReason: nil),
            // 503 every time, with max_attempts 2: one retry, then failed.
            Fate(prefix: "e6", count: 100, outcome: "failed", retryReason: "ServiceUnavailable", terminalReason: "MaxAttempts:ServiceUnavailable"),
        ]

        /// Malformed jobs: (label, bytes, reason code the dead letter must start with).
        static func malformedJobs() -> [(String, [UInt8], String)] {
            var jobs: [(String, [UInt8], String)] = []
            let token = deviceToken(prefix: "00", index: 999_999)
            for i in 0..<3 {
                jobs.append(("not JSON \(i)", Array("this is not JSON \(i) {".utf8), "not_json"))
                jobs.append(("not an object \(i)", Array("[\"an array\", \(i)]".utf8), "not_object"))
                jobs.append(("missing token \(i)", Array("{\"id\":\"bad-missing-\(i)\",\"payload\":{\"aps\":{}}}".utf8), "missing_token"))
                jobs.append(("bad hex \(i)", Array("{\"id\":\"bad-hex-\(i)\",\"token\":\"zz12-not-hex-\(i)\",\"payload\":{\"aps\":{}}}".utf8), "bad_token"))
                let big = String(repeating: "x", count: 5000)
                jobs.append(("payload too large \(i)", Array("{\"id\":\"bad-large-\(i)\",\"token\":\"\(token)\",\"payload\":{\"aps\":{\"alert\":\"\(big)\"}}}".utf8), "PayloadTooLarge"))
            }
            // One 10 MB JSON string: parsed far enough to be refused, stored whole in the dead letter.
            var tenMegabytes: [UInt8] = [UInt8(ascii: "\"")]
            tenMegabytes.append(contentsOf: [UInt8](repeating: UInt8(ascii: "y"), count: 10 * 1024 * 1024))
            tenMegabytes.append(UInt8(ascii: "\""))
            jobs.append(("10 MB string", tenMegabytes, "not_object"))
            return jobs
        }

        /// The simulator's rule for each fate's token prefix (also used by the cluster failover run).
        static let faultRules: [MockFaultRule] = [
            MockFaultRule(fate: .unregistered, tokenPrefix: "dead"),
            MockFaultRule(fate: .otherEnvironment, tokenPrefix: "5a"),
            MockFaultRule(fate: .otherTopic, tokenPrefix: "bad0"),
            MockFaultRule(fate: .failFirst, tokenPrefix: "77", status: 429, reason: "TooManyRequests", count: 1),
            MockFaultRule(fate: .failFirst, tokenPrefix: "e5", status: 500, reason: "InternalServerError", count: 1),
            MockFaultRule(fate: .error, tokenPrefix: "e6", status: 503, reason: "ServiceUnavailable"),
        ]

        @Test(.timeLimit(.minutes(3)))
        func tenThousandJobsOfMixedFateEachEndOnce() throws {
            let faults = MockFaultScript(seed: 11, latencyMs: MockLatency(min: 0, max: 2), rules: Self.faultRules)
            let world = try EndToEndWorld(faults: faults)
            defer { world.shutdown(); world.removeFiles() }

            let total = 10_000
            let malformed = Self.malformedJobs()
            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            var fateOf: [String: Fate] = [:]
            var tokenOf: [String: String] = [:]
            var index = 0
            for fate in Self.fates {
                for _ in 0..<fate.count {
                    let id = "j-\(index)"
                    let token = deviceToken(prefix: fate.prefix, index: index)
                    jobs.append(jobBytes(id: id, token: token, body: "job \(index)"))
                    expected[id] = fate.outcome
                    fateOf[id] = fate
                    tokenOf[id] = token
                    index += 1
                }
            }
            let deliverFate = Fate(prefix: "00", count: 0, outcome: "delivered", retryReason: nil, terminalReason: nil)
            while jobs.count < total - malformed.count {
                let id = "j-\(index)"
                let token = deviceToken(prefix: "00", index: index)
                jobs.append(jobBytes(id: id, token: token, body: "job \(index)"))
                expected[id] = "delivered"
                fateOf[id] = deliverFate
                tokenOf[id] = token
                index += 1
            }
            // Malformed jobs spread through the queue, so they share batches with good ones.
            for (offset, job) in malformed.enumerated() {
                jobs.insert(job.1, at: min(jobs.count, offset * 600 + 17))
            }
            #expect(jobs.count == total)
            try world.push(jobs)

            // No worker dies here, so no lease should run out and no request time out (either resends a job APNs
            // may have taken): leases and request timeouts long enough for a loaded machine or a sanitized build
            // make every duplicate below a real double send.
            let patient: [String: Any] = ["request_timeout_ms": 60_000]
            let config = try world.writeConfig(worker: ["max_in_flight": 500, "claim_batch": 100, "lease_seconds": 60],
                                               retry: ["max_attempts": 2], apns: patient)
            // The second process runs two pipelines (event loops), as worker.event_loops allows.
            let twoLoops = try world.writeConfig(name: "two-loops", worker: ["max_in_flight": 250, "claim_batch": 100, "event_loops": 2, "lease_seconds": 60],
                                                 retry: ["max_attempts": 2], apns: patient)
            let started = Date()
            try world.startWorker(id: "mixed-1", config: config)
            try world.startWorker(id: "mixed-2", config: twoLoops)

            let ledger = ResultsLedger(redisURL: world.redisURL)
            let finished = try ledger.waitForTerminal(total, seconds: 120) {
                for (id, worker) in world.workers where !worker.isRunning {
                    throw TestSupportError("worker \(id) exited early:\n\(world.workerLogs())")
                }
            }
            let elapsed = Date().timeIntervalSince(started)
            // A moment more, so that anything extra (a duplicate terminal entry) would have shown up.
            usleep(1_500_000)
            ledger.poll()
            #expect(finished, "only \(ledger.terminalCount) of \(total) jobs finished:\n\(world.workerLogs())")

            // Every well-formed job: exactly one terminal entry, last, the expected one.
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")

            // Per fate: the retrying entries, their reasons and delays, and the terminal reasons.
            let grouped = ledger.byJob
            var retryProblems: [String] = []
            var retryDelays: [Int64] = []
            for (id, fate) in fateOf {
                let list = grouped[id] ?? []
                guard let terminal = list.last, terminal.isTerminal else { continue }
                let retrying = list.filter { !$0.isTerminal }
                if let reason = fate.retryReason {
                    guard retrying.count == 1 else {
                        retryProblems.append("\(id): \(retrying.count) retrying entries, expected 1")
                        continue
                    }
                    let retry = retrying[0]
                    if retry.fields["reason"] != reason { retryProblems.append("\(id): retry reason \(retry.fields["reason"] ?? "-")") }
                    guard let retryAt = retry.fields["retry_at"].flatMap({ Int64($0) }) else {
                        retryProblems.append("\(id): retrying entry without retry_at")
                        continue
                    }
                    // Delays of 1 s (+-20 % jitter) from the decision; the entry is written a little after it.
                    if retryAt < retry.millis + 300 { retryProblems.append("\(id): retry_at only \(retryAt - retry.millis) ms after the entry") }
                    // The terminal entry comes after the due time (small tolerance for the clock readings).
                    if terminal.millis < retryAt - 50 { retryProblems.append("\(id): delivered \(retryAt - terminal.millis) ms before retry_at") }
                    retryDelays.append(terminal.millis - retry.millis)
                    if terminal.fields["attempt"] != "2" { retryProblems.append("\(id): terminal attempt \(terminal.fields["attempt"] ?? "-")") }
                } else if !retrying.isEmpty {
                    retryProblems.append("\(id): unexpected retrying entries \(retrying.map { $0.fields["reason"] ?? "" })")
                }
                if let reason = fate.terminalReason, terminal.fields["reason"] != reason {
                    retryProblems.append("\(id): terminal reason \(terminal.fields["reason"] ?? "-"), expected \(reason)")
                }
                if terminal.fields["token"] != tokenOf[id] { retryProblems.append("\(id): token \(terminal.fields["token"] ?? "-")") }
                if terminal.outcome == "delivered" && (terminal.fields["status"] != "200" || (terminal.fields["apns_id"] ?? "").isEmpty) {
                    retryProblems.append("\(id): delivered without status 200 and apns_id")
                }
            }
            #expect(retryProblems.isEmpty, "\(summarize(retryProblems))")

            // Malformed jobs: one `rejected` entry each, one dead letter each (with the job and a reason), and
            // nothing for them reaches APNs.
            let knownIDs = Set(expected.keys)
            let foreign = ledger.entries.filter { !knownIDs.contains($0.id) }
            #expect(foreign.count == malformed.count, "entries not of well-formed jobs: \(foreign.map { "\($0.id) \($0.outcome)" })")
            #expect(foreign.allSatisfy { $0.outcome == "rejected" && !($0.fields["reason"] ?? "").isEmpty })
            #expect(Set(foreign.map(\.id)).count == foreign.count, "rejected entries share an id")
            let redis = try world.connectRedis()
            let deadItems = try redis.command(["LRANGE", "herald:dead", "0", "-1"]).array ?? []
            let dead = deadItems.compactMap { $0.bytes.flatMap(DeadLetterEntry.decode) }
            #expect(dead.count == malformed.count, "dead letters: \(dead.count)")
            for (label, bytes, code) in malformed {
                let matches = dead.filter { $0.job == bytes }
                #expect(matches.count == 1, "dead letter for \(label): \(matches.count)")
                if let entry = matches.first {
                    #expect(entry.reason.hasPrefix(code), "dead letter reason for \(label): \(entry.reason)")
                    #expect(!entry.truncated)
                }
            }

            // Dropped tokens: one entry per 410 and per BadDeviceToken job, with its token and reason.
            let dropped = try readStream(redis, "herald:dropped-tokens")
            let droppedByToken = Dictionary(grouping: dropped, by: { $0.fields["token"] ?? "" })
            var droppedProblems: [String] = []
            for (id, fate) in fateOf where fate.outcome == "token_dropped" {
                let entries = droppedByToken[tokenOf[id]!] ?? []
                if entries.count != 1 { droppedProblems.append("\(id): \(entries.count) dropped-token entries"); continue }
                if entries[0].fields["reason"] != fate.terminalReason { droppedProblems.append("\(id): reason \(entries[0].fields["reason"] ?? "-")") }
                if fate.prefix == "dead" && entries[0].fields["invalid_since"] == nil { droppedProblems.append("\(id): 410 without invalid_since") }
                if entries[0].fields["topic"] != "com.example.e2e" { droppedProblems.append("\(id): topic \(entries[0].fields["topic"] ?? "-")") }
            }
            #expect(dropped.count == 900, "dropped-token entries: \(dropped.count)")
            #expect(droppedProblems.isEmpty, "\(summarize(droppedProblems))")

            // Nothing left behind: queue, retry schedule and leases are empty.
            #expect(try redis.command(["LLEN", "herald:queue"]).int == 0)
            #expect(try redis.command(["ZCARD", "herald:retry"]).int == 0)
            let leaseKeys = try redis.command(["KEYS", "herald:leases:*"]).array ?? []
            for key in leaseKeys {
                #expect(try redis.command(["HLEN", key.string ?? ""]).int == 0, "leases left in \(key.string ?? "")")
            }

            // The simulator accepted each deliverable token exactly once: no duplicate sends without a crash.
            let (perToken, duplicates) = duplicateDeliveries(world.simulator.acceptedNotifications())
            let deliverable = expected.filter { $0.value == "delivered" }.count
            #expect(perToken.count == deliverable)
            let twice = perToken.filter { $0.value > 1 }.keys
            #expect(duplicates == 0, "\(duplicates) sent twice, by prefix \(Dictionary(grouping: twice, by: { String($0.prefix(2)) }).mapValues(\.count)); worker warnings and progress:\n\(world.workerLogs(lastLines: 100_000).split(separator: "\n").filter { $0.contains("warn") || $0.contains("\"progress\"") }.suffix(20).joined(separator: "\n"))")

            // Graceful stop of both workers: exit 0 within the shutdown deadline.
            for (id, worker) in world.workers {
                worker.signal(SIGTERM)
                let status = worker.waitForExit(seconds: 10)
                #expect(status == 0, "worker \(id) exit status \(String(describing: status))")
            }
            let byWorker = Dictionary(grouping: ledger.entries, by: { $0.fields["worker"] ?? "" }).mapValues(\.count)
            #expect(Set(byWorker.keys) == ["mixed-1", "mixed-2-0", "mixed-2-1"], "results by worker: \(byWorker)")
            let counts = ledger.terminalByOutcome
            let retries = ledger.entries.count - ledger.terminalCount
            print("e2e mixed fate: \(total) jobs in \(String(format: "%.1f", elapsed)) s with 2 workers; terminal \(counts), \(retries) retrying entries, retry gaps \(retryDelays.min() ?? 0)...\(retryDelays.max() ?? 0) ms, simulator duplicates \(duplicates); results by worker \(byWorker.sorted { $0.key < $1.key })")
        }
    }
}

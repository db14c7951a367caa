import Foundation
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEnd {
    /// Issue 14 end to end: 10,000 pushed jobs mixing multicast, scheduled delivery, duplicate copies (with
    /// idempotency on) and environment fallback, through two workers, one SIGKILLed a third of the way, and Redis
    /// killed and restarted from its append-only file two thirds of the way. Exactly one terminal outcome per job
    /// and per token, and exactly one `duplicate` entry per extra copy.
    @Suite struct JobKinds {
        @Test(.timeLimit(.minutes(3)))
        func tenThousandMixedJobsThroughAWorkerKillAndARedisRestartEndOncePerJobAndToken() throws {
            // "fb" tokens: production answers BadDeviceToken (the first request), sandbox accepts (the second).
            // "e5" tokens (a tenth of each multicast job's): a 500 first, so that token alone is retried.
            let faults = MockFaultScript(seed: 14, latencyMs: MockLatency(min: 0, max: 1), rules: [
                MockFaultRule(fate: .failFirst, tokenPrefix: "fb", status: 400, reason: "BadDeviceToken", count: 1),
                MockFaultRule(fate: .failFirst, tokenPrefix: "e5", status: 500, reason: "InternalServerError", count: 1),
            ])
            let world = try EndToEndWorld(faults: faults, appendOnly: true)
            defer { world.shutdown(); world.removeFiles() }

            let total = 10_000
            let multicastJobs = 20, tokensEach = 100, scheduledCount = 400, fallbackCount = 300
            var jobs: [[UInt8]] = []
            /// What has one terminal outcome: "id" for single jobs, "id token" for each token of a multicast job.
            var expected: [String: String] = [:]
            var copies: [String: Int] = [:]
            var deliverAt: [String: Int64] = [:]
            var fallbackIDs: Set<String> = []
            var singles: [(id: String, bytes: [UInt8])] = []
            var multicast: [[UInt8]] = []
            let due = Int64(Date().timeIntervalSince1970 * 1000) + 4_000
            var index = 0
            func single(_ prefix: String, extra: String = "") -> (String, [UInt8]) {
                let id = "k-\(index)"
                let token = deviceToken(prefix: prefix, index: index)
                index += 1
                expected[id] = "delivered"
                copies[id] = 1
                return (id, Array(#"{"id":"\#(id)","token":"\#(token)"\#(extra),"payload":{"aps":{"alert":"job \#(id)"}}}"#.utf8))
            }
            for m in 0..<multicastJobs {
                let id = "mc-\(m)"
                let tokens = (0..<tokensEach).map { deviceToken(prefix: $0 % 10 == 3 ? "e5" : "0c", index: m * 1000 + $0) }
                for token in tokens { expected["\(id) \(token)"] = "delivered" }
                copies[id] = 1
                multicast.append(Array(#"{"id":"\#(id)","tokens":[\#(tokens.map { "\"\($0)\"" }.joined(separator: ","))],"payload":{"aps":{"alert":"to many"}}}"#.utf8))
            }
            for _ in 0..<scheduledCount {
                let (id, bytes) = single("5c", extra: #","deliver_at":\#(due)"#)
                deliverAt[id] = due
                singles.append((id, bytes))
            }
            for _ in 0..<fallbackCount {
                let (id, bytes) = single("fb")
                fallbackIDs.insert(id)
                singles.append((id, bytes))
            }
            // Extra copies: of ordinary, scheduled and multicast jobs, pushed after their originals.
            let duplicateCount = 600
            let multicastDuplicates = 2
            while multicast.count + singles.count + duplicateCount + multicastDuplicates < total {
                singles.append(single("00"))
            }
            jobs = singles.map(\.bytes)
            // Multicast jobs spread through the queue, so that some fan out after each crash.
            for (m, bytes) in multicast.enumerated() { jobs.insert(bytes, at: m * jobs.count / multicastJobs) }
            for n in 0..<duplicateCount {
                let original = singles[(n * 37) % singles.count]
                copies[original.id, default: 1] += 1
                jobs.append(original.bytes)
            }
            for m in 0..<multicastDuplicates {
                copies["mc-\(m)", default: 1] += 1
                jobs.append(multicast[m])
            }
            #expect(jobs.count == total)
            try world.push(jobs)

            let settings: [String: Any] = ["max_in_flight": 500, "claim_batch": 100, "idempotency_window_seconds": 3600]
            let config = try world.writeConfig(worker: settings, apns: ["request_timeout_ms": 60_000], app: ["environment_fallback": true])
            let started = Date()
            let victim = try world.startWorker(id: "kinds-1", config: config)
            try world.startWorker(id: "kinds-2", config: config)

            let duplicates = copies.values.reduce(0) { $0 + $1 - 1 }
            let terminalTotal = expected.count + duplicates
            let ledger = ResultsLedger(redisURL: world.redisURL)
            var killedAt: Int? = nil
            var redisCrashedAt: Int? = nil
            let finished = try ledger.waitForTerminal(terminalTotal, seconds: 120) {
                if killedAt == nil && ledger.terminalCount >= terminalTotal / 3 {
                    victim.signal(SIGKILL)
                    killedAt = ledger.terminalCount
                }
                if killedAt != nil && redisCrashedAt == nil && ledger.terminalCount >= terminalTotal * 2 / 3 {
                    redisCrashedAt = ledger.terminalCount
                    world.redis.crash()
                    usleep(1_000_000)
                    try world.redis.start()
                }
                if let worker = world.workers["kinds-2"], !worker.isRunning {
                    throw TestSupportError("worker kinds-2 exited early:\n\(world.workerLogs())")
                }
            }
            let elapsed = Date().timeIntervalSince(started)
            usleep(1_500_000)  // anything extra (a second terminal entry) would show up by now
            ledger.poll()
            #expect(finished, "only \(ledger.terminalCount) of \(terminalTotal) terminal entries:\n\(world.workerLogs())")
            #expect(killedAt != nil && killedAt! < terminalTotal, "the worker was killed mid-run")
            #expect(redisCrashedAt != nil && redisCrashedAt! < terminalTotal, "Redis was restarted mid-run")

            // One terminal outcome per job and per token, duplicates aside.
            let key: (StreamEntry) -> String = { entry in
                entry.id.hasPrefix("mc-") ? "\(entry.id) \(entry.fields["token"] ?? "-")" : entry.id
            }
            let problems = ledger.contractProblems(expected: expected, key: key, excluding: ["duplicate"])
            #expect(problems.isEmpty, "\(summarize(problems))")
            let known = Set(expected.keys)
            let stray = ledger.entries.filter { $0.outcome != "duplicate" && !known.contains(key($0)) }
            #expect(stray.isEmpty, "entries of nothing pushed: \(stray.prefix(5).map(\.fields))")

            // Exactly one `duplicate` per extra copy; a multicast job's copy is one entry without a token.
            let duplicateEntries = ledger.entries.filter { $0.outcome == "duplicate" }
            let duplicatesByID = Dictionary(grouping: duplicateEntries, by: \.id).mapValues(\.count)
            let wrongCounts = copies.filter { (duplicatesByID[$0.key] ?? 0) != $0.value - 1 }
            #expect(wrongCounts.isEmpty, "ids whose duplicate entries do not match their extra copies: \(wrongCounts.prefix(10))")
            #expect(duplicateEntries.count == duplicates)
            #expect(duplicateEntries.filter { $0.id.hasPrefix("mc-") }.allSatisfy { $0.fields["token"] == nil })

            // A multicast token that met a 500 was retried alone, as its own attempt 2 (one that the killed worker
            // sent first went out again as attempt 1 and met a 200).
            let retried = Dictionary(grouping: ledger.entries.filter { $0.outcome == "retrying" }, by: key)
            let retriedTokens = expected.keys.filter { $0.hasPrefix("mc-") && $0.contains(" e5") }
            let badRetries = retriedTokens.filter { k in
                let retries = retried[k]?.count ?? 0
                let attempt = ledger.entries.first { key($0) == k && $0.isTerminal }?.fields["attempt"]
                return retries > 1 || (retries == 1 && attempt != "2") || (retries == 0 && attempt != "1")
            }
            #expect(badRetries.isEmpty, "multicast tokens retried wrongly: \(badRetries.prefix(5))")
            #expect(retriedTokens.filter { retried[$0] != nil }.count > retriedTokens.count / 2, "tokens retried: \(retried.count)")
            #expect(Set(retried.keys).isSubset(of: Set(retriedTokens)), "only the tokens that needed it are retried")

            // Scheduled jobs went out no earlier than due (Redis's clock, a little tolerance for the readings).
            let terminalByKey = Dictionary(ledger.entries.filter { $0.isTerminal && $0.outcome != "duplicate" }.map { (key($0), $0) }) { a, _ in a }
            let early = deliverAt.filter { (terminalByKey[$0.key]?.millis ?? .max) < $0.value - 50 }
            #expect(early.isEmpty, "scheduled jobs sent early: \(early.count)")

            // Fallback: production refused, sandbox accepted; the entry says so (a job resent after the kill may
            // have met production's second answer, 200, and say nothing).
            let fellBack = fallbackIDs.compactMap { terminalByKey[$0] }.filter { $0.fields["fallback_from"] == "production" }
            #expect(fellBack.count > fallbackCount / 2, "fallback entries: \(fellBack.count)")
            #expect(fellBack.allSatisfy { $0.fields["environment"] == "sandbox" })

            // Nothing left behind: queue, retry set, leases of the survivor.
            let redis = try world.connectRedis()
            #expect(try redis.command(["LLEN", "herald:queue"]).int == 0)
            #expect(try redis.command(["ZCARD", "herald:retry"]).int == 0)
            #expect(try redis.command(["HLEN", "herald:leases:kinds-2"]).int == 0)
            #expect(try redis.command(["LLEN", "herald:dead"]).int == 0)

            if let survivor = world.workers["kinds-2"] {
                survivor.signal(SIGTERM)
                #expect(survivor.waitForExit(seconds: 10) == 0)
            }
            print("e2e job kinds: \(total) jobs (\(multicastJobs) multicast x \(tokensEach) tokens, \(scheduledCount) scheduled, \(fallbackCount) fallback, \(duplicates) duplicate copies) in \(String(format: "%.1f", elapsed)) s, worker killed after \(killedAt ?? 0) terminal entries, Redis after \(redisCrashedAt ?? 0); terminal \(ledger.terminalByOutcome), fallback recorded for \(fellBack.count)")
        }
    }
}

import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEnd {
    /// Four workers share a queue; one gets SIGTERM mid-run (drains, returns its leases, exits 0) and one
    /// SIGKILL (its leases expire and the others take the jobs). Every job still ends exactly once in the
    /// results; notifications the simulator accepted twice (the killed worker's unrecorded sends) are counted.
    @Suite struct WorkerSignals {
        @Test(.timeLimit(.minutes(3)))
        func sigtermAndSigkillMidRunLoseNothing() throws {
            let faults = MockFaultScript(seed: 3, latencyMs: MockLatency(min: 5, max: 20), rules: [])
            let world = try EndToEndWorld(faults: faults)
            defer { world.shutdown(); world.removeFiles() }

            let total = 20_000
            let maxInFlight = 150
            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            for i in 0..<total {
                let id = "s-\(i)"
                jobs.append(jobBytes(id: id, token: deviceToken(prefix: "00", index: i), body: "signal test \(i)"))
                expected[id] = "delivered"
            }
            try world.push(jobs)
            let config = try world.writeConfig(worker: [
                "max_in_flight": maxInFlight, "claim_batch": 50, "lease_seconds": 2, "shutdown_deadline_seconds": 5,
            ])
            let started = Date()
            for n in 1...4 { try world.startWorker(id: "sig-\(n)", config: config) }
            let terminated = world.workers["sig-1"]!
            let killed = world.workers["sig-2"]!
            let redis = try world.connectRedis()
            let ledger = ResultsLedger(redisURL: world.redisURL)

            // SIGTERM once a quarter of the jobs are claimed, SIGKILL at 40 %: both while plenty are queued. The
            // queue's length decides (the results stream is read later than a fast run writes it).
            func queued() -> Int64 { (try? redis.command(["LLEN", "herald:queue"]).int) ?? -1 }
            #expect(waitUntil(seconds: 60, interval: 0.002) { queued() <= Int64(total * 3 / 4) }, "no progress:\n\(world.workerLogs())")
            let queuedAtTerm = try redis.command(["LLEN", "herald:queue"]).int ?? 0
            let termLeases = try redis.command(["HLEN", "herald:leases:sig-1"]).int ?? 0
            terminated.signal(SIGTERM)
            let termSentAt = Date()
            #expect(waitUntil(seconds: 60, interval: 0.002) { queued() <= Int64(total * 3 / 5) }, "no progress after SIGTERM:\n\(world.workerLogs())")
            let queuedAtKill = try redis.command(["LLEN", "herald:queue"]).int ?? 0
            let killedLeases = try redis.command(["HLEN", "herald:leases:sig-2"]).int ?? 0
            killed.signal(SIGKILL)
            #expect(queuedAtTerm > 1000 && queuedAtKill > 1000, "signals must land mid-run: queue \(queuedAtTerm), \(queuedAtKill)")

            // The SIGTERMed worker exits 0 within its deadline (5 s) plus start-up slack, leaving no leases.
            let termStatus = terminated.waitForExit(seconds: 5 + 5)
            let termSeconds = Date().timeIntervalSince(termSentAt)
            #expect(termStatus == 0, "SIGTERM exit status \(String(describing: termStatus)):\n\(terminated.output.suffix(2000))")
            #expect(try redis.command(["HLEN", "herald:leases:sig-1"]).int == 0, "the drained worker left leases")
            #expect(try redis.command(["ZSCORE", "herald:workers", "sig-1"]).isNil, "the drained worker is still registered")
            #expect(terminated.output.contains("\"stopped\""), "no 'stopped' log line:\n\(terminated.output.suffix(2000))")
            #expect(killed.waitForExit(seconds: 5) != nil)

            let finished = try ledger.waitForTerminal(total, seconds: 120) {
                for id in ["sig-3", "sig-4"] where !(world.workers[id]!.isRunning) {
                    throw TestSupportError("worker \(id) exited:\n\(world.workerLogs())")
                }
            }
            let elapsed = Date().timeIntervalSince(started)
            usleep(1_500_000)
            ledger.poll()
            #expect(finished, "only \(ledger.terminalCount) of \(total) finished:\n\(world.workerLogs())")
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")
            #expect(ledger.entries.count == total, "entries other than one `delivered` per job: \(ledger.entries.count - total)")

            // The killed worker's leases were reaped; nothing is left anywhere.
            #expect(try redis.command(["HLEN", "herald:leases:sig-2"]).int == 0)
            #expect(try redis.command(["LLEN", "herald:queue"]).int == 0)
            #expect(try redis.command(["ZCARD", "herald:retry"]).int == 0)

            // Duplicates: sends the killed worker made whose results it never recorded. Counted, reported, bounded
            // by what one worker may hold in flight.
            let accepted = world.simulator.acceptedNotifications()
            let (perToken, duplicates) = duplicateDeliveries(accepted)
            #expect(perToken.count == total, "tokens delivered: \(perToken.count)")
            #expect(duplicates <= maxInFlight, "\(duplicates) duplicate deliveries > max_in_flight \(maxInFlight)")
            let byWorker = Dictionary(grouping: ledger.entries, by: { $0.fields["worker"] ?? "" }).mapValues(\.count)
            print("e2e signals: \(total) jobs, 4 workers, \(String(format: "%.1f", elapsed)) s; SIGTERM at queue \(queuedAtTerm) (worker held \(termLeases) leases, exited 0 after \(String(format: "%.2f", termSeconds)) s), SIGKILL at queue \(queuedAtKill) (worker held \(killedLeases) leases); simulator accepted \(accepted.count) for \(perToken.count) tokens: \(duplicates) duplicate deliveries (bound \(maxInFlight)); results by worker \(byWorker.sorted { $0.key < $1.key })")

            for id in ["sig-3", "sig-4"] {
                let worker = world.workers[id]!
                worker.signal(SIGTERM)
                #expect(worker.waitForExit(seconds: 10) == 0, "worker \(id) did not exit 0")
            }
        }
    

        /// SIGTERM while requests cannot finish (the simulator stays silent for some tokens): the worker waits
        /// for its shutdown deadline, returns those jobs to the queue and exits 0. A second signal exits at once
        /// (130) and leaves the leases to expire; another worker's reaper returns them. Every job ends once.
        @Test(.timeLimit(.minutes(2)))
        func shutdownDeadlineReturnsUnfinishedJobsAndSecondSignalExitsAtOnce() throws {
            let faults = MockFaultScript(seed: 4, latencyMs: MockLatency(min: 0, max: 2), rules: [
                MockFaultRule(fate: .silence, tokenPrefix: "d1"),
            ])
            let world = try EndToEndWorld(faults: faults)
            defer { world.shutdown(); world.removeFiles() }
            let normal = 200
            let silent = 40
            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            for i in 0..<(normal + silent) {
                let id = "q-\(i)"
                jobs.append(jobBytes(id: id, token: deviceToken(prefix: i < normal ? "00" : "d1", index: i)))
                expected[id] = "delivered"
            }
            try world.push(jobs)
            let config = try world.writeConfig(worker: ["lease_seconds": 2, "shutdown_deadline_seconds": 1])
            let redis = try world.connectRedis()
            let ledger = ResultsLedger(redisURL: world.redisURL)

            // Worker A delivers the normal jobs and holds the silent ones in flight.
            let a = try world.startWorker(id: "drain-a", config: config)
            #expect(try ledger.waitForTerminal(normal, seconds: 30), "\(world.workerLogs())")
            #expect(waitUntil(seconds: 10) { (try? redis.command(["HLEN", "herald:leases:drain-a"]).int) == Int64(silent) })
            a.signal(SIGTERM)
            let termAt = Date()
            let status = a.waitForExit(seconds: 1 + 5)
            let took = Date().timeIntervalSince(termAt)
            #expect(status == 0, "exit \(String(describing: status)):\n\(a.output.suffix(2000))")
            #expect(took >= 0.8, "exited after \(took) s, before its in-flight requests or deadline")
            #expect(a.output.contains("shutdown deadline reached"), "\(a.output.suffix(1500))")
            #expect(a.output.contains("returned unsent jobs to the queue") && a.output.contains("\"jobs\":\(silent)"), "\(a.output.suffix(1500))")
            #expect(try redis.command(["LLEN", "herald:queue"]).int == Int64(silent), "the unfinished jobs are back in the queue")
            #expect(try redis.command(["HLEN", "herald:leases:drain-a"]).int == 0)

            // Worker C takes them (still silent); two signals: it exits at once with 130, leases left behind. Its
            // drain deadline is long, so a slow machine (or a sanitizer) cannot reach it between the two signals.
            let longDrain = try world.writeConfig(name: "long-drain", worker: ["lease_seconds": 2, "shutdown_deadline_seconds": 5])
            let c = try world.startWorker(id: "drain-c", config: longDrain)
            #expect(waitUntil(seconds: 10) { (try? redis.command(["HLEN", "herald:leases:drain-c"]).int) == Int64(silent) }, "\(world.workerLogs())")
            // 200 ms apart: on a slow machine both can still reach the dispatch source before its handler runs,
            // as one event counting two, which must be a second signal too (seen under ThreadSanitizer).
            c.signal(SIGTERM)
            usleep(200_000)
            c.signal(SIGTERM)
            // 130 (not 0) shows it did not wait for the 5 s drain deadline with its 40 requests in flight.
            let secondStatus = c.waitForExit(seconds: 5)
            #expect(secondStatus == 130, "second signal: exit \(String(describing: secondStatus))")
            #expect(try redis.command(["HLEN", "herald:leases:drain-c"]).int == Int64(silent), "leases stay for the reaper")

            // The simulator answers again; worker B's reaper returns C's jobs once the lease ends, and B delivers them.
            try world.simulator.replaceFaults(MockFaultScript(rules: []))
            let b = try world.startWorker(id: "drain-b", config: config)
            let finished = try ledger.waitForTerminal(normal + silent, seconds: 30) {
                if !b.isRunning { throw TestSupportError("worker B exited:\n\(world.workerLogs())") }
            }
            usleep(1_000_000)
            ledger.poll()
            #expect(finished, "\(ledger.terminalCount) of \(normal + silent):\n\(world.workerLogs())")
            #expect(ledger.contractProblems(expected: expected).isEmpty, "\(summarize(ledger.contractProblems(expected: expected)))")
            #expect(ledger.entries.count == normal + silent)
            #expect(b.output.contains("returned the jobs of dead workers to the queue"))
            let (perToken, duplicates) = duplicateDeliveries(world.simulator.acceptedNotifications())
            #expect(perToken.count == normal + silent && duplicates == 0, "duplicates \(duplicates)")
            print("e2e drain: SIGTERM with \(silent) silent requests in flight exited 0 after \(String(format: "%.2f", took)) s (deadline 1 s) and returned them; second signal exited \(String(describing: secondStatus)); all \(normal + silent) delivered once, duplicates \(duplicates)")
            b.signal(SIGTERM)
            #expect(b.waitForExit(seconds: 10) == 0)
        }

        /// SIGUSR1 and SIGUSR2 (default action: terminate, no drain) are ignored: the worker keeps delivering and
        /// still drains and exits 0 on SIGTERM. It also takes --redis/--prefix over its configuration file.
        @Test(.timeLimit(.minutes(2)))
        func sigusr1AndSigusr2LeaveTheWorkerRunningAndDrainable() throws {
            let world = try EndToEndWorld()
            defer { world.shutdown(); world.removeFiles() }
            // The file names an unreachable Redis and the default prefix; the flags must win.
            let config = try world.writeConfig()
            var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: config))) as? [String: Any])
            object["redis"] = ["url": "redis://127.0.0.1:1/0"]
            try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: config))
            try world.push((0..<50).map { jobBytes(id: "u-\($0)", token: deviceToken(prefix: "00", index: $0)) }, queue: "usr:queue")
            let worker = try ChildProcess(name: "worker-usr", executable: world.herald,
                                          arguments: ["worker", "--config", config, "--id", "usr-1", "--redis", world.redisURL, "--prefix", "usr"])
            defer { worker.stop() }
            let redis = try world.connectRedis()
            #expect(waitUntil(seconds: 30) { (try? redis.command(["XLEN", "usr:results"]).int) == 50 }, "\(worker.output.suffix(2000))")

            worker.signal(SIGUSR1)
            worker.signal(SIGUSR2)
            try world.push((50..<100).map { jobBytes(id: "u-\($0)", token: deviceToken(prefix: "00", index: $0)) }, queue: "usr:queue")
            #expect(waitUntil(seconds: 30) { (try? redis.command(["XLEN", "usr:results"]).int) == 100 },
                    "running \(worker.isRunning): \(worker.output.suffix(2000))")
            #expect(worker.isRunning, "SIGUSR1/SIGUSR2 ended the worker: \(worker.output.suffix(2000))")

            worker.signal(SIGTERM)
            #expect(worker.waitForExit(seconds: 15) == 0, "\(worker.output.suffix(2000))")
            #expect(worker.output.contains("\"stopped\""), "no drain: \(worker.output.suffix(2000))")
            #expect(try redis.command(["HLEN", "usr:leases:usr-1"]).int == 0)
        }
    }
}

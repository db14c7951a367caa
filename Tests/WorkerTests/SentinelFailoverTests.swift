import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEndWaiting {
    /// Redis behind Sentinel (a master, one replica, three sentinels): the master is SIGKILLed mid-run, the
    /// sentinels promote the replica, both workers follow it by themselves, and every job still ends with
    /// exactly one terminal outcome. Asynchronous replication may lose the master's last writes; the test
    /// counts what that cost with `redis.wait_replicas` 0 (off) and 1.
    @Suite struct SentinelFailover {
        @Test(.timeLimit(.minutes(3)), arguments: [0, 1])
        func masterKilledMidRunWorkersFollowThePromotedReplica(waitReplicas: Int) throws {
            let set = try SentinelSet()
            defer { set.stop(); set.removeFiles() }
            let faults = MockFaultScript(seed: 13, latencyMs: MockLatency(min: 40, max: 60), rules: [
                MockFaultRule(fate: .unregistered, tokenPrefix: "dead"),
                MockFaultRule(fate: .failFirst, tokenPrefix: "e5", status: 500, reason: "InternalServerError", count: 1),
            ])
            let world = try EndToEndWorld(faults: faults, redis: set.master)
            defer { world.shutdown(); world.removeFiles() }

            let total = 2_000
            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            for i in 0..<total {
                let id = "s-\(i)"
                let prefix = i % 10 == 3 ? "dead" : (i % 10 == 7 ? "e5" : "00")
                jobs.append(jobBytes(id: id, token: deviceToken(prefix: prefix, index: i)))
                expected[id] = prefix == "dead" ? "token_dropped" : "delivered"
            }
            try world.push(jobs)
            // The URL's host and port lead nowhere: in sentinel mode only the sentinels say where the master is.
            let redis: [String: Any] = ["url": "redis://127.0.0.1:1/0", "mode": "sentinel", "sentinels": set.sentinelAddresses,
                                        "master_name": set.masterName, "connect_timeout_ms": 1000,
                                        "wait_replicas": waitReplicas, "wait_timeout_ms": 2000]
            // A lease (10 s) longer than the failover, so leases lapse only where replication lost a heartbeat; a
            // slow simulator (40-60 ms, 20 in flight per worker: about 800 jobs/s) so the crash lands mid-run.
            let config = try world.writeConfig(worker: ["max_in_flight": 20, "claim_batch": 10, "lease_seconds": 10],
                                               retry: ["server_error_base_seconds": 1], redis: redis)
            try world.startWorker(id: "sentinel-1", config: config)
            try world.startWorker(id: "sentinel-2", config: config)
            // The replica becomes the master: the ledger reads it all along, so it only ever holds replicated entries.
            let ledger = ResultsLedger(redisURL: set.replica.url)
            #expect(try ledger.waitForTerminal(total / 4, seconds: 60), "no progress:\n\(world.workerLogs())")

            // What the master holds the instant before it dies (written there, replicated or not).
            let master = try BlockingRedis(url: try RedisURL(parsing: set.master.url))
            let onMaster = try readStream(master, "herald:results").map(\.streamID)
            let queuedAtCrash = try master.command(["LLEN", "herald:queue"]).int ?? 0
            set.master.crash()
            let crashedAt = Date()
            #expect(set.waitForMaster(port: set.replica.port, seconds: 30), "the sentinels did not promote the replica")
            let promotedAfter = Date().timeIntervalSince(crashedAt)
            // The operator brings the old master back as a replica of the new one (empty: no persistence), as
            // Redis's docs advise, so WAIT has a replica to count again; until then `wait_replicas = 1` has none.
            // Restarted as a bare master, it once won a second failover on the loaded CI machine and the sentinels
            // made the empty node the master: the run's data was gone, which no client can prevent.
            try set.master.start(adding: ["--replicaof", "127.0.0.1", String(set.replica.port)])

            // Run until every job has its outcome, or nothing moves any more with the queue and retries empty.
            // The test's own reads of the promoted node go on a fresh connection each, tried again within a deadline:
            // the sentinels' reconfiguration may close a client connection of the test's (it once failed a fresh-clone
            // run with "connection to Redis lost"), which says nothing of the workers under test.
            let promotedURL = try RedisURL(parsing: set.replica.url)
            func onPromoted<T>(_ body: (BlockingRedis) throws -> T) throws -> T {
                let deadline = Date().addingTimeInterval(15)
                while true {
                    do { return try body(try BlockingRedis(url: promotedURL)) } catch where Date() < deadline { usleep(200_000) }
                }
            }
            var lastCount = -1
            var quietSince = Date()
            let settled = try waitUntil(seconds: 60, interval: 0.2) {
                for (id, worker) in world.workers where !worker.isRunning {
                    throw TestSupportError("worker \(id) exited after the failover:\n\(world.workerLogs())")
                }
                ledger.poll()
                if ledger.terminalCount >= total { return true }
                if ledger.terminalCount != lastCount { lastCount = ledger.terminalCount; quietSince = Date(); return false }
                let idle = (try? onPromoted { try $0.command(["LLEN", "herald:queue"]).int }) == 0
                    && (try? onPromoted { try $0.command(["ZCARD", "herald:retry"]).int }) == 0
                return idle && Date().timeIntervalSince(quietSince) > 3
            }
            #expect(settled, "the run neither finished nor settled after the failover:\n\(world.workerLogs(lastLines: 30))")
            let finishedWithoutHelp = ledger.terminalCount
            // Jobs whose completion the failover lost stay in the lease hash of a live worker (its heartbeats go on).
            var stuckLeases = 0
            for id in world.workers.keys { stuckLeases += Int(try onPromoted { try $0.command(["HLEN", "herald:leases:\(id)"]).int } ?? 0) }

            // Stopping the workers hands those leases back (retire); a fresh worker sends them again.
            for (id, worker) in world.workers {
                worker.signal(SIGTERM)
                #expect(worker.waitForExit(seconds: 15) == 0, "worker \(id) did not exit 0:\n\(world.workerLogs())")
            }
            if ledger.terminalCount < total {
                try world.startWorker(id: "sentinel-drain", config: config)
                #expect(try ledger.waitForTerminal(total, seconds: 60), "the drain did not finish:\n\(world.workerLogs())")
            }
            usleep(500_000)
            ledger.poll()

            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")
            #expect(queuedAtCrash > 200, "the crash must land mid-run: queue \(queuedAtCrash)")
            let final = Set(try onPromoted { try readStream($0, "herald:results") }.map(\.streamID))
            let lostResults = onMaster.filter { !final.contains($0) }.count
            let (_, duplicates) = duplicateDeliveries(world.simulator.acceptedNotifications())
            let logs = world.workers.values.map(\.output)
            let leasesLost = logs.map { $0.components(separatedBy: "lease lost").count - 1 }.reduce(0, +)
            let shortfalls = logs.map { $0.components(separatedBy: "replicas did not confirm").count - 1 }.reduce(0, +)
            for (id, worker) in world.workers where id != "sentinel-drain" {
                #expect(worker.output.contains("+switch-master") || worker.output.contains("redis connection lost"), "worker \(id) did not notice the failover")
                #expect(worker.output.contains("\"master\":\"127.0.0.1:\(set.replica.port)\""), "worker \(id) did not connect to the promoted replica")
            }
            if waitReplicas > 0 {
                // Every write a worker counted was on the replica: nothing waits for a drain, nothing is sent twice
                // for a lost write (a lease that lapsed could still be, but leases outlast this failover).
                #expect(finishedWithoutHelp == total, "\(total - finishedWithoutHelp) jobs needed the drain with WAIT on")
                #expect(stuckLeases == 0)
            }
            print("e2e sentinel failover (wait_replicas \(waitReplicas)): \(total) jobs, 2 workers; killed with \(queuedAtCrash) queued and \(onMaster.count) results on the master; replica promoted after \(String(format: "%.1f", promotedAfter)) s; results on the master lost with it \(lostResults); jobs left without an outcome until a drain \(total - finishedWithoutHelp) (stuck leases \(stuckLeases)); simulator re-sends \(duplicates); lease-lost warnings \(leasesLost); WAIT shortfall warnings \(shortfalls); outcome twice or wrong \(problems.count)")
        }
    }
}

import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing
import Worker

extension EndToEndWaiting {
    /// Herald sharded over a real Redis Cluster (3 masters, 3 replicas on loopback): 20,000 jobs of mixed fate
    /// over 3 shards, each on its own master, through 2 worker processes, with a manual `CLUSTER FAILOVER` on
    /// one shard's replica and a SIGKILLed master of another during the run. Every job ends with exactly one
    /// terminal outcome; what asynchronous replication lost (terminal entries seen, then gone with the killed
    /// master, and the jobs redone because of it) is counted and must be explained by that kill alone.
    @Suite struct ClusterFailover {
        struct Fate {
            let prefix: String
            let count: Int
            let outcome: String
        }

        static let fates: [Fate] = [
            Fate(prefix: "dead", count: 1000, outcome: "token_dropped"),
            Fate(prefix: "5a", count: 800, outcome: "token_dropped"),
            Fate(prefix: "bad0", count: 400, outcome: "failed"),
            Fate(prefix: "77", count: 800, outcome: "delivered"),
            Fate(prefix: "e5", count: 800, outcome: "delivered"),
            Fate(prefix: "e6", count: 200, outcome: "failed"),
            Fate(prefix: "00", count: 16_000, outcome: "delivered"),
        ]

        /// Shard prefixes `{herald:<i>}` whose slots land on three different masters.
        static func prefixesOnDistinctMasters(_ cluster: RedisClusterFixture) throws -> (prefixes: [String], masters: [Int]) {
            var prefixes: [String] = []
            var masters: [Int] = []
            for i in 0..<200 where prefixes.count < 3 {
                let prefix = "{herald:\(i)}"
                guard let owner = try cluster.ownerPort(ofSlot: ClusterSlot.of(prefix)), !masters.contains(owner) else { continue }
                prefixes.append(prefix)
                masters.append(owner)
            }
            guard prefixes.count == 3 else { throw TestSupportError("no three hash tags on three masters: \(masters)") }
            return (prefixes, masters)
        }

        @Test(.timeLimit(.minutes(3)))
        func twentyThousandJobsOverThreeShardsEndOnceThroughAFailoverAndAKilledMaster() throws {
            let cluster = try RedisClusterFixture(masters: 3, replicasPerMaster: 1, nodeTimeoutMilliseconds: 1000)
            defer { cluster.stop() }
            // The fates of the mixed-fate run, in proportion: every kind of outcome, retries included.
            let faults = MockFaultScript(seed: 13, latencyMs: MockLatency(min: 0, max: 2), rules: EndToEnd.MixedFate.faultRules)
            let world = try EndToEndWorld(faults: faults)
            defer { world.shutdown(); world.removeFiles() }

            let (prefixes, masters) = try Self.prefixesOnDistinctMasters(cluster)
            var settings = Configuration.RedisSettings()
            settings.mode = .cluster
            settings.url = cluster.seedURL
            settings.clusterNodes = cluster.ports.dropFirst().map { "127.0.0.1:\($0)" }
            settings.shardPrefixes = prefixes
            let shards = try settings.queueShards()
            let connect = { () throws -> any BlockingRedisCommands in
                try settings.makeBlockingClient(connectTimeoutMilliseconds: 500, commandTimeoutMilliseconds: 5000)
            }

            var jobs: [[[UInt8]]] = []
            var expected: [String: String] = [:]
            var index = 0
            for fate in Self.fates {
                for _ in 0..<fate.count {
                    let id = "c-\(index)"
                    let queue = shards.shards[shards.shard(forJobID: id)].queues[0]
                    jobs.append([Array("LPUSH".utf8), Array(queue.utf8), jobBytes(id: id, token: deviceToken(prefix: fate.prefix, index: index))])
                    expected[id] = fate.outcome
                    index += 1
                }
            }
            let total = jobs.count
            let producer = try connect()
            for start in stride(from: 0, to: total, by: 1000) {
                let replies = try producer.pipeline(rawCommands: Array(jobs[start..<min(total, start + 1000)]))
                #expect(replies.allSatisfy { $0.errorMessage == nil })
            }
            let perShard = try shards.shards.map { Int(try producer.command(["LLEN", $0.queues[0]]).int ?? 0) }
            producer.close()
            #expect(perShard.reduce(0, +) == total && perShard.allSatisfy { $0 > total / 4 }, "spread over the shards: \(perShard)")

            let redis: [String: Any] = ["url": cluster.seedURL, "mode": "cluster", "cluster_nodes": settings.clusterNodes, "shard_prefixes": prefixes]
            let patient: [String: Any] = ["request_timeout_ms": 60_000]
            let config = try world.writeConfig(worker: ["max_in_flight": 500, "claim_batch": 100, "lease_seconds": 10],
                                               retry: ["max_attempts": 2], apns: patient, redis: redis)
            let started = Date()
            try world.startWorker(id: "cl-1", config: config)
            try world.startWorker(id: "cl-2", config: config)
            let ledger = ResultsLedger(streams: shards.shards.map(\.keys.results), connect: connect)
            let alive = {
                for (id, worker) in world.workers where !worker.isRunning {
                    throw TestSupportError("worker \(id) exited:\n\(world.workerLogs())")
                }
            }

            // A manual failover of shard 0's master: the replica catches up before it takes over.
            #expect(try ledger.waitForTerminal(total / 4, seconds: 60, check: alive), "no progress:\n\(world.workerLogs())")
            let failedOverReplica = try #require(try cluster.replicaPorts(of: masters[0]).first)
            try cluster.failover(replicaPort: failedOverReplica)
            let failoverAt = ledger.terminalCount

            // Shard 1's master SIGKILLed: its replica is promoted after the node timeout, without what it had
            // not yet received.
            #expect(try ledger.waitForTerminal(total / 2, seconds: 60, check: alive), "no progress after the failover:\n\(world.workerLogs())")
            let killed = masters[1]
            cluster.kill(port: killed)
            let killedAt = ledger.terminalCount
            #expect(cluster.waitUntilHealthy(seconds: 30), "the cluster did not recover from the killed master")

            let seenAll = try ledger.waitForTerminal(total, seconds: 120, check: alive)
            #expect(seenAll, "only \(ledger.terminalCount) of \(total) seen:\n\(world.workerLogs(lastLines: 30))")
            // Leases whose completion the killed master lost came back with its replica: each worker holds them
            // (its heartbeat keeps the reaper away) until it retires on SIGTERM and returns them to the queue.
            usleep(1_000_000)
            for (id, worker) in world.workers {
                worker.signal(SIGTERM)
                #expect(worker.waitForExit(seconds: 20) == 0, "worker \(id) did not exit 0:\n\(world.workerLogs())")
            }
            let client = try connect()
            defer { client.close() }
            func backlog() throws -> Int {
                try shards.shards.reduce(0) { sum, shard in
                    sum + Int(try client.command(["LLEN", shard.queues[0]]).int ?? 0) + Int(try client.command(["ZCARD", shard.keys.retry]).int ?? 0)
                }
            }
            let resurrected = try backlog()
            if resurrected > 0 {
                // One more worker finishes what came back.
                try world.startWorker(id: "cl-sweep", config: config)
                #expect(waitUntil(seconds: 60) { ((try? backlog()) ?? 1) == 0 }, "the returned jobs were not finished:\n\(world.workerLogs())")
                usleep(500_000)
                world.workers["cl-sweep"]?.signal(SIGTERM)
                _ = world.workers["cl-sweep"]?.waitForExit(seconds: 20)
            }
            let elapsed = Date().timeIntervalSince(started)
            ledger.poll()

            // What Redis holds at the end: exactly one terminal outcome per job, the one its fate gives.
            let final = ResultsLedger(streams: ledger.streams, connect: connect)
            #expect(final.poll(), "the final streams could not be read")
            let problems = final.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")
            for shard in shards.shards {
                #expect(try client.command(["HLEN", shard.keys.leases(worker: "cl-1")]).int == 0)
                #expect(try client.command(["HLEN", shard.keys.leases(worker: "cl-2")]).int == 0)
            }

            // What replication lost: entries the ledger read that the final streams no longer hold. An entry is its
            // stream id and its job id together: the promoted replica's stream restarts from its own last id, so a
            // new entry can take the id of one that was lost (seen once in CI: 195 redone jobs looked kept).
            let kept = Set(final.entries.map { "\($0.streamID) \($0.id)" })
            var lostByShard = [0, 0, 0]
            var lostTerminalIDs = Set<String>()
            for (entry, shard) in zip(ledger.entries, ledger.streamOfEntry) where !kept.contains("\(entry.streamID) \(entry.id)") {
                lostByShard[shard] += 1
                if entry.isTerminal { lostTerminalIDs.insert(entry.id) }
            }
            let terminalsSeen = Dictionary(grouping: ledger.entries.filter(\.isTerminal), by: \.id)
            let seenTwice = Set(terminalsSeen.filter { $0.value.count > 1 }.keys)
            let neverSeen = expected.keys.filter { terminalsSeen[$0] == nil }.count
            #expect(lostByShard[0] == 0 && lostByShard[2] == 0, "only the killed master's shard may lose writes: \(lostByShard)")
            #expect(seenTwice.isSubset(of: lostTerminalIDs), "a job seen twice whose first outcome was not lost: \(seenTwice.subtracting(lostTerminalIDs).prefix(5))")
            #expect(neverSeen == 0)
            let noticed = world.workers.values.filter { $0.output.contains("redis connection lost") && $0.output.contains(":\(killed)") }.count
            #expect(noticed >= 1, "no worker saw the killed master's connection go:\n\(world.workerLogs())")
            let leasesLost = world.workers.values.map { $0.output.components(separatedBy: "lease lost").count - 1 }.reduce(0, +)
            let (_, duplicates) = duplicateDeliveries(world.simulator.acceptedNotifications())
            print("e2e cluster (3 masters + 3 replicas, 3 shards \(prefixes) on masters \(masters), 2 workers): \(total) jobs \(perShard) in \(String(format: "%.1f", elapsed)) s; manual failover of \(masters[0]) to \(failedOverReplica) after \(failoverAt) terminal entries lost \(lostByShard[0]) entries; SIGKILL of master \(killed) after \(killedAt) lost \(lostByShard[1]) entries (\(lostTerminalIDs.count) terminal), \(resurrected) jobs came back to the queues and were redone, \(seenTwice.count) jobs seen with two terminal entries (the first lost), \(neverSeen) never seen; final streams: one terminal per job, \(final.terminalByOutcome); \(noticed) workers logged the lost master, lease-lost warnings \(leasesLost), simulator duplicates \(duplicates)")
        }
    }
}

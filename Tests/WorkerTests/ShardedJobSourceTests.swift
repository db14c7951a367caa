import Basics
import Dispatch
import Glibc
import HeraldProviders
import HeraldTestSupport
import Reactor
import RedisQueue
import Testing
@testable import Worker

/// The worker's source over several shards on one real Redis (all shards on one server is a valid layout):
/// what each claim takes and from where, where completions land, and what goes back on shutdown.
@Suite(.serialized) struct ShardedJobSourceTests {
    /// Holds loop-confined objects for a test thread that only hands them to the loop.
    final class Held<T>: @unchecked Sendable {
        var value: T
        init(_ value: T) { self.value = value }
    }

    struct Rig {
        let loop: EventLoop
        let source: Held<RedisJobSource?>
        let redis: any BlockingRedisCommands
        let shards: QueueShards

        /// Runs `body` on the loop and waits until it calls back.
        func call<T: Sendable>(_ body: @escaping (RedisJobSource, @escaping (T) -> Void) -> Void) throws -> T {
            let answer = LockedValue<T?>(nil)
            let work = Held(body)
            let source = self.source
            try loop.submit {
                work.value(source.value!) { value in answer.withLock { $0 = value } }
            }
            guard let answered = answer.wait(until: { $0 != nil }, timeoutSeconds: 20, then: { $0 }), let value = answered else {
                throw TestSupportError("no answer from the source within 20 s")
            }
            return value
        }

        func claim(_ max: Int) throws -> [Lease] {
            let result: Result<[Lease], JobSourceFailure> = try call { source, done in source.claim(max: max) { done($0) } }
            return try result.get()
        }

        func push(shard: Int, _ count: Int, tag: String) throws {
            let jobs = (0..<count).map { #"{"id":"\#(tag)-\#($0)","token":"t","payload":{}}"# }
            _ = try redis.command(["LPUSH", shards.shards[shard].queues[0]] + jobs)
        }

        func length(_ key: String, _ command: String = "LLEN") throws -> Int { Int(try redis.command([command, key]).int ?? -1) }

        func stop() {
            let source = self.source
            try? loop.submit { source.value?.close(); source.value = nil }
            loop.stop()
            _ = loop.waitUntilStopped()
            redis.close()
        }
    }

    static func rig(shards count: Int) throws -> (Rig, RedisServer?) {
        let server = sharedRedisURL == nil ? try RedisServer() : nil
        var configuration = Configuration()
        configuration.redis.url = sharedRedisURL ?? server!.url
        configuration.redis.prefix = "sh\(UInt32.random(in: 0...UInt32.max))"
        configuration.redis.shards = count
        configuration.worker.runScheduler = false
        configuration.worker.runReaper = false
        let loop = try EventLoop.startThread(name: "shards-test")
        let held = Held<RedisJobSource?>(nil)
        let frozen = configuration
        try loop.submit {
            held.value = try RedisJobSource(configuration: frozen, loop: loop, workerID: "w1", logger: Logger(component: "test", minimumLevel: .error))
            held.value!.open()
        }
        let redis = try configuration.redis.makeBlockingClient()
        return (Rig(loop: loop, source: held, redis: redis, shards: try configuration.redis.queueShards()), server)
    }

    @Test(.timeLimit(.minutes(1)))
    func claimsReachTheShardWithJobsPastEmptyOnesAndStartOneShardFurtherEachTime() throws {
        let (rig, server) = try Self.rig(shards: 3)
        defer { rig.stop(); server?.stop() }
        try rig.push(shard: 2, 5, tag: "late")
        let first = try rig.claim(10)
        #expect(first.count == 5, "shards 0 and 1 are empty: one claim goes on to shard 2")
        #expect(Set(first.map(\.queueKey)) == [rig.shards.shards[2].queues[0]])

        for shard in 0..<3 { try rig.push(shard: shard, 6, tag: "s\(shard)") }
        usleep(50_000)  // past the 2 ms rest of the shards that answered empty
        var order: [Int] = []
        for _ in 0..<6 {
            let leases = try rig.claim(2)
            #expect(leases.count == 2)
            order.append(try #require(rig.shards.shardIndex(ofQueue: leases[0].queueKey)))
        }
        #expect(order.count == 6 && Set(order.prefix(3)) == [0, 1, 2] && Set(order.suffix(3)) == [0, 1, 2],
                "every shard is visited in turn: \(order)")
    }

    @Test(.timeLimit(.minutes(1)))
    func aMixedBatchIsRecordedInTheShardEachLeaseCameFromAndReturnAllEmptiesEveryShard() throws {
        let (rig, server) = try Self.rig(shards: 3)
        defer { rig.stop(); server?.stop() }
        for shard in 0..<3 { try rig.push(shard: shard, 4, tag: "j\(shard)") }
        var leases: [Lease] = []
        for _ in 0..<3 { leases += try rig.claim(3) }
        #expect(leases.count == 9)
        #expect(Set(leases.map(\.id)).count == 9, "lease ids are unique across shards")
        let batch = leases.map { lease in
            JobCompletion(lease: lease, result: ResultEntry(id: String(decoding: lease.job, as: UTF8.self), outcome: .delivered, worker: "w1"))
        }
        let report: Result<CompletionReport, JobSourceFailure> = try rig.call { source, done in source.record(batch, isRepeat: false) { done($0) } }
        #expect(try report.get().applied == 9)
        for shard in rig.shards.shards {
            #expect(try rig.length(shard.keys.results, "XLEN") == 3, "three results in \(shard.keys.prefix)")
            #expect(try rig.length(shard.keys.leases(worker: "w1"), "HLEN") == 0)
            #expect(try rig.length(shard.queues[0]) == 1)
        }
        let held = try rig.claim(3) + rig.claim(3) + rig.claim(3)
        #expect(held.count == 3)
        let returned: Result<Int, JobSourceFailure> = try rig.call { source, done in source.returnAll { done($0) } }
        #expect(try returned.get() == 3)
        #expect(try rig.shards.shards.map { try rig.length($0.queues[0]) } == [1, 1, 1])
    }

    /// Shard 0 on a Redis that is not there (its commands time out unanswered), shard 1 on the real one: claims
    /// still come from shard 1, and only a source whose every shard failed reports the failure.
    @Test(.timeLimit(.minutes(1)))
    func anUnreachableShardNeitherStallsNorHidesTheOthersJobs() throws {
        let server = sharedRedisURL == nil ? try RedisServer() : nil
        defer { server?.stop() }
        let live = try RedisURL(parsing: sharedRedisURL ?? server!.url)
        let dead = RedisURL(endpoint: .tcp(host: "127.0.0.1", port: freeLoopbackPort()))
        let shards = try QueueShards(basePrefix: "dz\(UInt32.random(in: 0...UInt32.max))", prefixes: ["{dz:a}", "{dz:b}"].map { "\($0)\(UInt32.random(in: 0...UInt32.max))" })
        let redis = try BlockingRedis(url: live)
        defer { redis.close() }
        _ = try redis.command(["LPUSH", shards.shards[1].queues[0]] + (0..<4).map { #"{"id":"j\#($0)","token":"t","payload":{}}"# })
        let loop = try EventLoop.startThread(name: "shards-dead")
        defer { loop.stop(); _ = loop.waitUntilStopped() }
        let outcomes = LockedValue<[String]>([])
        try loop.submit {
            var options = RedisConnection.Options()
            options.connectTimeoutMilliseconds = 200
            options.commandTimeoutMilliseconds = 300
            let connections = [RedisConnection(url: dead, loop: loop, options: options), RedisConnection(url: live, loop: loop, options: options)]
            for connection in connections { connection.start() }
            let queues = try zip(shards.shards, connections).map { shard, connection in
                try JobQueue(connection: connection, keys: shard.keys, workerID: "w", queueKeys: shard.queues)
            }
            let both = ShardedJobSource(queues: queues, loop: loop, settings: Configuration.WorkerSettings(), logger: Logger(component: "test", minimumLevel: .error))
            let onlyDead = ShardedJobSource(queues: [queues[0]], loop: loop, settings: Configuration.WorkerSettings(), logger: Logger(component: "test", minimumLevel: .error))
            func note(_ text: String) { outcomes.withLock { $0.append(text) } }
            both.claim(max: 2) { first in
                note("first: \((try? first.get())?.count ?? -1)")
                // Shard 0 rests after its failure: the next claim goes straight to shard 1, sending shard 0 nothing.
                let failedBefore = connections[0].stats.errors
                both.claim(max: 2) { second in
                    note("second: \((try? second.get())?.count ?? -1), shard 0 failures \(failedBefore) -> \(connections[0].stats.errors)")
                    onlyDead.claim(max: 2) { alone in
                        if case .failure(let failure) = alone { note("alone failed: \(failure.description)") } else { note("alone answered") }
                        for connection in connections { connection.close() }
                        _ = both
                    }
                }
            }
        }
        let seen = try #require(outcomes.wait(until: { $0.count == 3 }, timeoutSeconds: 20, then: { $0 }))
        #expect(seen[0] == "first: 2", "\(seen)")
        #expect(seen[1] == "second: 2, shard 0 failures 1 -> 1", "the failed shard is passed over, not asked again: \(seen)")
        #expect(seen[2].hasPrefix("alone failed"), "\(seen)")
    }

    /// With shards each shard's budget is its share (the interval times the shard count), and it keeps its
    /// calendar: a backlog to one device is reserved in the app's calendar, so the app's jobs to other devices wait
    /// for the app's spacing only, not behind the backlog.
    @Test(.timeLimit(.minutes(1)))
    func aShardsShareOfAnAppBudgetKeepsItsCalendarSoABusyDeviceHoldsNoOtherDevice() throws {
        let (rig, server) = try Self.rig(shards: 2)
        defer { rig.stop(); server?.stop() }
        try rig.push(shard: 0, 25, tag: "b")
        var leases: [Lease] = []
        while leases.count < 25 {
            let claimed = try rig.claim(25 - leases.count)
            #expect(!claimed.isEmpty)
            leases += claimed
        }
        let app = BudgetLimit(name: "app:shop:s", intervalMicros: 5_000, calendar: true)
        let busy = BudgetLimit(name: "device:busy:s", intervalMicros: 500_000)
        let jobs = leases.enumerated().map { index, lease in
            (lease: lease, limits: [index < 20 ? busy : BudgetLimit(name: "device:d\(index):s", intervalMicros: 500_000), app])
        }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let started = Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
        let answer: Result<[BudgetVerdict], JobSourceFailure> = try rig.call { source, done in source.checkBudgets(jobs) { done($0) } }
        let verdicts = try answer.get()
        let backlog = verdicts.prefix(20).compactMap { if case .held(let at, 0) = $0 { at } else { nil } }
        #expect(verdicts[0] == .allowed)
        #expect(backlog.count == 19, "the busy device's budget holds its backlog: \(verdicts)")
        #expect(zip(backlog, backlog.dropFirst()).allSatisfy { $1 - $0 == 1_000 }, "two shards: each keeps 500 ms x 2 \(backlog)")
        let others = verdicts.suffix(5).compactMap { if case .held(let at, 1) = $0 { at } else { nil } }
        #expect(others.count == 5, "the app's spacing holds the other devices: \(verdicts)")
        #expect(others.allSatisfy { $0 - started < 2_000 }, "not behind the backlog's 19 s: \(others.map { $0 - started })")
        #expect(zip(others, others.dropFirst()).allSatisfy { $1 - $0 == 10 }, "the app's 5 ms x 2: \(others)")
    }

    @Test func aShardThatAnsweredEmptyRestsLongerEachTimeUntilItHandsOutJobs() {
        var pause = ShardPause()
        let now: UInt64 = 1_000_000_000
        pause.answered(claimed: 0, now: now)
        let first = pause.notBefore - now
        pause.answered(claimed: 0, now: now)
        let second = pause.notBefore - now
        #expect(first == 2_000_000 && second == 4_000_000)
        for _ in 0..<20 { pause.answered(claimed: 0, now: now) }
        #expect(pause.notBefore - now == 200_000_000, "capped at 200 ms")
        pause.answered(claimed: 3, now: now)
        #expect(pause.notBefore == 0)
    }

    @Test func configurationNamesShardsOrTheirPrefixesAndMapsQueuesAndPoliciesIntoEach() throws {
        func load(_ redis: String, retry: String = "") throws -> Configuration {
            let path = makeTemporaryDirectory("herald-shards") + "/herald.json"
            let json = #"{"redis":{\#(redis)},\#(retry)"apps":[{"name":"shop","bundle_id":"com.example.shop","token":{"team_id":"ABCDE12345","key_id":"KEY1234567","key_file":"k.p8"}}]}"#
            try json.write(toFile: path, atomically: true, encoding: .utf8)
            return try ConfigurationLoader.load(path: path, environment: [:])
        }
        let plain = try load(#""url":"redis://127.0.0.1:6379/0""#)
        #expect(try plain.redis.queueShards().shards.map(\.keys.queue) == ["herald:queue"], "the default is today's keys")
        let three = try load(#""shards":3,"queues":["herald:queue:urgent","herald:queue"]"#,
                             retry: #""retry":{"queues":{"herald:queue:urgent":{"max_attempts":2}}},"#)
        #expect(try three.redis.queueShards().shards.map(\.queues[0]) == ["{herald:0}:queue:urgent", "{herald:1}:queue:urgent", "{herald:2}:queue:urgent"])
        #expect(three.retry(forQueue: "herald:queue:urgent").maxAttempts == 2)
        #expect(DeliverySettings(configuration: three, workerID: "w").queueRetry["{herald:1}:queue:urgent"]?.maxAttempts == 2,
                "a shard's copy of a queue keeps the queue's retry policy")
        let clustered = try load(#""mode":"cluster","url":"redis://10.0.0.1:7000","shards":3"#)
        #expect(try clustered.redis.queueShards().count == 3, "numbered shards are hash tags: a plain prefix is fine in cluster mode")
        #expect {
            _ = try load(#""mode":"cluster","url":"redis://10.0.0.1:7000","shard_prefixes":["ha","hb"]"#)
        } throws: { ($0 as? ConfigurationError)?.problems.contains { $0.contains("redis.shard_prefixes") && $0.contains("hash tag") } == true }
        let named = try load(#""shard_prefixes":["{hx}","{hy}"]"#)
        #expect(try named.redis.queueShards().shards.map(\.keys.queue) == ["{hx}:queue", "{hy}:queue"])
        for (bad, problem) in [(#""shards":0"#, "redis.shards must be 1"), (#""shards":3,"shard_prefixes":["{a}","{b}"]"#, "names 2"),
                               (#""shards":2,"queues":["legacy"]"#, "not under the prefix"), (#""shard_prefixes":["{a}","{a}"]"#, "given twice")] {
            #expect {
                _ = try load(bad)
            } throws: { ($0 as? ConfigurationError)?.problems.contains { $0.contains(problem) } == true }
        }
    }
}

import Foundation
import Glibc
import HeraldTestSupport
import Reactor
import Testing
@testable import RedisQueue

@Suite struct CrashTests {
    /// A "worker" process runs the very claim script with redis-cli, then is SIGKILLed holding its leases.
    @Test func workerKilledMidBatchLosesNothing() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let jobs = (0..<300).map { "k\($0)" }
        try push(redis, key: keys.queue, jobs: jobs)
        guard case .tcp(let host, let port) = TestRedis.url.endpoint else { Issue.record("needs TCP"); return }
        let child = try ChildProcess(name: "claimer", executable: "/bin/sh", arguments: [
            "-c", #"redis-cli -h "$1" -p "$2" -n "$3" EVAL "$0" 5 "$4" "$5" "$6" "$7" "$8" killed 400 120 1. e1 >/dev/null; exec sleep 30"#,
            QueueScripts.claim.source, host, "\(port)", "\(TestRedis.url.database)",
            keys.workers, keys.leases(worker: "killed"), keys.epoch, keys.paused, keys.queue])
        defer { child.signal(SIGKILL); _ = child.waitForExit(seconds: 10) }
        #expect(try waitUntil(seconds: 10) { try redis.command(["HLEN", keys.leases(worker: "killed")]).int == 120 })
        child.signal(SIGKILL)
        #expect(child.waitForExit(seconds: 10) != nil)
        #expect(child.process.terminationReason == .uncaughtSignal)

        let survivor = try BlockingJobQueue(redis: try TestRedis.blocking(), keys: keys, workerID: "survivor")
        let finished = try waitUntil(seconds: 20) {
            try survivor.reap()
            let leases = try survivor.claim(max: 64)
            _ = try survivor.complete(delivered(leases, worker: "survivor"))
            return try redis.command(["XLEN", keys.results]).int == 300
        }
        #expect(finished)
        let counts = try resultCounts(redis, keys)
        #expect(Set(counts.keys) == Set(jobs) && counts.values.allSatisfy { $0 == 1 })
        #expect(try redis.command(["EXISTS", keys.leases(worker: "killed")]).int == 0)
    }

    /// Redis is SIGKILLed mid-run (AOF, fsync always) and restarted; the worker reconnects by itself, scripts are
    /// re-sent after NOSCRIPT, and every job ends with exactly one result.
    @Test func redisRestartMidRunLosesNothingAcknowledged() throws {
        let server = try RedisServer(appendOnly: true)
        defer { server.stop() }
        let keys = TestRedis.keys()
        let admin = try BlockingRedis(url: server.redisURL)
        let total = 4_000
        let jobs = (0..<total).map { "r\($0)" }
        try push(admin, key: keys.queue, jobs: jobs)

        let harness = try LoopHarness()
        defer { harness.stop() }
        let stateLog = Box<[String]>([])
        let running = Box<Bool>(true)
        let lost = Box<Int>(0)
        try harness.loop.submit {
            var options = RedisConnection.Options()
            options.commandTimeoutMilliseconds = 2_000
            let connection = RedisConnection(url: server.redisURL, loop: harness.loop, options: options)
            connection.onStateChange = { state in
                switch state {
                case .connected: stateLog.value.append("up")
                case .disconnected: if stateLog.value.last != "down" { stateLog.value.append("down") }
                default: break
                }
            }
            connection.start()
            var queueOptions = JobQueueOptions()
            queueOptions.leaseMilliseconds = 5_000
            let queue = try JobQueue(connection: KeyCheckedSender(connection), keys: keys, workerID: "w1", options: queueOptions)
            func complete(_ batch: [JobCompletion]) {
                queue.complete(batch) { result in
                    switch result {
                    case .success(let report): lost.value += report.leasesLost.count
                    case .failure: harness.loop.schedule(afterMilliseconds: 20) { complete(batch) }
                    }
                }
            }
            func step() {
                guard running.value else { return }
                queue.claim(max: 20) { result in
                    switch result {
                    case .success(let leases) where !leases.isEmpty:
                        complete(delivered(leases, worker: "w1"))
                        step()
                    default:
                        harness.loop.schedule(afterMilliseconds: 10) { step() }
                    }
                }
            }
            queue.startHeartbeats(intervalMilliseconds: 300)
            step()
            step()
        }
        defer { try? harness.loop.submit { running.value = false } }
        #expect(try waitUntil(seconds: 10) { try admin.command(["ZSCORE", keys.workers, "w1"]).int ?? 0 > 0 })
        #expect(try waitUntil(seconds: 30) { try admin.command(["XLEN", keys.results]).int ?? 0 >= 800 })
        let resultsBeforeKill = try admin.command(["XLEN", keys.results]).int ?? 0
        server.crash()
        #expect(resultsBeforeKill < Int64(total), "Redis went away mid-run")
        usleep(300_000)
        try server.start()
        let check = try BlockingRedis(url: server.redisURL)
        let done = try waitUntil(seconds: 60) {
            let replies = try check.pipeline([["XLEN", keys.results], ["LLEN", keys.queue], ["HLEN", keys.leases(worker: "w1")]])
            return replies.map { $0.int ?? -1 } == [Int64(total), 0, 0]
        }
        #expect(done)
        try harness.loop.submit { running.value = false }
        let counts = try resultCounts(check, keys)
        #expect(counts.count == total && Set(counts.keys) == Set(jobs))
        #expect(counts.values.allSatisfy { $0 == 1 })
        let log = try harness.loop.submit { stateLog.value }
        #expect(log.starts(with: ["up", "down", "up"]), "\(log)")
    }
}

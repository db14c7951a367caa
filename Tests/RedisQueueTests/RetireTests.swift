import Foundation
import HeraldTestSupport
import Reactor
import RedisClient
import RedisQueue
import Testing

/// A retire is the last word of a worker on shutdown: nothing it sends afterwards may put its entry back.
@Suite struct RetireTests {
    /// Heartbeats every 10 ms, then a retire: 200 ms later (twenty heartbeat intervals) the worker is still gone
    /// from `<p>:workers`, which a heartbeat sent after the retire would have undone.
    @Test func aRetiredWorkersHeartbeatsStopSoItsEntryStaysGone() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let keys = TestRedis.keys()
        let admin = try BlockingRedis(url: server.redisURL)
        let harness = try LoopHarness()
        defer { harness.stop() }
        let retired = Box<Bool>(false)
        let kept = Box<JobQueue?>(nil)
        defer { try? harness.loop.submit { kept.value = nil } }
        try harness.loop.submit {
            let connection = RedisConnection(url: server.redisURL, loop: harness.loop)
            connection.start()
            let queue = try JobQueue(connection: KeyCheckedSender(connection), keys: keys, workerID: "w1", options: JobQueueOptions())
            kept.value = queue
            queue.startHeartbeats(intervalMilliseconds: 10)
            harness.loop.schedule(afterMilliseconds: 100) {
                queue.retire { _ in retired.value = true }
            }
        }
        // The flag is the loop's: read on it.
        #expect(waitUntil(seconds: 10) { (try? harness.loop.submit { retired.value }) ?? false })
        usleep(200_000)
        #expect(try admin.command(["ZSCORE", keys.workers, "w1"]).isNil, "a heartbeat after the retire registered the worker again")
    }
}

import HeraldTestSupport
import RedisQueue
import Testing
@testable import Worker

/// What the dashboard and the worker's queue gauges read from Redis.
@Suite struct QueueOverviewTests {
    /// Issue 54: while a purge or requeue pass runs, the letters it has not looked at yet sit in `dead:sweep`; they
    /// are still dead letters, and `herald_dead_letters` and the dashboard count them.
    @Test func deadLettersIncludeThoseAPassHasNotLookedAtYet() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let redis = try BlockingRedis(url: server.redisURL)
        let keys = try QueueKeys(prefix: "overview")
        for letter in ["old-1", "old-2", "old-3"] { _ = try redis.command(["LPUSH", keys.deadSweep, letter]) }
        _ = try redis.command(["LPUSH", keys.dead, "new-1"])
        let overview = try QueueOverview.read(redis: redis, keys: keys, queues: [keys.queue], leaseMilliseconds: 30_000)
        #expect(overview.deadLetters == 4)
    }
}

import Foundation
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

    /// Tickets waiting for receipts: how many, how many are due, and how long the earliest due one has waited for
    /// its ask (`HeraldReceiptsOverdue`'s measure).
    @Test func receiptsWaitingDueAndTheirLagAreRead() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let redis = try BlockingRedis(url: server.redisURL)
        let keys = try QueueKeys(prefix: "overview")
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        _ = try redis.command(["ZADD", keys.receipts, String(now - 120_000), "expo:a", String(now - 1000), "expo:b", String(now + 600_000), "expo:c"])
        let overview = try QueueOverview.read(redis: redis, keys: keys, queues: [keys.queue], leaseMilliseconds: 30_000)
        #expect(overview.receiptsWaiting == 3 && overview.receiptsDue == 2)
        var text = PrometheusText()
        overview.write(to: &text)
        let lag = text.text.split(separator: "\n").first { $0.hasPrefix("herald_receipts_overdue_seconds ") }.flatMap { Double($0.split(separator: " ")[1]) }
        #expect((119...125).contains(lag ?? 0), "\(lag as Any)")
    }
}

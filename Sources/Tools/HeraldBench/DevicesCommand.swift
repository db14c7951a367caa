import Basics
import DeviceRegistry
import Foundation
import PushCore
import Reactor
import RedisQueue

/// Fills the device registry with the APNs devices of the benchmark's jobs (`BenchJobs.token`, so `fill`'s jobs go to
/// registered devices) and measures what it costs Redis: registrations a second (pipelined), memory a device, and
/// with `--sweep` what a sweep costs with nothing due and with every device due to go stale.
enum DevicesCommand {
    static let command = Command(
        bench: "devices", abstract: "Register benchmark devices; measure memory per device and the sweeper's Redis CPU.",
        options: [
            .value("redis", "url", "Redis URL (required)."),
            .value("prefix", "p", "Key prefix (default herald)."),
            .value("app", "name", "The devices' app (default bench, the app of scripts/callgrind-worker's configuration)."),
            .value("count", "n", "How many devices (default 100000)."),
            .value("first", "i", "Index of the first device (default 0)."),
            .flag("sweep", "Then sweep: once with nothing due, then with every device due to go stale (a manual clock 31 days on)."),
            .value("sweep-passes", "n", "With --sweep: at most this many passes with devices due (default: until none is due)."),
            .flag("server-fill", "Make the devices inside Redis (a Lua loop, 10,000 a call: the same records and indexes, no events) instead of registering them: 10 million in minutes, for the sweeper's and the campaigns' figures."),
            .value("topic", "name", "With --server-fill: every device subscribed to this one topic (default: half of them to news and scores)."),
            .flag("stale", "With --server-fill: the devices made stale (last seen 31 days ago), as the sweeper leaves them."),
        ],
        run: run)

    static func run(_ flags: ParsedArguments) throws {
        let url = try RedisURL(parsing: try flags.required("redis"))
        let count = try flags.int("count", default: 100_000)
        let first = try flags.int("first", default: 0)
        let app = flags.value("app") ?? "bench"
        let redis = try BlockingRedis(url: url)
        defer { redis.close() }
        /// The registry's clock, moved ahead by hand for the due sweep; read by the registry on this thread only.
        final class Clock { var now = wallClockMillis() }
        let clock = Clock()
        let registry = DeviceRegistry(redis: redis, shards: try QueueShards(single: QueueKeys(prefix: flags.value("prefix") ?? "herald"))) { clock.now }
        let memoryBefore = try usedMemory(redis)
        let started = monotonicNanos()
        var done = 0
        if flags.flag("server-fill") {
            let keys = registry.shards[0].scriptKeys(app: app, platform: BenchJobs.platform.rawValue).map { Array($0.utf8) }
            while done < count {
                let n = min(10_000, count - done)
                let args = [String(first + done), String(n), String(clock.now), app, BenchJobs.platform.rawValue, BenchJobs.tokenHead,
                            flags.value("topic") ?? "", flags.flag("stale") ? "stale" : "active"]
                _ = try redis.evalScript(serverFill, keys: keys, args: args.map { Array($0.utf8) })
                done += n
            }
        }
        while done < count {
            let part = (done..<min(count, done + 10_000)).map { i -> (DeviceID, DeviceAttributes) in
                let index = first + i
                // Realistic records: an owner per three devices, two topics on half of them, a locale and a zone.
                return (DeviceID(app: app, platform: BenchJobs.platform, token: BenchJobs.token(index)),
                        DeviceAttributes(owner: "user-\(index / 3)", topics: index % 2 == 0 ? ["news", "scores"] : [], locale: "en-US",
                                         timeZone: "Europe/Berlin", environment: "production"))
            }
            _ = try registry.register(many: part)
            done += part.count
        }
        let seconds = Double(monotonicNanos() &- started) / 1e9
        let memoryAfter = try usedMemory(redis)
        // The devices in the list (a run may add to an earlier one's).
        let devices = Int(try redis.command(["HLEN", registry.shards[0].records(app: app, platform: BenchJobs.platform.rawValue)]).int ?? 0)
        var out: [String: Any] = [
            "devices": devices, "seconds": seconds, "registrations_per_second": Double(count) / seconds,
            "used_memory_bytes": memoryAfter, "bytes_per_device": Double(memoryAfter - memoryBefore) / Double(max(1, devices)),
            "events": try redis.command(["XLEN", registry.shards[0].events]).int ?? 0,
        ]
        if flags.flag("sweep") {
            // Nothing due: what every worker pays each sweep_interval_ms (the script cached by a first sweep).
            _ = try registry.sweep()
            let idle = try redisMicroseconds(redis) { _ = try registry.sweep() }
            out["sweep_idle_redis_us"] = idle
            // Everything due to go stale: one batch of 1,000 after another until none is left.
            clock.now += 31 * 86_400_000
            var aged = 0
            let passes = try flags.int("sweep-passes", default: .max)
            let busy = try redisMicroseconds(redis) {
                for _ in 0..<passes {
                    let report = try registry.sweep()
                    aged += report.madeStale
                    if !report.more { break }
                }
            }
            out["swept_stale"] = aged
            out["sweep_redis_us_per_device"] = busy / Double(max(1, aged))
        }
        printJSONLine(out)
    }

    /// `--server-fill`: KEYS as every registry script's, ARGV first index, count, now, app, platform, token head, topic
    /// ('' for the default), state (active, stale). The records and indexes the register script writes for
    /// `BenchJobs.token` devices with the run's attributes (no event: a stream is capped); a stale device as a sweep
    /// leaves it, last seen 31 days ago.
    static let serverFill = RedisScript(#"""
    local first, n, now, app, platform = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
    local head, topic, state = ARGV[6], ARGV[7], ARGV[8]
    local seen = state == 'stale' and now - 31 * 86400000 or now
    for i = first, first + n - 1 do
      local token = head .. string.format('%08x', i)
      local owner = 'user-' .. math.floor(i / 3)
      local rec = {owner = owner, locale = 'en-US', tz = 'Europe/Berlin', env = 'production', created = seen, seen = seen, state = state}
      redis.call('ZADD', KEYS[6], 0, owner .. '\n' .. platform .. '\n' .. token)
      local topics = topic ~= '' and {topic} or (i % 2 == 0 and {'news', 'scores'} or nil)
      if topics then
        rec.topics = topics
        for _, t in ipairs(topics) do redis.call('ZADD', KEYS[7], 0, t .. '\n' .. platform .. '\n' .. token) end
      end
      redis.call('HSET', KEYS[1], token, cjson.encode(rec))
      redis.call('ZADD', state == 'stale' and KEYS[3] or KEYS[2], seen, token)
    end
    redis.call('SADD', KEYS[8], platform .. ':' .. app)
    return n
    """#)

    static func usedMemory(_ redis: BlockingRedis) throws(RedisError) -> Int {
        let info = try redis.command(["INFO", "memory"]).string ?? ""
        return info.split(separator: "\r\n").first { $0.hasPrefix("used_memory:") }.flatMap { Int($0.dropFirst("used_memory:".count)) } ?? 0
    }

    /// Redis's own time in EVALSHA and EVAL (`INFO commandstats`) spent by `body`, in µs.
    static func redisMicroseconds(_ redis: BlockingRedis, _ body: () throws -> Void) throws -> Double {
        func usec() throws -> Double {
            let info = try redis.command(["INFO", "commandstats"]).string ?? ""
            return info.split(separator: "\r\n").filter { $0.hasPrefix("cmdstat_evalsha:") || $0.hasPrefix("cmdstat_eval:") }.reduce(0.0) { sum, line in
                let field = line.split(separator: ",").first { $0.hasPrefix("usec=") }
                return sum + (field.flatMap { Double($0.dropFirst(5)) } ?? 0)
            }
        }
        let before = try usec()
        try body()
        return try usec() - before
    }
}

/// Re-exported so queue callers keep naming `RedisConnection`, `BlockingRedis` and `RESPValue` with
/// `import RedisQueue` alone.
@_exported import RedisClient

import Reactor
import RedisQueue

/// The one place that turns the `redis` settings into clients, so the worker and every tool (`stats`, `tail`,
/// `enqueue`, the scheduler, the dashboard, `replay`, `forward`) reach Redis the same way.
extension Configuration.RedisSettings {
    /// Where Redis is, for log lines (no password).
    public var redactedURL: String { (try? RedisURL(parsing: url).description) ?? "redis (bad URL)" }

    /// The worker's pipelined client on `loop` (not started).
    public func makeClient(loop: EventLoop) throws -> RedisConnection {
        var options = RedisConnection.Options()
        options.connectTimeoutMilliseconds = connectTimeoutMs
        options.commandTimeoutMilliseconds = commandTimeoutMs
        return RedisConnection(url: try RedisURL(parsing: url), loop: loop, options: options)
    }

    /// A connected blocking client for a tool. A bad URL is a `.connectFailed` too: tools that retry report it.
    public func makeBlockingClient(connectTimeoutMilliseconds: Int = 2_000, commandTimeoutMilliseconds: Int = 10_000) throws(RedisError) -> any BlockingRedisCommands {
        let parsed: RedisURL
        do { parsed = try RedisURL(parsing: url) } catch { throw .connectFailed(error.description) }
        return try BlockingRedis(url: parsed, connectTimeoutMilliseconds: connectTimeoutMilliseconds,
                                 commandTimeoutMilliseconds: commandTimeoutMilliseconds)
    }
}

import Reactor

/// What the queue front ends need from Redis on an event loop: one `RedisConnection` to one server today, and
/// anything else that routes commands (to the node owning a key's slot, to the current master) tomorrow.
///
/// Loop-confined like `RedisConnection`: call everything on `loop`; completions run there, in send order per
/// node. Commands whose first argument after the name is a key are routed by that key; scripts by `keys`.
public protocol RedisCommandSender: AnyObject {
    var loop: EventLoop { get }
    /// Starts connecting (idempotent); commands sent before wait for the connection.
    func start()
    /// Closes for good: everything pending fails with `.closed`.
    func close()
    /// One command; `completion` gets the reply (top-level error replies as `.failure(.server)`).
    func send(_ args: [[UInt8]], completion: @escaping RedisConnection.Completion)
    /// EVALSHA, falling back to EVAL on NOSCRIPT.
    func evalScript(_ script: RedisScript, keys: [[UInt8]], args: [[UInt8]], completion: @escaping RedisConnection.Completion)
    /// EVALSHA with arguments encoded in place (the hot path), falling back to EVAL on NOSCRIPT.
    func evalScript(_ script: RedisScript, keys: [[UInt8]], arguments: RESPArguments, completion: @escaping RedisConnection.Completion)
}

extension RedisConnection: RedisCommandSender {}

/// The blocking counterpart for CLI tools, the scheduler and tests: `BlockingRedis` to one server, or a
/// router over several. Not thread-safe: one per thread.
public protocol BlockingRedisCommands: AnyObject {
    /// One command; a top-level error reply throws `.server`.
    func command(_ args: [[UInt8]]) throws(RedisError) -> RESPValue
    /// Every reply in order; error replies come back as `.error` values (they do not throw).
    func pipeline(rawCommands commands: [[[UInt8]]]) throws(RedisError) -> [RESPValue]
    /// EVALSHA with EVAL fallback on NOSCRIPT; a top-level error reply throws `.server`.
    func evalScript(_ script: RedisScript, keys: [[UInt8]], args: [[UInt8]]) throws(RedisError) -> RESPValue
    /// Closes the connection(s); later calls fail with `.connectionLost`.
    func close()
}

extension BlockingRedisCommands {
    public func command(_ args: [String]) throws(RedisError) -> RESPValue {
        try command(args.map { Array($0.utf8) })
    }

    public func pipeline(_ commands: [[String]]) throws(RedisError) -> [RESPValue] {
        try pipeline(rawCommands: commands.map { $0.map { Array($0.utf8) } })
    }
}

extension BlockingRedis: BlockingRedisCommands {}

import Foundation
import Reactor
@testable import RedisQueue

/// Test-only: runs every script with a prelude that shadows `redis` by a local proxy (Redis 7 forbids changing
/// globals, not declaring locals) whose `call`/`pcall` check that each key argument of the command is in KEYS.
/// An undeclared key fails the whole call with `HERALD_UNDECLARED <command> <key>` before the command runs, as
/// Redis Cluster would refuse it. Production scripts never carry it: the decorators below swap it in.
enum KeyCheck {
    static let errorPrefix = "HERALD_UNDECLARED"

    /// Key positions of the commands Herald's scripts use: the first argument, every argument (DEL), or none
    /// (TIME). A command not in the table fails the check, so a new command in a script needs its entry here.
    static let prelude = #"""
    local __kcRedis = redis
    local __kcDeclared = {}
    for _, k in ipairs(KEYS) do __kcDeclared[k] = true end
    local __kcFirstKey = {}
    for _, c in ipairs({'TYPE', 'GET', 'SET', 'EXISTS', 'ZADD', 'ZREM', 'ZSCORE', 'ZRANGE', 'ZRANGEBYSCORE', 'ZCOUNT', 'ZCARD', 'ZREMRANGEBYSCORE', 'PEXPIRE',
                        'RPOP', 'RPUSH', 'LPUSH', 'LPOP', 'LINDEX', 'INCR', 'LTRIM', 'LREM', 'LLEN', 'LRANGE', 'HSET', 'HGET', 'HGETALL', 'HMGET',
                        'HDEL', 'HKEYS', 'HEXISTS', 'HLEN', 'EXPIRE', 'PTTL', 'XADD', 'XTRIM', 'XRANGE', 'XREVRANGE', 'XDEL', 'XLEN',
                        'SADD', 'SREM', 'HINCRBY', 'ZLEXCOUNT'}) do
      __kcFirstKey[c] = true
    end
    local __kcAllKeys = {DEL = true, UNLINK = true, RENAME = true}
    local __kcSecondKey = {XINFO = true}
    local __kcNoKeys = {TIME = true}
    local function __kcCheck(cmd, ...)
      local name = string.upper(cmd)
      local keys
      if __kcNoKeys[name] then return end
      if __kcAllKeys[name] then
        keys = {...}
      elseif __kcSecondKey[name] then
        keys = {(select(2, ...))}
      elseif __kcFirstKey[name] then
        keys = {(...)}
      else
        error('HERALD_UNDECLARED no key positions known for ' .. name)
      end
      for _, k in ipairs(keys) do
        if not __kcDeclared[k] then error('HERALD_UNDECLARED ' .. name .. ' ' .. tostring(k)) end
      end
    end
    local redis = setmetatable({
      call = function(cmd, ...) __kcCheck(cmd, ...); return __kcRedis.call(cmd, ...) end,
      pcall = function(cmd, ...) __kcCheck(cmd, ...); return __kcRedis.pcall(cmd, ...) end,
    }, {__index = __kcRedis})

    """#

    private static let lock = NSLock()
    nonisolated(unsafe) private static var made: [String: RedisScript] = [:]

    /// The script with the checking prelude (made once per script: hashing the source costs).
    static func checked(_ script: RedisScript) -> RedisScript {
        lock.withLock {
            if let known = made[script.sha1] { return known }
            let checked = RedisScript(prelude + script.source)
            made[script.sha1] = checked
            return checked
        }
    }

    static func isUndeclared(_ error: RedisError) -> Bool {
        if case .server(let message) = error { return message.contains(errorPrefix) }
        return false
    }
}

/// A blocking client whose scripts run key-checked (`KeyCheck`); everything else goes through unchanged.
final class KeyCheckedRedis: BlockingRedisCommands {
    let inner: any BlockingRedisCommands

    init(_ inner: any BlockingRedisCommands) { self.inner = inner }

    func command(_ args: [[UInt8]]) throws(RedisError) -> RESPValue { try inner.command(args) }
    func pipeline(rawCommands commands: [[[UInt8]]]) throws(RedisError) -> [RESPValue] { try inner.pipeline(rawCommands: commands) }
    func evalScript(_ script: RedisScript, keys: [[UInt8]], args: [[UInt8]]) throws(RedisError) -> RESPValue {
        try inner.evalScript(KeyCheck.checked(script), keys: keys, args: args)
    }
    func close() { inner.close() }
}

/// The loop-confined counterpart, for `JobQueue`.
final class KeyCheckedSender: RedisCommandSender {
    let inner: any RedisCommandSender

    init(_ inner: any RedisCommandSender) { self.inner = inner }

    var loop: EventLoop { inner.loop }
    func start() { inner.start() }
    func close() { inner.close() }
    func send(_ args: [[UInt8]], completion: @escaping RedisConnection.Completion) { inner.send(args, completion: completion) }
    func evalScript(_ script: RedisScript, keys: [[UInt8]], args: [[UInt8]], completion: @escaping RedisConnection.Completion) {
        inner.evalScript(KeyCheck.checked(script), keys: keys, args: args, completion: completion)
    }
    func evalScript(_ script: RedisScript, keys: [[UInt8]], arguments: RESPArguments, completion: @escaping RedisConnection.Completion) {
        inner.evalScript(KeyCheck.checked(script), keys: keys, arguments: arguments, completion: completion)
    }
}

/// The scripts of the receipts set (docs/queue-design.md, "Receipts"): the tickets a provider's first phase gave,
/// waiting for the receipts that decide their jobs. Each declares every key it touches and checks their types before
/// its first write, like `QueueScripts`. The completion script (`QueueScripts.complete`) puts a ticket in.
public enum ReceiptScripts {
    /// KEYS: `<p>:receipts`, `<p>:receipts:jobs`. ARGV: the most to take, the interval (ms). Takes the tickets due
    /// now (Redis's clock) and moves each one's next ask `interval` ahead before answering, so a poller killed after
    /// this leaves them to be asked again only after the interval, and two pollers never ask for one ticket within
    /// it. A member without a record is dropped. Returns {now ms, {member, record, ...}, the soonest next due ms or ''}.
    public static let take = RedisScript(QueueScripts.prelude + #"""
    local bad = refusal(KEYS[1], 'zset', KEYS[2], 'hash')
    if bad then return bad end
    local now = nowMs()
    local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
    local out = {}
    for _, m in ipairs(due) do
      local record = redis.call('HGET', KEYS[2], m)
      if record then
        redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), m)
        out[#out + 1] = m
        out[#out + 1] = record
      else
        redis.call('ZREM', KEYS[1], m)
      end
    end
    local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    return {now, out, first[2] or ''}
    """#)

    /// KEYS: `<p>:receipts`, `<p>:receipts:jobs`, `<p>:results`, `<p>:dropped-tokens`, then each `<p>:result:<id>` the
    /// result index needs. ARGV: results max length, the index TTL (0: no index), count, then per ticket: its member,
    /// the KEYS index of its result index key (0: none), the index field, the entry's index JSON, n and n entry
    /// field/value args, d and d dropped-token field/value args. Writes a ticket's terminal entry (its dropped token,
    /// its index) only while it is still in the set, and takes it out in the same call: a poller killed at any instant,
    /// or two pollers settling one ticket, write it once. Returns how many applied.
    public static let settle = RedisScript(QueueScripts.prelude + #"""
    local bad = refusal(KEYS[1], 'zset', KEYS[2], 'hash', KEYS[3], 'stream', KEYS[4], 'stream')
    if bad then return bad end
    local applied, wroteTokens = 0, false
    local ttl = ARGV[2]
    local p = 4
    for _ = 1, tonumber(ARGV[3]) do
      local member, index, field, json = ARGV[p], tonumber(ARGV[p + 1]), ARGV[p + 2], ARGV[p + 3]
      local n = tonumber(ARGV[p + 4])
      local d = tonumber(ARGV[p + 5 + n])
      if redis.call('ZREM', KEYS[1], member) == 1 then
        redis.call('HDEL', KEYS[2], member)
        local sid = redis.call('XADD', KEYS[3], '*', unpack(ARGV, p + 5, p + 4 + n))
        if d > 0 then
          redis.call('XADD', KEYS[4], '*', unpack(ARGV, p + 6 + n, p + 5 + n + d))
          wroteTokens = true
        end
        if index > 0 then indexResult(KEYS[index], field, sid, json, ttl) end
        applied = applied + 1
      end
      p = p + 6 + n + d
    end
    if applied > 0 then redis.call('XTRIM', KEYS[3], 'MAXLEN', '~', ARGV[1]) end
    if wroteTokens then redis.call('XTRIM', KEYS[4], 'MAXLEN', '~', ARGV[1]) end
    return applied
    """#)
}

/// The Lua scripts behind the queue. Each runs atomically in Redis; lease deadlines and "is a retry due" come
/// from Redis's `TIME`, so workers' clocks do not decide them (a retry's due time is the worker's clock plus
/// the delay, so a skewed worker shifts only when its own retries fall due). Public so tools (and tests) can run the very same text, e.g. with redis-cli.
public enum QueueScripts {
    /// KEYS: workers, leases hash, queue keys in priority order. ARGV: worker id, lease ttl ms, max jobs, lease id
    /// prefix (ids are prefix..1, prefix..2, ...). Refreshes the heartbeat, pops up to max jobs (oldest first),
    /// leases each. Returns a flat array: lease id, queue key, job, lease id, queue key, job, ...
    public static let claim = RedisScript(#"""
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
    local want = tonumber(ARGV[3])
    local n = 0
    local out = {}
    local fields = {}
    for i = 3, #KEYS do
      if want <= 0 then break end
      local jobs = redis.call('RPOP', KEYS[i], want)
      if jobs then
        for _, job in ipairs(jobs) do
          n = n + 1
          local id = ARGV[4] .. n
          fields[#fields + 1] = id
          fields[#fields + 1] = KEYS[i] .. '\n' .. job
          out[#out + 1] = id
          out[#out + 1] = KEYS[i]
          out[#out + 1] = job
        end
        want = want - #jobs
      end
    end
    -- HSET in a few calls for the whole batch (a call from Lua costs more than the work it does for one
    -- job), in chunks that stay below Lua's unpack limit.
    for k = 1, #fields, 2000 do
      redis.call('HSET', KEYS[2], unpack(fields, k, math.min(k + 1999, #fields)))
    end
    return out
    """#)

    /// KEYS: workers. ARGV: worker id, lease ttl ms. Returns Redis's time in ms.
    public static let heartbeat = RedisScript(#"""
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
    return now
    """#)

    /// KEYS: workers. ARGV: leases key prefix, max workers per call. Every worker whose heartbeat deadline passed
    /// gets each leased job pushed back to the head of its queue; its hash and entry go. Returns {jobs, workers}.
    public static let reap = RedisScript(#"""
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
    local n = 0
    for _, w in ipairs(dead) do
      local key = ARGV[1] .. w
      local leases = redis.call('HVALS', key)
      for _, v in ipairs(leases) do
        local nl = string.find(v, '\n', 1, true)
        redis.call('RPUSH', string.sub(v, 1, nl - 1), string.sub(v, nl + 1))
        n = n + 1
      end
      redis.call('DEL', key)
      redis.call('ZREM', KEYS[1], w)
    end
    return {n, #dead}
    """#)

    /// KEYS: leases hash. ARGV: lease ids. Puts each still-held job back at the head of its queue. Returns the count.
    public static let release = RedisScript(#"""
    local n = 0
    for i = 1, #ARGV do
      local v = redis.call('HGET', KEYS[1], ARGV[i])
      if v then
        local nl = string.find(v, '\n', 1, true)
        redis.call('RPUSH', string.sub(v, 1, nl - 1), string.sub(v, nl + 1))
        redis.call('HDEL', KEYS[1], ARGV[i])
        n = n + 1
      end
    end
    return n
    """#)

    /// KEYS: leases hash. ARGV: lease id prefix. Returns to their queues the jobs of a claim whose reply never
    /// arrived (connection lost): the worker does not know them, so nobody would ever complete them.
    public static let releasePrefix = RedisScript(#"""
    local n = 0
    for _, k in ipairs(redis.call('HKEYS', KEYS[1])) do
      if string.sub(k, 1, #ARGV[1]) == ARGV[1] then
        local v = redis.call('HGET', KEYS[1], k)
        local nl = string.find(v, '\n', 1, true)
        redis.call('RPUSH', string.sub(v, 1, nl - 1), string.sub(v, nl + 1))
        redis.call('HDEL', KEYS[1], k)
        n = n + 1
      end
    end
    return n
    """#)

    /// KEYS: workers, leases hash. ARGV: worker id. Graceful exit: every lease back to its queue head, the worker
    /// entry removed. Returns the count of jobs returned.
    public static let retire = RedisScript(#"""
    local leases = redis.call('HVALS', KEYS[2])
    for _, v in ipairs(leases) do
      local nl = string.find(v, '\n', 1, true)
      redis.call('RPUSH', string.sub(v, 1, nl - 1), string.sub(v, nl + 1))
    end
    redis.call('DEL', KEYS[2])
    redis.call('ZREM', KEYS[1], ARGV[1])
    return #leases
    """#)

    /// KEYS: leases hash, results, dropped-tokens, retry, dead. ARGV: results max length, dead max length, count,
    /// then per completion: lease id, queue key, job bytes as claimed, n, n result field/value args, retry due ms
    /// or '', retry member, dead entry or '', m, m dropped-token field/value args.
    /// Per completion returns 1 (applied), 2 (lease had been reaped, job taken back from the queue and applied),
    /// 0 (lease lost: another worker holds the job, or this batch was already applied; nothing written) or
    /// 3 (lease gone and no job bytes were sent: call again with them for this completion; nothing written).
    public static let complete = RedisScript(#"""
    local resultsMax = ARGV[1]
    local deadMax = tonumber(ARGV[2])
    local count = tonumber(ARGV[3])
    -- First pass: where each completion's arguments start, and which leases are still held (one HMGET
    -- and one HDEL for the batch instead of a call per job).
    local starts = {}
    local leases = {}
    local i = 4
    for c = 1, count do
      starts[c] = i
      leases[c] = ARGV[i]
      local j = i + 4 + tonumber(ARGV[i + 3])
      i = j + 4 + tonumber(ARGV[j + 3])
    end
    local held = {}
    local gone = {}
    for k = 1, count, 2000 do
      local part = redis.call('HMGET', KEYS[1], unpack(leases, k, math.min(k + 1999, count)))
      local present = {}
      for p = 1, #part do
        held[k + p - 1] = part[p]
        if part[p] then present[#present + 1] = leases[k + p - 1] end
      end
      if #present > 0 then redis.call('HDEL', KEYS[1], unpack(present)) end
    end
    local codes = {}
    local wroteResults = false
    local wroteTokens = false
    for c = 1, count do
      i = starts[c]
      local queue, job = ARGV[i + 1], ARGV[i + 2]
      local nr = tonumber(ARGV[i + 3])
      local rs = i + 4
      local j = rs + nr
      local retryDue, retryMember, deadEntry = ARGV[j], ARGV[j + 1], ARGV[j + 2]
      local nd = tonumber(ARGV[j + 3])
      local ds = j + 4
      local code = 1
      if not held[c] then
        -- The job bytes travel only when the caller asks for this recovery (code 3): leases are rarely lost.
        if job == '' then
          code = 3
        elseif redis.call('LREM', queue, -1, job) > 0 then
          code = 2
        else
          code = 0
        end
      end
      if code == 1 or code == 2 then
        if nr > 0 then
          -- Straight from ARGV: building a table per entry cost more than the XADD itself.
          redis.call('XADD', KEYS[2], '*', unpack(ARGV, rs, rs + nr - 1))
          wroteResults = true
        end
        if retryDue ~= '' then redis.call('ZADD', KEYS[4], retryDue, retryMember) end
        if deadEntry ~= '' then
          redis.call('LPUSH', KEYS[5], deadEntry)
          redis.call('LTRIM', KEYS[5], 0, deadMax - 1)
        end
        if nd > 0 then
          redis.call('XADD', KEYS[3], '*', unpack(ARGV, ds, ds + nd - 1))
          wroteTokens = true
        end
      end
      codes[#codes + 1] = code
    end
    -- Trim once per batch rather than per entry (approximate trimming, as MAXLEN ~ on each XADD would be).
    if wroteResults then redis.call('XTRIM', KEYS[2], 'MAXLEN', '~', resultsMax) end
    if wroteTokens then redis.call('XTRIM', KEYS[3], 'MAXLEN', '~', resultsMax) end
    return codes
    """#)

    /// KEYS: retry. ARGV: default queue key, max moves. Moves due entries (score <= Redis time) to the head of the
    /// queue their envelope names, oldest due taken first. Returns {moved, next due ms or -1, now ms}.
    public static let moveDue = RedisScript(#"""
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
    for k = #due, 1, -1 do
      local m = due[k]
      local q = string.match(m, '^{"herald":{"queue":"([^"\\]*)"')
      if q == nil or q == '' then q = ARGV[1] end
      redis.call('RPUSH', q, m)
      redis.call('ZREM', KEYS[1], m)
    end
    local nxt = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    local nextDue = -1
    if #nxt > 0 then nextDue = tonumber(nxt[2]) end
    return {#due, nextDue, now}
    """#)
}

import RedisQueue

/// The registry's Lua scripts (docs/queue-design.md, "Device registry"). Each works on one list (an app's devices
/// on one platform) in one shard and takes its keys in `DeviceKeys.scriptKeys` order: records, active, stale,
/// removed, delivered, owners, topics, lists, removals, events. Every script starts its ARGV with the platform,
/// the app, now (ms, the caller's clock, so the sweeper can be tested on a manual one) and the events stream's
/// length cap. Like the queue's scripts each checks its keys' types before its first write
/// (`HERALD_WRONGTYPE`) and is safe to run twice: a second removal finds the device removed and writes nothing,
/// so a completion batch sent again, or two workers sweeping one list, never emit an event twice.
public enum RegistryScripts {
    /// `remove(token, reason, answer, invalidSince)`: 1 removed (event, counted), 0 nothing to remove, 2 kept
    /// because it registered after `invalidSince` (APNs' 410 timestamp: the token was given anew since).
    static let prelude = QueueScripts.prelude + #"""
    local bad = refusal(KEYS[1], 'hash', KEYS[2], 'zset', KEYS[3], 'zset', KEYS[4], 'zset', KEYS[5], 'hash',
                        KEYS[6], 'zset', KEYS[7], 'zset', KEYS[8], 'set', KEYS[9], 'hash', KEYS[10], 'stream')
    if bad then return bad end
    local platform, app, now, eventsMax = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
    local function member(name, token) return name .. '\n' .. platform .. '\n' .. token end
    local function unindex(rec, token)
      if rec.owner then redis.call('ZREM', KEYS[6], member(rec.owner, token)) end
      if rec.topics then for _, t in ipairs(rec.topics) do redis.call('ZREM', KEYS[7], member(t, token)) end end
    end
    local function index(rec, token)
      if rec.owner then redis.call('ZADD', KEYS[6], 0, member(rec.owner, token)) end
      if rec.topics then for _, t in ipairs(rec.topics) do redis.call('ZADD', KEYS[7], 0, member(t, token)) end end
    end
    local function event(kind, token, rec, extra)
      local f = {'event', kind, 'app', app, 'platform', platform, 'token', token, 'at', string.format('%d', now)}
      if rec.owner then f[#f + 1] = 'owner'; f[#f + 1] = rec.owner end
      for i = 1, #extra do f[#f + 1] = extra[i] end
      redis.call('XADD', KEYS[10], 'MAXLEN', '~', eventsMax, '*', unpack(f))
    end
    local function record(token)
      local old = redis.call('HGET', KEYS[1], token)
      return old and cjson.decode(old) or nil
    end
    local function remove(token, reason, answer, invalidSince)
      local rec = record(token)
      if not rec or rec.state == 'removed' then
        redis.call('ZREM', KEYS[2], token)
        redis.call('ZREM', KEYS[3], token)
        return 0
      end
      if invalidSince ~= '' and tonumber(rec.seen or 0) > tonumber(invalidSince) then return 2 end
      redis.call('ZREM', KEYS[2], token)
      redis.call('ZREM', KEYS[3], token)
      redis.call('HDEL', KEYS[5], token)
      unindex(rec, token)
      rec.state, rec.reason, rec.removed = 'removed', reason, now
      if answer ~= '' then rec.answer = answer end
      redis.call('HSET', KEYS[1], token, cjson.encode(rec))
      redis.call('ZADD', KEYS[4], now, token)
      redis.call('HINCRBY', KEYS[9], app .. '\n' .. platform .. '\n' .. reason, 1)
      local extra = {'reason', reason}
      if answer ~= '' then extra[3] = 'answer'; extra[4] = answer end
      event('removed', token, rec, extra)
      return 1
    end

    """#

    /// ARGV after the common four: the token, the registration's record JSON (`DeviceAttributes.recordJSON`), then an
    /// import's history (`DeviceHistory`: last seen ms, created ms, `stale`; each '' when not given).
    /// Registers a new (or removed) device, or refreshes one: `seen` moves to now, a stale one is active again, its
    /// owner and topics replaced (a device that changed owner leaves the first one's index). One event:
    /// `registered`, `moved` (to another owner; `previous_owner`) or `refreshed` (`previous_owner` when the owner was
    /// left out; `was` = stale when revived, on a move too).
    /// Returns the event's name.
    public static let register = RedisScript(prelude + #"""
    local token = ARGV[5]
    local rec = cjson.decode(ARGV[6])
    -- An import's history (`DeviceHistory`): last registered and first registered (never later than now), stale.
    local given = tonumber(ARGV[7] or '')
    local seen = given and math.min(given, now) or now
    local created = tonumber(ARGV[8] or '')
    local stale = ARGV[9] == 'stale'
    local prev = record(token)
    local kind, extra = 'registered', {}
    if prev and prev.state ~= 'removed' then
      rec.created = prev.created
      unindex(prev, token)
      -- Moved: to another owner; an owner left out (a logout) is a refresh that says whose it was.
      kind = (prev.owner and rec.owner and prev.owner ~= rec.owner) and 'moved' or 'refreshed'
      if prev.owner and prev.owner ~= rec.owner then extra = {'previous_owner', prev.owner} end
      if prev.state == 'stale' then
        redis.call('ZREM', KEYS[3], token)
        extra[#extra + 1] = 'was'
        extra[#extra + 1] = 'stale'
      end
      -- An older history read back never moves a live device's last registration back, nor makes it stale.
      seen = math.max(seen, tonumber(prev.seen or 0))
      stale = stale and prev.state == 'stale'
    else
      if prev then redis.call('ZREM', KEYS[4], token) end
      rec.created = created and math.min(created, seen) or seen
    end
    rec.seen, rec.state = seen, stale and 'stale' or 'active'
    index(rec, token)
    redis.call('HSET', KEYS[1], token, cjson.encode(rec))
    if stale then
      redis.call('ZREM', KEYS[2], token)
      redis.call('ZADD', KEYS[3], seen, token)
    else
      redis.call('ZREM', KEYS[3], token)
      redis.call('ZADD', KEYS[2], seen, token)
    end
    redis.call('SADD', KEYS[8], platform .. ':' .. app)
    event(kind, token, rec, extra)
    return kind
    """#)

    /// ARGV after the common four: the token, the reason (`unregistered`). Returns 1 removed, 0 not registered.
    public static let unregister = RedisScript(prelude + #"""
    return remove(ARGV[5], ARGV[6], '', '')
    """#)

    /// A completion's part for one list (`RegistryUpdate`): ARGV after the common four: d, then d times the
    /// token, the reason, the provider's answer and APNs' invalid-since ms (or ''); then n and n delivered tokens.
    /// Removes the dropped devices (unless registered after the invalid-since time) and stamps the delivered ones
    /// that are registered. Returns {removed, kept}.
    public static let settle = RedisScript(prelude + #"""
    local removed, kept = 0, 0
    local p = 6
    for _ = 1, tonumber(ARGV[5]) do
      local r = remove(ARGV[p], ARGV[p + 1], ARGV[p + 2], ARGV[p + 3])
      if r == 1 then removed = removed + 1 elseif r == 2 then kept = kept + 1 end
      p = p + 4
    end
    for q = p + 1, p + tonumber(ARGV[p]) do
      local t = ARGV[q]
      if redis.call('ZSCORE', KEYS[2], t) or redis.call('ZSCORE', KEYS[3], t) then redis.call('HSET', KEYS[5], t, now) end
    end
    return {removed, kept}
    """#)

    /// One bounded sweep of one list. ARGV after the common four: stale before (ms), remove before (ms), purge
    /// before (ms), the most to take of each kind. Active devices last seen before the first become stale (event
    /// `stale`), stale ones last seen before the second are removed (`unseen`), removed records older than the third
    /// are purged (no event: the `removed` one was written). A list left with no record leaves `lists`.
    /// Returns {made stale, removed, purged}.
    public static let sweep = RedisScript(prelude + #"""
    local limit = tonumber(ARGV[8])
    local aged = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[5], 'WITHSCORES', 'LIMIT', 0, limit)
    for i = 1, #aged, 2 do
      local token = aged[i]
      redis.call('ZREM', KEYS[2], token)
      local rec = record(token)
      if rec then
        redis.call('ZADD', KEYS[3], aged[i + 1], token)
        rec.state = 'stale'
        redis.call('HSET', KEYS[1], token, cjson.encode(rec))
        event('stale', token, rec, {})
      end
    end
    local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[6], 'LIMIT', 0, limit)
    for _, token in ipairs(gone) do remove(token, 'unseen', '', '') end
    local purged = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', '(' .. ARGV[7], 'LIMIT', 0, limit)
    for _, token in ipairs(purged) do
      redis.call('ZREM', KEYS[4], token)
      redis.call('HDEL', KEYS[1], token)
    end
    if redis.call('HLEN', KEYS[1]) == 0 then redis.call('SREM', KEYS[8], platform .. ':' .. app) end
    return {#aged / 2, #gone, #purged}
    """#)

    /// KEYS: a shard's `<p>:devices:dropped-cursor`. ARGV: the cursor as read ('' for none), the new one. Moves it only
    /// from what was read, so two workers following one stream never move it back. Returns 1 moved, 0 not.
    public static let advance = RedisScript(QueueScripts.prelude + #"""
    local bad = refusal(KEYS[1], 'string')
    if bad then return bad end
    if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 0 end
    redis.call('SET', KEYS[1], ARGV[2])
    return 1
    """#)
}

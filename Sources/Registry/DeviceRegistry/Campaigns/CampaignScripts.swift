import RedisQueue

/// The campaigns' Lua scripts, one shard each (docs/campaigns.md). A shard's part of an audience is the devices
/// whose tokens hash to it, so each shard's campaign hash holds its own cursor: the last index member read
/// (`<name>\n<platform>\n<token>`, "" before the first). Every write the fan-out makes is `step`, which checks
/// the cursor is still the one the driver read from: a driver that dies before it pushed nothing (the chunk is
/// read again), one that died after it left the cursor past the chunk, and two drivers reading the same chunk
/// push it once.
public enum CampaignScripts {
    /// How long after a shard of a campaign is done or cancelled its jobs' outcomes are still counted (retries,
    /// receipts), or after the latest `deliver_at` its jobs were pushed with (`due_max`) when later: while no
    /// campaign is open and this has passed, `CampaignDriver.tally` reads and writes nothing.
    public static let tallyWindowMs: Int64 = 86_400_000

    /// How long a campaign's sent set outlives its last step, pause or resume (each sets it again): longer than the
    /// slowest pacing leaves between steps and than `finish_within`, so only a campaign abandoned (or left paused
    /// that long) loses it.
    public static let sentTTLMs: Int64 = 32 * 86_400_000

    /// How long a shard's campaign hash (its document, counters and status) stays after the shard is done or the
    /// campaign cancelled, or after its `due_max` when later: well past the counting window, then it expires (the
    /// status is gone and the id free).
    public static let finishedTTLMs: Int64 = 30 * 86_400_000

    /// `countUntil(tally, now, campaign)`: moves the tally hash's `until` to the window after now, or after the
    /// campaign hash's `due_max` (the latest `deliver_at` its jobs were pushed with) when that is later, never back:
    /// a job held for its local time is counted when it ends. `finished(campaign, now)`: the campaign hash expires
    /// `finishedTTLMs` after now, or after its `due_max` when later.
    static let countUntil = #"""
    local function dueMax(campaign)
      if not campaign then return 0 end
      return tonumber(redis.call('HGET', campaign, 'due_max') or '0') or 0
    end
    local function countUntil(key, now, campaign)
      local untilMs = math.max(tonumber(now), dueMax(campaign)) + \#(tallyWindowMs)
      if untilMs > tonumber(redis.call('HGET', key, 'until') or '0') then
        redis.call('HSET', key, 'until', string.format('%d', untilMs))
      end
    end
    local function finished(campaign, now)
      local ttl = math.max(tonumber(now), dueMax(campaign)) - tonumber(now) + \#(finishedTTLMs)
      redis.call('PEXPIRE', campaign, string.format('%d', ttl))
    end

    """#

    /// KEYS: campaign hash, campaigns zset, the tally hash, the results stream, then the keys the audience is
    /// counted from. ARGV: id, document, now, queue key, `lex` (ZLEXCOUNT of the one index, summed over the min and
    /// max pairs that follow) or `card` (ZCARD summed).
    /// 1 created, 0 it existed with this document (a create is idempotent by id), -1 it exists with another (the
    /// id is taken: refused, never a silent drop of the second document). While the shard's outcome counting is
    /// idle (its `until` passed: the driver keeps it half a window ahead while a campaign is counted) it moves the
    /// tally cursor to the stream's end, in the same script as the campaign appears: the counting starts there, not
    /// at the backlog, and an idle scheduler reads and writes nothing.
    public static let create = RedisScript(QueueScripts.prelude + #"""
    local bad = refusal(KEYS[1], 'hash', KEYS[2], 'zset', KEYS[3], 'hash', KEYS[4], 'stream')
    if bad then return bad end
    for k = 5, #KEYS do
      bad = refusal(KEYS[k], 'zset')
      if bad then return bad end
    end
    if redis.call('EXISTS', KEYS[1]) == 1 then
      if redis.call('HGET', KEYS[1], 'doc') ~= ARGV[2] then return -1 end
      return 0
    end
    local size = 0
    if ARGV[5] == 'lex' then
      for j = 6, #ARGV - 1, 2 do size = size + redis.call('ZLEXCOUNT', KEYS[5], ARGV[j], ARGV[j + 1]) end
    else
      for k = 5, #KEYS do size = size + redis.call('ZCARD', KEYS[k]) end
    end
    if tonumber(redis.call('HGET', KEYS[3], 'until') or '0') < tonumber(ARGV[3]) then
      local last = redis.call('XREVRANGE', KEYS[4], '+', '-', 'COUNT', 1)[1]
      if last then
        redis.call('HSET', KEYS[3], 'results', last[1])
        -- The entries ever added up to the cursor (Redis 7's entries-added), for telling a trimmed gap later.
        local info = redis.call('XINFO', 'STREAM', KEYS[4])
        redis.call('HDEL', KEYS[3], 'passed')
        for j = 1, #info - 1, 2 do
          if info[j] == 'entries-added' then redis.call('HSET', KEYS[3], 'passed', info[j + 1]) end
        end
      end
    end
    redis.call('HSET', KEYS[1], 'doc', ARGV[2], 'state', 'running', 'cursor', '', 'audience', size, 'sent', 0,
               'skipped', 0, 'unrendered', 0, 'repeated', 0, 'cancelled', 0, 'queue', ARGV[4], 'created', ARGV[3])
    redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
    return 1
    """#)

    /// KEYS: campaign hash, queue, campaigns zset, the campaign's sent set, the tally hash, the results stream.
    /// ARGV: id, the cursor read from, the cursor after the chunk, "1" when the chunk ended the audience, skipped,
    /// the number of rejections, now, the pacing clock after the chunk ("" when unpaced), "1" when the audience
    /// deduplicates (its devices are checked against the sent set, which holds each device's SHA-1: 40 bytes
    /// whatever the token's length; a device already in it is `repeated`, not pushed); then each rejection (a device its provider could not render for: its device or "",
    /// its field count, its `rejected` result entry's fields, written to the results stream and counted
    /// `unrendered`, so that device too ends with one terminal outcome), then each job as three: its device
    /// (`<platform>\n<token>`, "" when not deduplicated), its `deliver_at` ("" when at once; the jobs pushed are
    /// counted per time in the hash's `due:<ms>`, which the status reads as waiting for their local time, and the
    /// latest such time is kept as `due_max`) and the job. The number of jobs pushed;
    /// -1 the campaign is not running (paused, cancelled, done, gone), -2 its cursor moved (another driver took the
    /// chunk): nothing written. The last chunk marks the shard `done`, drops the sent set and keeps the shard's
    /// outcomes counted for `tallyWindowMs` more, after `due_max` when its held jobs are due later (the hash too
    /// outlives `due_max` by `finishedTTLMs`).
    public static let step = RedisScript(QueueScripts.prelude + countUntil + #"""
    local bad = refusal(KEYS[1], 'hash', KEYS[2], 'list', KEYS[3], 'zset', KEYS[4], 'set', KEYS[5], 'hash', KEYS[6], 'stream')
    if bad then return bad end
    local s = redis.call('HMGET', KEYS[1], 'state', 'cursor')
    if s[1] ~= 'running' then return -1 end
    if s[2] ~= ARGV[2] then return -2 end
    local jobs = {}
    local repeated, rejected = 0, 0
    local at = 10
    for r = 1, tonumber(ARGV[6]) do
      local n = tonumber(ARGV[at + 1])
      if ARGV[at] == '' or redis.call('SADD', KEYS[4], redis.sha1hex(ARGV[at])) == 1 then
        redis.call('XADD', KEYS[6], '*', unpack(ARGV, at + 2, at + 1 + n))
        rejected = rejected + 1
      else
        repeated = repeated + 1
      end
      at = at + 2 + n
    end
    local dues, times = {}, {}
    for i = at, #ARGV - 2, 3 do
      if ARGV[i] == '' or redis.call('SADD', KEYS[4], redis.sha1hex(ARGV[i])) == 1 then
        jobs[#jobs + 1] = ARGV[i + 2]
        local due = ARGV[i + 1]
        if due ~= '' then
          if not dues[due] then times[#times + 1] = due; dues[due] = 0 end
          dues[due] = dues[due] + 1
        end
      else
        repeated = repeated + 1
      end
    end
    if ARGV[9] == '1' then redis.call('PEXPIRE', KEYS[4], \#(sentTTLMs)) end
    local before = dueMax(KEYS[1])
    local latest = before
    for _, due in ipairs(times) do
      redis.call('HINCRBY', KEYS[1], 'due:' .. due, dues[due])
      if tonumber(due) > latest then latest = tonumber(due) end
    end
    if latest > before then redis.call('HSET', KEYS[1], 'due_max', string.format('%d', latest)) end
    local i = 1
    while i <= #jobs do
      local last = math.min(i + 999, #jobs)
      redis.call('LPUSH', KEYS[2], unpack(jobs, i, last))
      i = last + 1
    end
    redis.call('HSET', KEYS[1], 'cursor', ARGV[3])
    if ARGV[8] ~= '' then redis.call('HSET', KEYS[1], 'paced', ARGV[8]) end
    redis.call('HINCRBY', KEYS[1], 'sent', #jobs)
    redis.call('HINCRBY', KEYS[1], 'skipped', tonumber(ARGV[5]))
    redis.call('HINCRBY', KEYS[1], 'unrendered', rejected)
    if repeated > 0 then redis.call('HINCRBY', KEYS[1], 'repeated', repeated) end
    if ARGV[4] == '1' then
      redis.call('HSET', KEYS[1], 'state', 'done', 'finished', ARGV[7])
      finished(KEYS[1], ARGV[7])
      redis.call('ZREM', KEYS[3], ARGV[1])
      redis.call('DEL', KEYS[4])
      countUntil(KEYS[5], ARGV[7], KEYS[1])
    end
    return #jobs
    """#)

    /// KEYS: campaign hash, campaigns zset, the campaign's sent set, the tally hash, then the audience's count keys.
    /// ARGV: id, pause|resume|cancel, now, `lex` and the index range's min and max, or `read` and "1" when the
    /// audience count holds the `repeated` devices (`topics`). The state after (a
    /// campaign already past the action keeps its state); nil when there is no such campaign. A cancel counts the
    /// devices never read: the index members after the cursor (`lex`), or the audience less what was read (`card`).
    public static let control = RedisScript(QueueScripts.prelude + countUntil + #"""
    local bad = refusal(KEYS[1], 'hash', KEYS[2], 'zset', KEYS[3], 'set', KEYS[4], 'hash')
    if bad then return bad end
    local s = redis.call('HMGET', KEYS[1], 'state', 'cursor', 'audience', 'sent', 'skipped', 'unrendered', 'repeated')
    local state, cursor = s[1], s[2]
    if not state then return false end
    local action = ARGV[2]
    if action == 'pause' and state == 'running' then
      state = 'paused'
      redis.call('HSET', KEYS[1], 'state', state, 'paused_at', ARGV[3])
      redis.call('PEXPIRE', KEYS[3], \#(sentTTLMs))
      countUntil(KEYS[4], ARGV[3], KEYS[1])
    elseif action == 'resume' and state == 'paused' then
      state = 'running'
      redis.call('HSET', KEYS[1], 'state', state)
      redis.call('HDEL', KEYS[1], 'paused_at')
      redis.call('PEXPIRE', KEYS[3], \#(sentTTLMs))
    elseif action == 'cancel' and (state == 'running' or state == 'paused') then
      local never
      if ARGV[4] == 'lex' then
        local from = ARGV[5]
        if cursor ~= '' then from = '(' .. cursor end
        never = redis.call('ZLEXCOUNT', KEYS[5], from, ARGV[6])
      else
        local read = tonumber(s[4] or 0) + tonumber(s[5] or 0) + tonumber(s[6] or 0)
        if ARGV[5] == '1' then read = read + tonumber(s[7] or 0) end
        never = math.max(0, tonumber(s[3] or 0) - read)
      end
      state = 'cancelled'
      redis.call('HSET', KEYS[1], 'state', state, 'finished', ARGV[3], 'cancelled', never)
      finished(KEYS[1], ARGV[3])
      redis.call('ZREM', KEYS[2], ARGV[1])
      redis.call('DEL', KEYS[3])
      countUntil(KEYS[4], ARGV[3], KEYS[1])
    end
    return state
    """#)

    /// KEYS: the tally hash. ARGV: now. Keeps the shard's outcome counting on for `tallyWindowMs` from now.
    public static let keepCounting = RedisScript(QueueScripts.prelude + countUntil + #"""
    local bad = refusal(KEYS[1], 'hash')
    if bad then return bad end
    countUntil(KEYS[1], ARGV[1])
    return 1
    """#)

    /// KEYS: `<p>:campaigns:new`, `<p>:campaigns:refused`. ARGV: the document, its refusal entry. Takes the
    /// document off the list and records the refusal in one step: 1; 0 when another scheduler took it first, so a
    /// crash in between or two schedulers never record it twice.
    public static let refuse = RedisScript(QueueScripts.prelude + #"""
    local bad = refusal(KEYS[1], 'list', KEYS[2], 'list')
    if bad then return bad end
    if redis.call('LREM', KEYS[1], -1, ARGV[1]) == 0 then return 0 end
    redis.call('LPUSH', KEYS[2], ARGV[2])
    return 1
    """#)

    /// KEYS: the tally hash, then campaign hashes. ARGV: the results cursor read from, the cursor after the
    /// entries read, "1" when entries after the cursor were trimmed before they were read (each campaign hash given
    /// is marked `uncounted`), the entries ever added up to the new cursor (`passed`, "" unknown), then four counts
    /// per campaign hash (delivered, dropped, failed, other). Adds the
    /// counts to the campaigns that exist and moves the cursor: 1; -2 when the cursor moved (another driver counted
    /// those entries), nothing written. So each terminal entry is counted once.
    public static let tally = RedisScript(QueueScripts.prelude + #"""
    local bad = refusal(KEYS[1], 'hash')
    if bad then return bad end
    local cursor = redis.call('HGET', KEYS[1], 'results') or '0-0'
    if cursor ~= ARGV[1] then return -2 end
    local names = {'delivered', 'dropped', 'failed', 'other'}
    for k = 2, #KEYS do
      if redis.call('EXISTS', KEYS[k]) == 1 and redis.call('TYPE', KEYS[k]).ok == 'hash' then
        for n = 1, 4 do
          local count = tonumber(ARGV[4 + (k - 2) * 4 + n])
          if count > 0 then redis.call('HINCRBY', KEYS[k], names[n], count) end
        end
        if ARGV[3] == '1' then redis.call('HSET', KEYS[k], 'uncounted', '1') end
      end
    end
    redis.call('HSET', KEYS[1], 'results', ARGV[2])
    if ARGV[4] == '' then redis.call('HDEL', KEYS[1], 'passed') else redis.call('HSET', KEYS[1], 'passed', ARGV[4]) end
    return 1
    """#)
}

/// The Lua scripts behind the queue. Each runs atomically in Redis; lease deadlines and "is a retry due" come
/// from Redis's `TIME`, so workers' clocks do not decide them (a retry's due time is the worker's clock plus
/// the delay, so a skewed worker shifts only when its own retries fall due). Public so tools (and tests) can run the very same text, e.g. with redis-cli.
///
/// **Nothing half-applied.** Redis does not undo a script's earlier writes when a later command fails, so every
/// script checks the type of each key it will write before its first write. A key of Herald's own of the wrong
/// type (workers, a lease hash, results, retry, dead, dropped tokens, epoch) makes the script change nothing and
/// answer `-HERALD_WRONGTYPE <found> <expected> <key>` (`RedisError.wrongType`). A queue key of the wrong type is
/// skipped instead, and reported in the reply as a flat `{key, found, expected, ...}` list (`QueueKeyProblem`):
/// the other queues go on, and a lease or retry that cannot go back to that queue stays where it is until the key
/// is fixed.
///
/// **Every key a script touches is in its KEYS** (Redis Cluster routes by them and forbids others). Keys known
/// only from data (a lease value's queue, a retry envelope's queue, another worker's lease hash) are declared by
/// the caller from what it knows (its queue keys) or found by a read-only step (`reapScan`); a script that meets
/// a key it was not given touches nothing for what needs it and answers the key in its trailing `needs` list
/// (`{key, ...}`), and the caller calls again declaring it (`QueueCommands.KeyRounds`).
public enum QueueScripts {
    /// Helpers every script starts with. `refusal(k1, type1, k2, type2, ...)`: the error reply for the first key
    /// holding neither its type nor nothing, else nil. `usableList(k)`: whether a queue key can take or give
    /// jobs; a key of another type is noted once in `problems`. `giveBack(hash, {id, value, ...})`: pushes each
    /// lease back to the head of its queue; returns the ids given back and how many stayed (queue key of the
    /// wrong type, or a value without a queue). `hdel(hash, ids)`: HDEL in chunks below Lua's unpack limit.
    /// `declared(k)`: whether `k` is among KEYS; `need(k)` notes an undeclared key once in `needs`.
    /// `undeclaredQueues({id, value, ...})`: notes the queues of lease values that are not declared; true if any.
    /// `indexResult(k, field, stream id, entry JSON, ttl)`: writes one entry into a job's result index, best effort.
    public static let prelude = #"""
    local function refusal(...)
      local a = {...}
      for i = 1, #a, 2 do
        local found = redis.call('TYPE', a[i]).ok
        if found ~= a[i + 1] and found ~= 'none' then
          return redis.error_reply('HERALD_WRONGTYPE ' .. found .. ' ' .. a[i + 1] .. ' ' .. a[i])
        end
      end
      return nil
    end
    local problems = {}
    local kinds = {}
    local function report(k, found, expected)
      problems[#problems + 1] = k
      problems[#problems + 1] = found
      problems[#problems + 1] = expected
    end
    local function usableList(k)
      local t = kinds[k]
      if t == nil then
        t = redis.call('TYPE', k).ok
        kinds[k] = t
        if t ~= 'list' and t ~= 'none' then report(k, t, 'list') end
      end
      return t == 'list' or t == 'none'
    end
    local declaredSet = nil
    local function declared(k)
      if not declaredSet then
        declaredSet = {}
        for _, key in ipairs(KEYS) do declaredSet[key] = true end
      end
      return declaredSet[k] == true
    end
    local needs = {}
    local needSeen = {}
    local function need(k)
      if not needSeen[k] then
        needSeen[k] = true
        needs[#needs + 1] = k
      end
    end
    local function undeclaredQueues(entries)
      local missing = false
      for p = 2, #entries, 2 do
        local nl = string.find(entries[p], '\n', 1, true)
        if nl then
          local q = string.sub(entries[p], 1, nl - 1)
          if not declared(q) then need(q); missing = true end
        end
      end
      return missing
    end
    local function giveBack(hash, entries)
      local gone = {}
      local kept = 0
      for p = 1, #entries, 2 do
        local v = entries[p + 1]
        local nl = string.find(v, '\n', 1, true)
        if not nl then
          report(hash, 'malformed lease ' .. entries[p], 'hash')
          kept = kept + 1
        elseif usableList(string.sub(v, 1, nl - 1)) then
          redis.call('RPUSH', string.sub(v, 1, nl - 1), string.sub(v, nl + 1))
          gone[#gone + 1] = entries[p]
        else
          kept = kept + 1
        end
      end
      return gone, kept
    end
    local function hdel(hash, ids)
      for k = 1, #ids, 2000 do
        redis.call('HDEL', hash, unpack(ids, k, math.min(k + 1999, #ids)))
      end
    end
    local function nowMs()
      local t = redis.call('TIME')
      return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    -- The dataset's epoch: made once (from the caller's random candidate) and kept until Redis loses its data.
    local function epochOf(k, candidate)
      local e = redis.call('GET', k)
      if not e then
        e = candidate
        redis.call('SET', k, e)
      end
      return e
    end
    -- A Herald envelope with `,"epoch":"<epoch>"` added to its header (the mark that it came through Herald's
    -- schedule, see JobEnvelope); any other element unchanged. `epoch` is a function, so the key is read only
    -- when an envelope needs it. Inside the header's JSON strings a quote is escaped, so the first '},"job":'
    -- ends the header.
    local function markEpoch(m, epoch)
      local close = string.sub(m, 1, 11) == '{"herald":{' and string.find(m, '},"job":', 12, true)
      if close and close > 12 then
        return string.sub(m, 1, close - 1) .. ',"epoch":"' .. epoch() .. '"' .. string.sub(m, close)
      end
      return m
    end
    -- The result index (results.index_ttl_seconds): `field` of hash `k` gets the entry's JSON with its stream id
    -- first, and the hash lives `ttl` seconds more. A best-effort extra: an index key of another type (pcall: HSET
    -- changes nothing then) is passed over, so it never holds up a completion.
    local function indexResult(k, field, sid, json, ttl)
      local r = redis.pcall('HSET', k, field, '{"stream_id":"' .. sid .. '",' .. string.sub(json, 2))
      if type(r) == 'number' then redis.call('EXPIRE', k, ttl) end
    end

    """#

    /// KEYS: workers, leases hash, epoch, paused set, queue keys in priority order. ARGV: worker id, lease ttl ms,
    /// max jobs, lease id prefix (ids are prefix..1, prefix..2, ...), a random epoch candidate. Refreshes the
    /// heartbeat, pops up to max jobs (oldest first) from the queue keys that are lists and not in the paused set
    /// (one of another type pauses nothing and is reported), leases each. Returns
    /// {epoch, {lease id, queue key, job, ...}, {problem key, found, expected, ...}, Redis's time in ms}.
    public static let claim = RedisScript(prelude + #"""
    local bad = refusal(KEYS[1], 'zset', KEYS[2], 'hash', KEYS[3], 'string')
    if bad then return bad end
    redis.call('ZADD', KEYS[1], nowMs() + tonumber(ARGV[2]), ARGV[1])
    local epoch = epochOf(KEYS[3], ARGV[5])
    local want = tonumber(ARGV[3])
    local paused = {}
    local pausedType = redis.call('TYPE', KEYS[4]).ok
    if pausedType == 'set' then
      for _, q in ipairs(redis.call('SMEMBERS', KEYS[4])) do paused[q] = true end
    elseif pausedType ~= 'none' then
      report(KEYS[4], pausedType, 'set')
    end
    local n = 0
    local out = {}
    local fields = {}
    for i = 5, #KEYS do
      if want <= 0 then break end
      local jobs = not paused[KEYS[i]] and usableList(KEYS[i]) and redis.call('RPOP', KEYS[i], want)
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
    return {epoch, out, problems, nowMs()}
    """#)

    /// KEYS: workers. ARGV: worker id, lease ttl ms. Returns Redis's time in ms.
    public static let heartbeat = RedisScript(prelude + #"""
    local bad = refusal(KEYS[1], 'zset')
    if bad then return bad end
    local now = nowMs()
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
    return now
    """#)

    /// The reaper's read-only first step. KEYS: workers. ARGV: max workers per call. Returns the ids of up to
    /// twice that many workers whose heartbeat deadline passed (Redis's clock), most overdue first: the caller
    /// declares their lease hashes to `reap`.
    public static let reapScan = RedisScript(prelude + #"""
    local bad = refusal(KEYS[1], 'zset')
    if bad then return bad end
    return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', nowMs(), 'LIMIT', 0, 2 * tonumber(ARGV[1]))
    """#)

    /// KEYS: workers, then one lease hash per worker of ARGV (in that order), then queue keys (the reaper's own
    /// and any the reply before asked for). ARGV: max workers per call, h, h worker ids (from `reapScan`).
    /// Every one of them whose heartbeat deadline still has passed gets each leased job pushed back to the head
    /// of its queue; its hash and entry go. A lease whose queue key holds another type stays in its hash, and so
    /// does the worker's entry, so a later pass returns it once the key is fixed; such workers do not count
    /// against the limit (at most as many again are passed over). A worker with a lease whose queue is not in
    /// KEYS is left untouched and that queue named in `needs`. Returns {jobs, workers, {problem key, found,
    /// expected, ...}, needs}.
    public static let reap = RedisScript(prelude + #"""
    local bad = refusal(KEYS[1], 'zset')
    if bad then return bad end
    local now = nowMs()
    local limit = tonumber(ARGV[1])
    local h = tonumber(ARGV[2])
    local n = 0
    local reaped = 0
    local skipped = 0
    for i = 1, h do
      if reaped >= limit or skipped >= limit then break end
      local w = ARGV[2 + i]
      local key = KEYS[1 + i]
      local score = redis.call('ZSCORE', KEYS[1], w)
      -- Between the scan and now a worker may have renewed its heartbeat (or been reaped): then it is left.
      if score and tonumber(score) <= now then
        local found = redis.call('TYPE', key).ok
        local kept = 0
        local served = true
        if found == 'hash' then
          local entries = redis.call('HGETALL', key)
          if undeclaredQueues(entries) then
            served = false
          else
            local gone
            gone, kept = giveBack(key, entries)
            n = n + #gone
            if kept == 0 then redis.call('DEL', key) else hdel(key, gone) end
          end
        elseif found ~= 'none' then
          -- Not a hash: it holds no leases, so dropping the entry loses nothing; the key is left for a human.
          report(key, found, 'hash')
        end
        if not served then
          -- Left whole for the next call, which declares the queues named in needs.
        elseif kept == 0 then
          redis.call('ZREM', KEYS[1], w)
          reaped = reaped + 1
        else
          skipped = skipped + 1
        end
      end
    end
    return {n, reaped, problems, needs}
    """#)

    /// KEYS: leases hash, then queue keys (the worker's own and any the reply before asked for). ARGV: lease
    /// ids. Puts each still-held job back at the head of its queue (a lease whose queue key holds another type
    /// stays). If a lease's queue is not in KEYS nothing is touched and `needs` names the queues. Returns
    /// {count, {problem key, found, expected, ...}, needs}.
    public static let release = RedisScript(prelude + #"""
    local bad = refusal(KEYS[1], 'hash')
    if bad then return bad end
    local entries = {}
    for k = 1, #ARGV, 2000 do
      local part = redis.call('HMGET', KEYS[1], unpack(ARGV, k, math.min(k + 1999, #ARGV)))
      for p = 1, #part do
        if part[p] then
          entries[#entries + 1] = ARGV[k + p - 1]
          entries[#entries + 1] = part[p]
        end
      end
    end
    if undeclaredQueues(entries) then return {0, {}, needs} end
    local gone = giveBack(KEYS[1], entries)
    hdel(KEYS[1], gone)
    return {#gone, problems, needs}
    """#)

    /// KEYS: leases hash, then queue keys (as for `release`). ARGV: lease id prefix. Returns to their queues the
    /// jobs of a claim whose reply never arrived (connection lost): the worker does not know them, so nobody
    /// would ever complete them. A lease whose queue key holds another type stays (retire or the reaper returns
    /// it later). If a lease's queue is not in KEYS nothing is touched and `needs` names the queues. Returns
    /// {count, {problem key, found, expected, ...}, needs}.
    public static let releasePrefix = RedisScript(prelude + #"""
    local bad = refusal(KEYS[1], 'hash')
    if bad then return bad end
    local ids = {}
    for _, k in ipairs(redis.call('HKEYS', KEYS[1])) do
      if string.sub(k, 1, #ARGV[1]) == ARGV[1] then ids[#ids + 1] = k end
    end
    local entries = {}
    for k = 1, #ids, 2000 do
      local part = redis.call('HMGET', KEYS[1], unpack(ids, k, math.min(k + 1999, #ids)))
      for p = 1, #part do
        entries[#entries + 1] = ids[k + p - 1]
        entries[#entries + 1] = part[p]
      end
    end
    if undeclaredQueues(entries) then return {0, {}, needs} end
    local gone = giveBack(KEYS[1], entries)
    hdel(KEYS[1], gone)
    return {#gone, problems, needs}
    """#)

    /// KEYS: workers, leases hash, then queue keys (as for `release`). ARGV: worker id. Graceful exit: every
    /// lease back to its queue head, the worker entry removed. If a lease cannot go back (its queue key holds
    /// another type) it stays, and so does the worker entry: once the heartbeat expires the reaper returns it
    /// (after the key is fixed). If a lease's queue is not in KEYS nothing is touched and `needs` names the
    /// queues. Returns {count returned, {problem key, found, expected, ...}, needs}.
    public static let retire = RedisScript(prelude + #"""
    local bad = refusal(KEYS[1], 'zset', KEYS[2], 'hash')
    if bad then return bad end
    local entries = redis.call('HGETALL', KEYS[2])
    if undeclaredQueues(entries) then return {0, {}, needs} end
    local gone, kept = giveBack(KEYS[2], entries)
    if kept == 0 then
      redis.call('DEL', KEYS[2])
      redis.call('ZREM', KEYS[1], ARGV[1])
    else
      hdel(KEYS[2], gone)
    end
    return {#gone, problems, needs}
    """#)

    /// KEYS: leases hash, results, dropped-tokens, retry, dead, epoch, dropped-channels, archive, dead-letter
    /// index (`<p>:dead:ids`), dead-letter counter (`<p>:dead:seq`), then the queue keys and `<p>:once:<id>` keys the batch touches, each once. ARGV: results max length, dead max
    /// length, count, then per completion: lease id, the epoch it was claimed in, the KEYS index of its queue key
    /// or '', job bytes as claimed, r (its result entries: one, or one per token of a many-token send) and r
    /// times n, n result field/value args, retry due ms or '', retry member, dead entry or '', d and d times m, m
    /// dropped-token field/value args, o (0 or 3) then o idempotency args: the KEYS index of its
    /// `<p>:once:<id>` key, the value it must hold, the value to leave (`QueueScripts.claimOnce`), then e (a
    /// token count) and, when e > 0, a multicast fan-out: envelope header up to the child index, child job
    /// prefix, child job suffix, e tokens (see `Expansion`), then k and k dropped-channel field/value args.
    /// The queue key goes with every fan-out (its children go there; to the retry set, due at once, while that
    /// key holds another type), with every hand-back, and with the lease-lost recovery (the job bytes go with the
    /// recovery and with a hand-back as claimed only).
    /// After every completion, the archive section: archive max length, a count, and per archived job the 1-based
    /// index of its completion, k, k archive field/value args (written only when that completion applies).
    /// Then the result index section: its TTL in seconds, a count, and per indexed entry the 1-based index of its
    /// completion and of the entry in it, the KEYS index of its `<p>:result:<id>` hash, the field, the entry's JSON (written only when
    /// that completion's result entry is; see `QueueCommands.appendResultIndex`).
    /// Then the receipts section: a count, and per ticket the 1-based index of its completion, the KEYS indexes of
    /// `<p>:receipts` and `<p>:receipts:jobs`, the member, its due ms and its record (`PendingReceipt`; written
    /// only when that completion applies).
    /// A retry due time of `head` hands the job back to the head of its queue (its queue key goes with it): its
    /// bytes as claimed when they are sent, else the retry member with the epoch mark; the retry member goes to the
    /// retry set due at once instead while that key holds another type.
    /// Per completion returns 1 (applied), 2 (lease had been reaped, job taken back from the queue and applied),
    /// 0 (lease lost: another worker holds the job, or this batch was already applied; nothing written),
    /// 3 (lease gone and no job bytes were sent: call again with them for this completion; nothing written) or
    /// 4 (forgotten: lease gone and the dataset's epoch is not the one it was claimed in, so Redis lost its data
    /// since, e.g. a restart without persistence; nothing written) or 5 (a hand-back whose lease was gone: the job
    /// is in its queue already or with the worker that took it from there; nothing written).
    /// Before anything is written, every key the batch would write is checked: one of the wrong type refuses the
    /// whole batch (`HERALD_WRONGTYPE`), so the caller keeps its leases and sends the same batch again later.
    public static let complete = RedisScript(prelude + deadIndex + #"""
    local resultsMax = ARGV[1]
    local deadMax = tonumber(ARGV[2])
    local count = tonumber(ARGV[3])
    -- First pass: where each completion's arguments start, which leases to check, and what the batch writes.
    local starts = {}
    local leases = {}
    local writes = {KEYS[1], 'hash'}
    local results, tokens, retries, deads, channels = false, false, false, false, false
    local onceAt, fanAt, channelAt, retryAt, droppedAt = {}, {}, {}, {}, {}
    -- A section of r entries, each n args then n field/value args: where the args after it start.
    local function skipEntries(at)
      local p = at + 1
      for _ = 1, tonumber(ARGV[at]) do p = p + 1 + tonumber(ARGV[p]) end
      return p
    end
    local i = 4
    for c = 1, count do
      starts[c] = i
      leases[c] = ARGV[i]
      local j = skipEntries(i + 4)
      retryAt[c] = j
      results = results or ARGV[i + 4] ~= '0'
      retries = retries or ARGV[j] ~= ''
      deads = deads or ARGV[j + 2] ~= ''
      tokens = tokens or ARGV[j + 3] ~= '0'
      droppedAt[c] = j + 3
      local o = skipEntries(j + 3)
      onceAt[c] = o
      local e = o + 1 + tonumber(ARGV[o])
      fanAt[c] = e
      local ne = tonumber(ARGV[e])
      -- A fan-out may go to the retry set (when its queue holds another type).
      retries = retries or ne > 0
      i = e + 1
      if ne > 0 then i = e + 4 + ne end
      channelAt[c] = i
      local nc = tonumber(ARGV[i])
      channels = channels or nc > 0
      i = i + 1 + nc
    end
    -- The failed-job archive, a section of its own after the completions.
    local archiveMax = ARGV[i]
    local archived = {}
    local na = tonumber(ARGV[i + 1] or '0')
    local a = i + 2
    for _ = 1, na do
      local k = tonumber(ARGV[a + 1])
      archived[tonumber(ARGV[a])] = {a + 2, k}
      a = a + 2 + k
    end
    if na > 0 then writes[#writes + 1] = KEYS[8]; writes[#writes + 1] = 'stream' end
    -- The receipts section, after the result index's (5 args per indexed entry).
    local receiptsAt = a + 2 + 5 * tonumber(ARGV[a + 1] or '0')
    local nr = tonumber(ARGV[receiptsAt] or '0')
    if nr > 0 then
      writes[#writes + 1] = KEYS[tonumber(ARGV[receiptsAt + 2])]; writes[#writes + 1] = 'zset'
      writes[#writes + 1] = KEYS[tonumber(ARGV[receiptsAt + 3])]; writes[#writes + 1] = 'hash'
    end
    if results then writes[#writes + 1] = KEYS[2]; writes[#writes + 1] = 'stream' end
    if tokens then writes[#writes + 1] = KEYS[3]; writes[#writes + 1] = 'stream' end
    if retries then writes[#writes + 1] = KEYS[4]; writes[#writes + 1] = 'zset' end
    if deads then
      writes[#writes + 1] = KEYS[5]; writes[#writes + 1] = 'list'
      writes[#writes + 1] = KEYS[9]; writes[#writes + 1] = 'hash'
      writes[#writes + 1] = KEYS[10]; writes[#writes + 1] = 'string'
    end
    if channels then writes[#writes + 1] = KEYS[7]; writes[#writes + 1] = 'stream' end
    local bad = refusal(unpack(writes))
    if bad then return bad end
    -- Read only: an epoch key of another type just leaves "forgotten" undecided (old rule applies).
    local epochType = redis.call('TYPE', KEYS[6]).ok
    local epochKnown = epochType == 'string' or epochType == 'none'
    local epoch = epochType == 'string' and redis.call('GET', KEYS[6]) or nil
    -- One HMGET and one HDEL for the batch instead of a call per job.
    local held = {}
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
    local sids = {}
    local backs, backQueues = {}, {}
    local wroteResults = false
    local wroteTokens = false
    local wroteChannels = false
    local wroteArchive = false
    for c = 1, count do
      i = starts[c]
      local claimedIn, job = ARGV[i + 1], ARGV[i + 3]
      local queue = ARGV[i + 2] ~= '' and KEYS[tonumber(ARGV[i + 2])] or nil
      local j = retryAt[c]
      local retryDue, retryMember, deadEntry = ARGV[j], ARGV[j + 1], ARGV[j + 2]
      local code = 1
      if not held[c] then
        if claimedIn ~= '' and epochKnown and claimedIn ~= epoch then
          code = 4
        elseif retryDue == 'head' then
          code = 5
        elseif job == '' then
          -- The job bytes travel only when the caller asks for this recovery (code 3): leases are rarely lost.
          code = 3
        elseif queue and redis.call('TYPE', queue).ok == 'list' and redis.call('LREM', queue, -1, job) > 0 then
          code = 2
        else
          code = 0
        end
      end
      if code == 1 or code == 2 then
        local p = i + 5
        for e = 1, tonumber(ARGV[i + 4]) do
          local n = tonumber(ARGV[p])
          -- Straight from ARGV: building a table per entry cost more than the XADD itself.
          sids[c * 65536 + e] = redis.call('XADD', KEYS[2], '*', unpack(ARGV, p + 1, p + n))
          wroteResults = true
          p = p + 1 + n
        end
        if retryDue == 'head' then
          -- Handed back: pushed to the head of its queue after the loop, in claim order.
          if not backs[queue] then backs[queue] = {}; backQueues[#backQueues + 1] = queue end
          local list = backs[queue]
          list[#list + 1] = {job, retryMember}
        elseif retryDue ~= '' then
          redis.call('ZADD', KEYS[4], retryDue, retryMember)
        end
        if deadEntry ~= '' then pushLetter(KEYS[5], KEYS[9], KEYS[10], deadEntry, deadMax) end
        p = droppedAt[c] + 1
        for _ = 1, tonumber(ARGV[droppedAt[c]]) do
          local n = tonumber(ARGV[p])
          redis.call('XADD', KEYS[3], '*', unpack(ARGV, p + 1, p + n))
          wroteTokens = true
          p = p + 1 + n
        end
        local o = onceAt[c]
        if ARGV[o] ~= '0' then
          -- Only while the key still holds what this completion expects: another copy's claim stays intact.
          local k = KEYS[tonumber(ARGV[o + 1])]
          if redis.call('TYPE', k).ok == 'string' and redis.call('GET', k) == ARGV[o + 2] then
            redis.call('SET', k, ARGV[o + 3], 'KEEPTTL')
          end
        end
        local e = fanAt[c]
        local ne = tonumber(ARGV[e])
        if ne > 0 then
          local head, jobHead, jobTail = ARGV[e + 1], ARGV[e + 2], ARGV[e + 3]
          local mark = epoch and (',"epoch":"' .. epoch .. '"') or ''
          local toQueue = usableList(queue)
          local now = (not toQueue) and nowMs() or 0
          -- Last token first: RPUSH puts each at the head, so the first token is taken first.
          local batch = {}
          for t = ne, 1, -1 do
            local child = head .. (t - 1) .. mark .. '},"job":' .. jobHead .. ARGV[e + 3 + t] .. jobTail .. '}'
            if toQueue then
              batch[#batch + 1] = child
              if #batch == 1000 then redis.call('RPUSH', queue, unpack(batch)); batch = {} end
            else
              redis.call('ZADD', KEYS[4], now, child)
            end
          end
          if #batch > 0 then redis.call('RPUSH', queue, unpack(batch)) end
        end
        local ch = channelAt[c]
        local nc = tonumber(ARGV[ch])
        if nc > 0 then
          redis.call('XADD', KEYS[7], '*', unpack(ARGV, ch + 1, ch + nc))
          wroteChannels = true
        end
        local arc = archived[c]
        if arc then
          redis.call('XADD', KEYS[8], '*', unpack(ARGV, arc[1], arc[1] + arc[2] - 1))
          wroteArchive = true
        end
      end
      codes[#codes + 1] = code
    end
    -- Hand-backs, last first: RPUSH puts each at the head, so the one claimed first is taken first again: the job
    -- as claimed when its bytes came, else its envelope with the epoch mark (so its attempt is believed). While a
    -- queue key holds another type (or no epoch is known for an envelope) it goes to the retry set due at once.
    for _, q in ipairs(backQueues) do
      local list = backs[q]
      local toQueue = usableList(q)
      for b = #list, 1, -1 do
        local element = list[b][1]
        if element == '' and epoch then element = markEpoch(list[b][2], function() return epoch end) end
        if toQueue and element ~= '' then
          redis.call('RPUSH', q, element)
        else
          redis.call('ZADD', KEYS[4], nowMs(), list[b][2])
        end
      end
    end
    -- The result index: per job a hash, token -> its latest entry with the stream id.
    local indexTTL = ARGV[a]
    local x = a + 2
    for _ = 1, tonumber(ARGV[a + 1] or '0') do
      local sid = sids[tonumber(ARGV[x]) * 65536 + tonumber(ARGV[x + 1])]
      if sid then indexResult(KEYS[tonumber(ARGV[x + 2])], ARGV[x + 3], sid, ARGV[x + 4], indexTTL) end
      x = x + 5
    end
    -- Tickets: each job that applied waits in the receipts set, its record beside it.
    local r = receiptsAt + 1
    for _ = 1, nr do
      local c = tonumber(ARGV[r])
      if codes[c] == 1 or codes[c] == 2 then
        redis.call('HSET', KEYS[tonumber(ARGV[r + 2])], ARGV[r + 3], ARGV[r + 5])
        redis.call('ZADD', KEYS[tonumber(ARGV[r + 1])], ARGV[r + 4], ARGV[r + 3])
      end
      r = r + 6
    end
    -- Trim once per batch rather than per entry (approximate trimming, as MAXLEN ~ on each XADD would be).
    if wroteResults then redis.call('XTRIM', KEYS[2], 'MAXLEN', '~', resultsMax) end
    if wroteTokens then redis.call('XTRIM', KEYS[3], 'MAXLEN', '~', resultsMax) end
    if wroteChannels then redis.call('XTRIM', KEYS[7], 'MAXLEN', '~', resultsMax) end
    if wroteArchive then redis.call('XTRIM', KEYS[8], 'MAXLEN', '~', archiveMax) end
    return codes
    """#)

    /// Idempotency, decided for a batch of freshly claimed producer jobs. KEYS: `<p>:once:<job id>` per job,
    /// then lease hashes: the caller's own, and any the reply before asked for. ARGV: window ms, leases key
    /// prefix, worker id, then per job its lease id. A key holds who sends the job (`<worker id>\n<lease id>`),
    /// `pending` (it waits in the retry set) or `done`, and expires after the window from its first claim. Per
    /// job returns 1 (claimed: missing key, or this very lease asking again after a lost reply, or a holder whose
    /// lease is gone: it was reaped and this is the job back from the queue), 0 (duplicate: done, pending, or
    /// held by a live lease) or the key's type when it holds another (the job goes out unchecked, the key is
    /// reported like every other wrong-typed key).
    /// Copies of one id in the same batch: the first claims, the others are duplicates. Returns {codes, needs}:
    /// when a holder's lease hash is not in KEYS, nothing is written, codes is empty and `needs` names the hashes.
    public static let claimOnce = RedisScript(prelude + #"""
    local window, prefix, me = ARGV[1], ARGV[2], ARGV[3]
    local count = #ARGV - 3
    -- Read every key first: a holder's lease hash must be declared before anything is written.
    local types, values, seen = {}, {}, {}
    for i = 1, count do
      -- A second copy of an id consults the first copy's lease, in this worker's own hash.
      if seen[KEYS[i]] and not declared(prefix .. me) then need(prefix .. me) end
      seen[KEYS[i]] = true
      local t = redis.call('TYPE', KEYS[i]).ok
      types[i] = t
      if t == 'string' then
        local v = redis.call('GET', KEYS[i])
        values[i] = v
        local nl = string.find(v, '\n', 1, true)
        if nl and v ~= me .. '\n' .. ARGV[3 + i] and not declared(prefix .. string.sub(v, 1, nl - 1)) then
          need(prefix .. string.sub(v, 1, nl - 1))
        end
      end
    end
    if #needs > 0 then return {{}, needs} end
    -- What this call set, so a second copy of an id sees the first copy's claim.
    local wrote = {}
    local out = {}
    for i = 1, count do
      local k = KEYS[i]
      local holder = me .. '\n' .. ARGV[3 + i]
      local t, v = types[i], values[i]
      if wrote[k] then t, v = 'string', wrote[k] end
      local code = 1
      if t == 'none' then
        redis.call('SET', k, holder, 'PX', window)
        wrote[k] = holder
      elseif t ~= 'string' then
        code = t
      elseif v == 'done' or v == 'pending' then
        code = 0
      elseif v ~= holder then
        local nl = string.find(v, '\n', 1, true)
        local alive = false
        if nl then
          local hash = prefix .. string.sub(v, 1, nl - 1)
          alive = redis.call('TYPE', hash).ok == 'hash' and redis.call('HEXISTS', hash, string.sub(v, nl + 1)) == 1
        end
        if alive then
          code = 0
        else
          redis.call('SET', k, holder, 'KEEPTTL')
          wrote[k] = holder
        end
      end
      out[i] = code
    end
    return {out, needs}
    """#)

    /// KEYS: retry, epoch, the default queue key, then further queue keys (the caller's own and any the reply
    /// before asked for). ARGV: max moves, a random epoch candidate. Moves due entries (score <= Redis time) to
    /// the head of the queue their envelope names (the default one if none), oldest due taken first, adding
    /// `"epoch":"<dataset epoch>"` to the envelope's header: the mark that it came through Herald's schedule
    /// (a producer's look-alike has none, so its attempt is not believed; see `JobEnvelope`). An entry whose
    /// queue key holds another type stays, due again in a second, so it neither blocks the others nor is lost.
    /// An entry whose queue is not in KEYS is left untouched and its queue named in `needs`.
    /// Returns {moved, next due ms or -1, now ms, {problem key, found, expected, ...}, needs}.
    public static let moveDue = RedisScript(prelude + #"""
    local bad = refusal(KEYS[1], 'zset', KEYS[2], 'string')
    if bad then return bad end
    local now = nowMs()
    local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
    local epoch = nil
    local moved = 0
    for k = #due, 1, -1 do
      local m = due[k]
      local q = string.match(m, '^{"herald":{"queue":"([^"\\]*)"')
      if q == nil or q == '' then q = KEYS[3] end
      if not declared(q) then
        need(q)
      elseif usableList(q) then
        local element = markEpoch(m, function()
          epoch = epoch or epochOf(KEYS[2], ARGV[2])
          return epoch
        end)
        redis.call('RPUSH', q, element)
        redis.call('ZREM', KEYS[1], m)
        moved = moved + 1
      else
        redis.call('ZADD', KEYS[1], 'XX', now + 1000, m)
      end
    end
    local nxt = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    local nextDue = -1
    if #nxt > 0 then nextDue = tonumber(nxt[2]) end
    return {moved, nextDue, now, problems, needs}
    """#)

    /// KEYS: archive, results, epoch, then the batch's queue keys, each once. ARGV: results max length, a random
    /// epoch candidate, count, then per job: its archive stream id, the KEYS index of its queue key, the envelope
    /// to queue (attempt 1, Herald's id), n, n result field/value args (the `replayed` entry). Per job,
    /// atomically: if the archive entry is still there and the queue key is a list, the entry is deleted, the
    /// envelope (with the epoch mark, as the scheduler adds it) goes to the back of its queue like a producer's
    /// job, and the result entry is written. Returns per job 1 (replayed), 0 (no longer in the archive: replayed
    /// already or trimmed) or -1 (queue key of another type: stays archived), then {problem key, found,
    /// expected, ...}.
    public static let replay = RedisScript(prelude + #"""
    local bad = refusal(KEYS[1], 'stream', KEYS[2], 'stream', KEYS[3], 'string')
    if bad then return bad end
    local epoch = nil
    local function currentEpoch()
      epoch = epoch or epochOf(KEYS[3], ARGV[2])
      return epoch
    end
    local codes = {}
    local wrote = false
    local i = 4
    for c = 1, tonumber(ARGV[3]) do
      local id, queue, envelope, n = ARGV[i], KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2], tonumber(ARGV[i + 3])
      local code = 0
      if #redis.call('XRANGE', KEYS[1], id, id) == 0 then
        code = 0
      elseif not usableList(queue) then
        code = -1
      else
        redis.call('XDEL', KEYS[1], id)
        redis.call('LPUSH', queue, markEpoch(envelope, currentEpoch))
        if n > 0 then
          redis.call('XADD', KEYS[2], '*', unpack(ARGV, i + 4, i + 3 + n))
          wrote = true
        end
        code = 1
      end
      codes[c] = code
      i = i + 4 + n
    end
    if wrote then redis.call('XTRIM', KEYS[2], 'MAXLEN', '~', ARGV[1]) end
    return {codes, problems}
    """#)
    /// The dead-letter index, for the scripts that write or remove letters (docs/queue-design.md, "Dead letters").
    /// Every letter a worker of this version writes starts `{"seq":<n>,` (n from `<p>:dead:seq`, so seqs fall
    /// from the head of `<p>:dead` to its tail), and `<p>:dead:ids` maps its id, as written in the letter
    /// (JSON-escaped), to the seqs of its letters, space separated. `letterSeq(e)`, `letterID(e)`: read them (nil
    /// when absent: letters written before the index). `unindexLetter(ids, e)`: takes a letter out of the index.
    /// `pushLetter(dead, ids, seq, entry, max)`: stamps, pushes and indexes a letter, then trims the list to `max`
    /// and unindexes what the trim drops. `locate(get, seq, lo, hi)`: binary search of positions lo..hi (`get(i)`
    /// gives the letter at i) for the letter with that seq: its position and bytes, or nil; a run of up to 64
    /// unstamped letters is stepped over, a longer one gives nil.
    static let deadIndex = #"""
    local function letterSeq(e)
      return tonumber(string.match(string.sub(e, 1, 32), '^{"seq":(%d+),'))
    end
    -- Inside JSON strings quotes are escaped, so the first ',"id":"' is the id field; the id ends at the first
    -- quote preceded by an even number of backslashes. Reason (4 KiB at most) and time come before it.
    local function letterID(e)
      local head = string.sub(e, 1, 65536)
      local s = string.find(head, ',"id":"', 1, true)
      if not s then return nil end
      local i = s + 7
      local j = i
      while true do
        local q = string.find(head, '"', j, true)
        if not q then return nil end
        local b = q - 1
        while b >= i and string.byte(head, b) == 92 do b = b - 1 end
        if (q - 1 - b) % 2 == 0 then return string.sub(head, i, q - 1) end
        j = q + 1
      end
    end
    local function unindexLetter(ids, e)
      local seq = letterSeq(e)
      local id = seq and letterID(e)
      if not id then return end
      local v = redis.call('HGET', ids, id)
      if not v then return end
      local rest = {}
      for s in string.gmatch(v, '%d+') do
        if tonumber(s) ~= seq then rest[#rest + 1] = s end
      end
      if #rest == 0 then redis.call('HDEL', ids, id) else redis.call('HSET', ids, id, table.concat(rest, ' ')) end
    end
    local function pushLetter(dead, ids, seqKey, entry, max)
      local seq = redis.call('INCR', seqKey)
      local e = '{"seq":' .. seq .. ',' .. string.sub(entry, 2)
      redis.call('LPUSH', dead, e)
      local id = letterID(e)
      if id then
        local v = redis.call('HGET', ids, id)
        redis.call('HSET', ids, id, v and (v .. ' ' .. seq) or tostring(seq))
      end
      local over = redis.call('LLEN', dead) - max
      if over > 0 then
        for _, old in ipairs(redis.call('LRANGE', dead, -over, -1)) do unindexLetter(ids, old) end
        redis.call('LTRIM', dead, 0, max - 1)
      end
    end
    local function locate(get, seq, lo, hi)
      while lo <= hi do
        local mid = math.floor((lo + hi) / 2)
        local j, s, e = mid, nil, nil
        while j <= hi and j < mid + 64 do
          e = get(j)
          s = letterSeq(e)
          if s then break end
          j = j + 1
        end
        if not s then
          j = mid - 1
          while j >= lo and j > mid - 64 do
            e = get(j)
            s = letterSeq(e)
            if s then break end
            j = j - 1
          end
          if not s then return nil end
        end
        if s == seq then return j, e end
        if s > seq then lo = j + 1 else hi = j - 1 end
      end
      return nil
    end

    """#

    /// KEYS: dead, sweep, ids. ARGV: ids as written in letters (JSON-escaped). Read only: finds each id's letters
    /// through the index in `<p>:dead` followed by `<p>:dead:sweep` (one list while a purge or requeue runs:
    /// seqs still fall along it). Returns {argument index, letter, ...}; stale index entries are skipped.
    public static let deadFind = RedisScript(prelude + deadIndex + #"""
    local nd = redis.call('LLEN', KEYS[1])
    local n = nd + redis.call('LLEN', KEYS[2])
    local function get(i)
      if i < nd then return redis.call('LINDEX', KEYS[1], i) end
      return redis.call('LINDEX', KEYS[2], i - nd)
    end
    local found = {}
    for a = 1, #ARGV do
      local v = redis.call('HGET', KEYS[3], ARGV[a])
      if v then
        for s in string.gmatch(v, '%d+') do
          local p, e = locate(get, tonumber(s), 0, n - 1)
          if p then
            found[#found + 1] = a
            found[#found + 1] = e
          end
        end
      end
    end
    return found
    """#)

    /// KEYS: dead, ids, the queue (requeue only). ARGV: `p` (purge) or `r` (requeue), count, then per letter its
    /// exact bytes and its job. Each letter still listed is removed, from the nearer end of the list (found by
    /// its seq; an unstamped one from the tail, where older workers' letters are), and unindexed; on requeue its
    /// job is pushed onto the queue as a producer pushes (LPUSH) in the same script. With a queue key of another
    /// type nothing moves. Returns {codes (1 done, 0 no longer listed, -1 kept), problems}.
    public static let deadRemove = RedisScript(prelude + deadIndex + #"""
    local bad = refusal(KEYS[1], 'list', KEYS[2], 'hash')
    if bad then return bad end
    local requeue = ARGV[1] == 'r'
    local usable = not requeue or usableList(KEYS[3])
    local n = redis.call('LLEN', KEYS[1])
    local function get(i) return redis.call('LINDEX', KEYS[1], i) end
    local codes = {}
    for c = 1, tonumber(ARGV[2]) do
      local e, job = ARGV[2 * c + 1], ARGV[2 * c + 2]
      local seq = letterSeq(e)
      local code = 0
      if not usable then
        code = -1
      else
        local dir = -1
        if seq then
          local p = locate(get, seq, 0, n - 1)
          if p and p < n / 2 then dir = 1 end
          if not p then dir = nil end
        end
        if dir and redis.call('LREM', KEYS[1], dir, e) == 1 then
          n = n - 1
          unindexLetter(KEYS[2], e)
          if requeue then redis.call('LPUSH', KEYS[3], job) end
          code = 1
        end
      end
      codes[c] = code
    end
    return {codes, problems}
    """#)

    /// KEYS: dead, sweep, lock. ARGV: token, lock ms. Starts a purge or requeue pass (`DeadLetters.sweep`): takes
    /// the lock (refused while another token holds it: {'busy', ms left}); a sweep list left by a pass that died
    /// must first go back ({'restore', its length}: `deadRestore`, then start again); else renames the list to
    /// `<p>:dead:sweep` (O(1)), so workers' new letters go to a fresh `<p>:dead`, and answers {'started', length}.
    public static let deadSweepStart = RedisScript(prelude + #"""
    local bad = refusal(KEYS[1], 'list', KEYS[2], 'list', KEYS[3], 'string')
    if bad then return bad end
    local holder = redis.call('GET', KEYS[3])
    if holder and holder ~= ARGV[1] then return {'busy', redis.call('PTTL', KEYS[3])} end
    redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
    if redis.call('EXISTS', KEYS[2]) == 1 then return {'restore', redis.call('LLEN', KEYS[2])} end
    if redis.call('EXISTS', KEYS[1]) == 0 then return {'started', 0} end
    redis.call('RENAME', KEYS[1], KEYS[2])
    return {'started', redis.call('LLEN', KEYS[2])}
    """#)

    /// KEYS: sweep, dead, lock, ids, the queue (requeue only). ARGV: token, lock ms, n, then per letter of the n at
    /// the head of the sweep list (newest first): its action (`k` keep, `p` purge, `r` requeue), its length in
    /// bytes, its job (`r`) or ''. Letters purged or requeued leave the list and the index (a requeued job is
    /// LPUSHed onto the queue in this script); kept ones are RPUSHed onto `<p>:dead`'s tail, where they were
    /// relative to every newer letter. Returns {status, done, kept for a queue of another type, problems}: status 1
    /// applied, -1 the head is not what the caller read (nothing done), -2 the lock is another's (nothing done).
    public static let deadSweepStep = RedisScript(prelude + deadIndex + #"""
    local bad = refusal(KEYS[1], 'list', KEYS[2], 'list', KEYS[3], 'string', KEYS[4], 'hash')
    if bad then return bad end
    if redis.call('GET', KEYS[3]) ~= ARGV[1] then return {-2, 0, 0, problems} end
    local n = tonumber(ARGV[3])
    local window = redis.call('LRANGE', KEYS[1], 0, n - 1)
    if #window ~= n then return {-1, 0, 0, problems} end
    local requeues = false
    for c = 1, n do
      if #window[c] ~= tonumber(ARGV[3 * c + 2]) then return {-1, 0, 0, problems} end
      if ARGV[3 * c + 1] == 'r' then requeues = true end
    end
    local usable = not requeues or usableList(KEYS[5])
    local keep, done, kept = {}, 0, 0
    for c = 1, n do
      local action, e = ARGV[3 * c + 1], window[c]
      if action == 'p' or (action == 'r' and usable) then
        if action == 'r' then redis.call('LPUSH', KEYS[5], ARGV[3 * c + 3]) end
        unindexLetter(KEYS[4], e)
        done = done + 1
      else
        if action == 'r' then kept = kept + 1 end
        keep[#keep + 1] = e
      end
    end
    redis.call('LTRIM', KEYS[1], n, -1)
    if #keep > 0 then redis.call('RPUSH', KEYS[2], unpack(keep)) end
    redis.call('PEXPIRE', KEYS[3], ARGV[2])
    return {1, done, kept, problems}
    """#)

    /// KEYS: sweep, dead, lock. ARGV: token, lock ms, max. Moves up to max letters from the sweep list's head to
    /// `<p>:dead`'s tail, unchanged (a pass that stops, or one left by a pass that died). Returns how many are
    /// left, or -2 when the lock is another's (nothing moved).
    public static let deadRestore = RedisScript(prelude + #"""
    local bad = refusal(KEYS[1], 'list', KEYS[2], 'list', KEYS[3], 'string')
    if bad then return bad end
    if redis.call('GET', KEYS[3]) ~= ARGV[1] then return -2 end
    local moved = redis.call('LPOP', KEYS[1], tonumber(ARGV[3]))
    if moved then redis.call('RPUSH', KEYS[2], unpack(moved)) end
    redis.call('PEXPIRE', KEYS[3], ARGV[2])
    return redis.call('LLEN', KEYS[1])
    """#)

    /// KEYS: lock. ARGV: token. Ends a pass: deletes the lock if it is still this token's. Returns 1 or 0.
    public static let deadSweepEnd = RedisScript(prelude + #"""
    local bad = refusal(KEYS[1], 'string')
    if bad then return bad end
    if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
    return redis.call('DEL', KEYS[1])
    """#)

    /// KEYS: retry, results, then the batch's `<p>:once:<id>` and `<p>:result:<id>` keys, each once. ARGV: results
    /// max length, count, the result index TTL in seconds (0: none), then per job: its retry-set member (exact
    /// bytes), the KEYS index of its once key or 0, n, n result field/value args (the `cancelled` entry), the KEYS
    /// index of its result index key or 0 and, when not 0, the index field and the entry's JSON (as `complete`'s
    /// result index). Per job, atomically: if the member is still in the retry set it is removed, the entry written
    /// (and indexed), and a once key that says `pending` (the job waited there under idempotency) becomes `done`
    /// (keeping its expiry), so a later copy of the id is a duplicate as after any terminal outcome. Returns per
    /// job 1 (cancelled) or 0 (no longer in the retry set: moved to its queue meanwhile, or cancelled already), then
    /// problems.
    public static let cancelScheduled = RedisScript(prelude + #"""
    local bad = refusal(KEYS[1], 'zset', KEYS[2], 'stream')
    if bad then return bad end
    local codes = {}
    local wrote = false
    local i = 4
    for c = 1, tonumber(ARGV[2]) do
      local member, once, n = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
      local x = tonumber(ARGV[i + 3 + n])
      local code = 0
      if redis.call('ZREM', KEYS[1], member) == 1 then
        if n > 0 then
          local sid = redis.call('XADD', KEYS[2], '*', unpack(ARGV, i + 3, i + 2 + n))
          wrote = true
          if x > 0 then indexResult(KEYS[x], ARGV[i + 4 + n], sid, ARGV[i + 5 + n], ARGV[3]) end
        end
        if once > 0 and redis.call('TYPE', KEYS[once]).ok == 'string' and redis.call('GET', KEYS[once]) == 'pending' then
          redis.call('SET', KEYS[once], 'done', 'KEEPTTL')
        end
        code = 1
      end
      codes[c] = code
      i = i + 4 + n
      if x > 0 then i = i + 2 end
    end
    if wrote then redis.call('XTRIM', KEYS[2], 'MAXLEN', '~', ARGV[1]) end
    return {codes, problems}
    """#)

    /// KEYS: a queue. Removes every job waiting in it (`herald queue purge`); returns how many. Refused (nothing
    /// removed) when the key holds another type.
    public static let purgeQueue = RedisScript(prelude + #"""
    local bad = refusal(KEYS[1], 'list')
    if bad then return bad end
    local n = redis.call('LLEN', KEYS[1])
    redis.call('DEL', KEYS[1])
    return n
    """#)
}

/// Rate budgets shared by every worker (issue 28): one GCRA per budget, kept in Redis so ten workers together
/// keep the budget one would. A claimed batch's jobs that have budgets are checked in one script call; each job
/// is either allowed now or told the time its budgets reserved for it (it waits in the retry set until then and
/// comes back paid for, `Lease.pacedAt`).
///
/// A budget of N per period spaces sends evenly, one every period/N (GCRA without burst): then any window of the
/// period holds at most N sends, which is what a provider counting in windows of its own checks.
///
/// Each budget is a frontier and a calendar. The frontier (a STRING, the GCRA's theoretical arrival time) says
/// every time before it is taken. The calendar (a ZSET beside it, usually absent) holds reservations beyond
/// the frontier, made for jobs that a stricter budget held far ahead: a job to a device with a long backlog is
/// reserved at the device's next free time in the app's calendar, and the app's frontier stays where it was, so
/// the app's jobs to other devices go on meanwhile instead of queueing behind that backlog.

/// One budget a job's send counts against.
public struct BudgetLimit: Hashable, Sendable {
    /// The budget's key under `<prefix>:budget:`, e.g. `device:<token>:m`; its calendar (if it keeps one) is the
    /// same name under `<prefix>:budgetcal:`.
    public let name: String
    /// One send per this many microseconds.
    public let intervalMicros: Int64
    /// Keeps a calendar: a budget many subjects share (an app's, a queue's), which a narrower budget (a device's)
    /// may hold far ahead. A device budget has none: its own jobs share the wider budgets, so a gap in it would
    /// rarely be used, and a calendar per device would cost a sorted set per token.
    public let calendar: Bool

    public init(name: String, intervalMicros: Int64, calendar: Bool = false) {
        self.name = name
        self.intervalMicros = max(1, intervalMicros)
        self.calendar = calendar
    }

    /// One shard's share of the budget when `shards` keep it apart: the interval times the shard count, the
    /// calendar kept (without it a backlog to one device would hold the app's frontier far ahead).
    public func share(among shards: Int64) -> BudgetLimit {
        BudgetLimit(name: name, intervalMicros: intervalMicros * shards, calendar: calendar)
    }
}

/// The script's word on one job.
public enum BudgetVerdict: Sendable, Equatable {
    case allowed
    /// Over budget now: its budgets reserved `atMillis` (ms since the epoch, Redis's clock) for it; `limit` is the
    /// index, among the job's limits, of the one that held it longest.
    case held(atMillis: Int64, limit: Int)
}

extension QueueScripts {
    /// KEYS: every budget of the batch once (STRING: its frontier in µs), then the calendars of those that keep
    /// one (ZSET of reserved µs, member = score). ARGV: the job count, the budget count, per budget its interval in
    /// µs and its calendar's position in KEYS (0: none), then per job its limit count and their budget positions.
    ///
    /// A time is free in a budget when it is at or after the frontier (or now, whichever is later) and at least
    /// an interval from every calendar entry. Each job takes the earliest time free in all its budgets. In each
    /// budget that time moves the frontier when it is less than 100 ms (or an interval, if longer) ahead of it,
    /// swallowing the calendar entries the frontier reaches, and is a calendar entry otherwise: a gap shorter than
    /// that is given up, as a plain GCRA would, so calendars hold only backlogs worth going around. A frontier of
    /// `x.5` says its calendar has entries; without it the calendar is not read, so budgets without calendars (the
    /// common case) stay a GET and a SET per key. Jobs are decided in order, so a batch's own jobs count against
    /// each other. A key of another type is reported and not used: a bad frontier's jobs go as if the budget were
    /// unset, a bad calendar's budget is a plain GCRA (every reservation moves the frontier). A frontier that is
    /// not a time, or lies more than 3,650 days ahead (no pacing sets one there: it was written by hand or
    /// corrupted), is reported (`QueueKeyProblem.wasReset`) and reset: its budget starts afresh, the bad value
    /// is neither used nor written back.
    /// Answers `{{due ms or 0, limit position or 0, ...}, problems}`.
    public static let budgetCheck = RedisScript(prelude + #"""
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    -- 3,650 days in µs: the furthest ahead a frontier may lie (no budget's pacing gets near it)
    local horizon = 315360000000000
    local n = tonumber(ARGV[2])
    local tat, interval, bad, dirty = {}, {}, {}, {}
    -- ck[i]: budget i's calendar key; cal[i]: true while it may hold entries, false when empty, nil when there is
    -- none (or it is of another type)
    local ck, cal, keep = {}, {}, {}
    local function us(x) return string.format('%.0f', x) end
    -- the time of budget k's first (0) or last (-1) calendar entry, nil when it has none; an entry's member is us(time)
    local function entry(k, at)
      local e = redis.call('ZRANGE', ck[k], at, at, 'WITHSCORES')
      return #e > 0 and tonumber(e[2]) or nil
    end
    for i = 1, n do
      interval[i] = tonumber(ARGV[1 + 2 * i])
      local c = tonumber(ARGV[2 + 2 * i])
      if c > 0 then ck[i] = KEYS[c] end
      local v = redis.pcall('GET', KEYS[i])
      if type(v) == 'table' and v.err then
        bad[i] = true
        report(KEYS[i], redis.call('TYPE', KEYS[i]).ok, 'string')
      else
        tat[i] = tonumber(v) or 0
        if (v and not tonumber(v)) or tat[i] ~= tat[i] or tat[i] > now + horizon then
          -- not a time, or one no pacing could have set: reported and reset, never used or written back
          report(KEYS[i], tonumber(v) and string.format('a time %.0f days ahead', (tat[i] - now) / 86400000000)
            or ('%q (not a time)'):format(tostring(v):sub(1, 32)), 'budget time')
          tat[i] = 0
          dirty[i] = true
        end
        if ck[i] then cal[i] = false end
        if tat[i] % 1 ~= 0 then
          -- a frontier of x.5 says its calendar has entries: only then is the calendar read
          tat[i] = math.floor(tat[i])
          if not ck[i] then
            -- a caller that keeps no calendar for this budget leaves the flag and the key's life as they were
            keep[i] = now + math.max(0, redis.call('PTTL', KEYS[i])) * 1000
          else
            local size = redis.pcall('ZCARD', ck[i])
            if type(size) == 'table' and size.err then
              cal[i] = nil
              report(ck[i], redis.call('TYPE', ck[i]).ok, 'zset')
            elseif size > 0 then
              -- entries an interval in the past can clash with nothing from now on
              redis.call('ZREMRANGEBYSCORE', ck[i], '-inf', '(' .. us(now - interval[i]))
              cal[i] = true
            end
          end
          dirty[i] = true
        end
      end
    end
    local out = {}
    local p = 3 + 2 * n
    for j = 1, tonumber(ARGV[1]) do
      local m = tonumber(ARGV[p])
      local due, by = now, 0
      for l = 1, m do
        local k = tonumber(ARGV[p + l])
        if not bad[k] and tat[k] > due then due = tat[k]; by = l end
      end
      -- step past calendar entries within an interval of `due`, in any of the job's budgets, until none is
      local moved, rounds = true, 0
      while moved and rounds < 1000 do
        moved, rounds = false, rounds + 1
        for l = 1, m do
          local k = tonumber(ARGV[p + l])
          if cal[k] then
            local hit = redis.call('ZRANGEBYSCORE', ck[k], '(' .. us(due - interval[k]), '(' .. us(due + interval[k]),
              'WITHSCORES', 'LIMIT', 0, 1)
            if #hit > 0 then due = tonumber(hit[2]) + interval[k]; by = l; moved = true end
          end
        end
      end
      if moved then
        -- a chain of entries longer than the search: go past the last entry of each calendar instead
        for l = 1, m do
          local k = tonumber(ARGV[p + l])
          local last = cal[k] and entry(k, -1)
          if last and last + interval[k] > due then due = last + interval[k]; by = l end
        end
      end
      for l = 1, m do
        local k = tonumber(ARGV[p + l])
        if not bad[k] then
          local inCalendar = cal[k] ~= nil and due >= math.max(tat[k], now) + math.max(interval[k], 100000)
          if inCalendar then
            local added = redis.pcall('ZADD', ck[k], us(due), us(due))
            if type(added) == 'table' and added.err then
              -- a calendar of another type: this budget is a plain GCRA from now on
              report(ck[k], redis.call('TYPE', ck[k]).ok, 'zset')
              cal[k], inCalendar = nil, false
            else
              cal[k] = true
            end
          end
          if not inCalendar then
            tat[k] = math.max(tat[k], due) + interval[k]
            while cal[k] do
              local first = entry(k, 0)
              if not first then cal[k] = false
              elseif first < tat[k] + interval[k] then
                tat[k] = math.max(tat[k], first + interval[k])
                redis.call('ZREM', ck[k], us(first))
              else break end
            end
          end
          dirty[k] = true
        end
      end
      p = p + m + 1
      if due > now then
        out[#out + 1] = math.ceil(due / 1000)
        out[#out + 1] = by
      else
        out[#out + 1] = 0
        out[#out + 1] = 0
      end
    end
    -- each touched frontier, flagged while its calendar has entries, lives as long as its latest reservation
    for k in pairs(dirty) do
      local until_, value = tat[k], us(tat[k])
      if keep[k] then
        until_ = math.max(until_, keep[k])
        value = us(tat[k]) .. '.5'
      elseif cal[k] then
        local last = entry(k, -1)
        if last then
          -- an entry holds the interval after it too
          until_ = math.max(until_, last + interval[k])
          value = us(tat[k]) .. '.5'
          redis.call('PEXPIRE', ck[k], math.ceil((until_ - now) / 1000) + 1)
        end
      end
      redis.call('SET', KEYS[k], value, 'PX', math.max(1, math.ceil((until_ - now) / 1000) + 1))
    end
    return {out, problems}
    """#)
}

extension QueueCommands {
    /// `jobs`: each job's limits (none for a job without budgets: allowed at no cost). Arguments are encoded in
    /// place: a batch of 512 jobs with a device budget each built ~1,500 small arrays before (about 8,000
    /// instructions a job with the keys' lookups).
    func budgetCheck(_ jobs: [[BudgetLimit]]) -> (RedisScript, [[UInt8]], RESPArguments) {
        let base = keys.prefix + ":budget:"
        var declared = DeclaredKeys([])
        declared.reserveCapacity(jobs.count)
        var budgets: [BudgetLimit] = []
        var perJob = RESPArguments(capacity: jobs.count * 24)
        for limits in jobs {
            perJob.append(limits.count)
            for limit in limits {
                let before = declared.keys.count
                let index = declared.index(of: base + limit.name)
                if declared.keys.count > before { budgets.append(limit) }
                perJob.append(index)
            }
        }
        var args = RESPArguments(capacity: jobs.count * 24 + budgets.count * 16 + 32)
        args.append(jobs.count)
        args.append(budgets.count)
        for budget in budgets {
            args.append(budget.intervalMicros)
            args.append(budget.calendar ? declared.index(of: keys.prefix + ":budgetcal:" + budget.name) : 0)
        }
        args.append(contentsOf: perJob)
        return (QueueScripts.budgetCheck, declared.keys, args)
    }

    static func parseBudgetCheck(_ reply: RESPValue, count: Int) throws(RedisError) -> ([BudgetVerdict], [QueueKeyProblem]) {
        guard let parts = reply.array, parts.count == 2, let codes = parts[0].array, codes.count == count * 2 else {
            throw .protocolError("budgetCheck reply: \(reply)")
        }
        var verdicts: [BudgetVerdict] = []
        verdicts.reserveCapacity(count)
        for j in 0..<count {
            guard let due = codes[2 * j].int, let limit = codes[2 * j + 1].int else { throw .protocolError("budgetCheck reply element") }
            // A time no pacing could have given (the script resets frontiers beyond its horizon) goes now.
            let at = JobEnvelope.plausibleTime(due) ?? 0
            verdicts.append(at == 0 ? .allowed : .held(atMillis: at, limit: max(0, Int(limit) - 1)))
        }
        return (verdicts, try QueueKeyProblem.parse(parts[1]))
    }
}

extension JobQueue {
    /// Checks one batch's budgets in one call (see `QueueScripts.budgetCheck`); the verdicts in `jobs`' order.
    public func checkBudgets(_ jobs: [[BudgetLimit]], completion: @escaping (Result<[BudgetVerdict], RedisError>) -> Void) {
        let call = commands.budgetCheck(jobs)
        connection.evalScript(call.0, keys: call.1, arguments: call.2) { [weak self] result in
            completion(result.mapError { $0.refined() }.flatMap { reply in
                Result { () throws(RedisError) in
                    let (verdicts, problems) = try QueueCommands.parseBudgetCheck(reply, count: jobs.count)
                    for problem in problems { self?.onKeyProblem?(problem) }
                    return verdicts
                }
            })
        }
    }
}

extension BlockingJobQueue {
    /// The same check, blocking (tests and tools).
    public func checkBudgets(_ jobs: [[BudgetLimit]]) throws(RedisError) -> [BudgetVerdict] {
        let call = commands.budgetCheck(jobs)
        let reply: RESPValue
        do { reply = try redis.evalScript(call.0, keys: call.1, args: call.2.decoded) } catch { throw error.refined() }
        let (verdicts, problems) = try QueueCommands.parseBudgetCheck(reply, count: jobs.count)
        for problem in problems { onKeyProblem?(problem) }
        return verdicts
    }
}

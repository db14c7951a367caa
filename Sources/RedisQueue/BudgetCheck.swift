/// Rate budgets shared by every worker (issue 28): one GCRA per budget, kept in Redis so ten workers together
/// keep the budget one would. A claimed batch's jobs that have budgets are checked in one script call; each job
/// is either allowed now or told the time its budgets reserved for it (it waits in the retry set until then and
/// comes back paid for, `Lease.pacedAt`).
///
/// A budget of N per period spaces sends evenly, one every period/N (GCRA without burst): then any window of the
/// period holds at most N sends, which is what a provider counting in windows of its own checks.

/// One budget a job's send counts against.
public struct BudgetLimit: Hashable, Sendable {
    /// The budget's key under `<prefix>:budget:`, e.g. `device:<token>:m`.
    public let name: String
    /// One send per this many microseconds.
    public let intervalMicros: Int64

    public init(name: String, intervalMicros: Int64) {
        self.name = name
        self.intervalMicros = max(1, intervalMicros)
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
    /// KEYS: every budget of the batch once (STRING: the budget's theoretical arrival time in µs). ARGV: the job
    /// count, each key's interval in µs, then per job its limit count and their key positions. Reads each key
    /// once, decides the jobs in order (so a batch's own jobs count against each other) and writes each key
    /// once. A key of another type is reported and not used (its jobs go as if it were unset).
    /// Answers `{{due ms or 0, limit position or 0, ...}, problems}`.
    public static let budgetCheck = RedisScript(prelude + #"""
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    local n = #KEYS
    local tat, interval, bad, dirty = {}, {}, {}, {}
    for i = 1, n do
      interval[i] = tonumber(ARGV[1 + i])
      local v = redis.pcall('GET', KEYS[i])
      if type(v) == 'table' and v.err then
        bad[i] = true
        report(KEYS[i], redis.call('TYPE', KEYS[i]).ok, 'string')
      else
        tat[i] = tonumber(v) or 0
      end
    end
    local out = {}
    local p = 2 + n
    for j = 1, tonumber(ARGV[1]) do
      local m = tonumber(ARGV[p])
      local due, by = now, 0
      for l = 1, m do
        local k = tonumber(ARGV[p + l])
        if not bad[k] and tat[k] > due then due = tat[k]; by = l end
      end
      for l = 1, m do
        local k = tonumber(ARGV[p + l])
        if not bad[k] then
          tat[k] = math.max(tat[k], due) + interval[k]
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
    for k in pairs(dirty) do
      redis.call('SET', KEYS[k], string.format('%.0f', tat[k]), 'PX', math.ceil((tat[k] - now) / 1000) + 1)
    end
    return {out, problems}
    """#)
}

extension QueueCommands {
    /// `jobs`: each job's limits (none for a job without budgets: allowed at no cost).
    func budgetCheck(_ jobs: [[BudgetLimit]]) -> Call {
        let base = keys.prefix + ":budget:"
        var declared = DeclaredKeys([])
        var intervals: [[UInt8]] = []
        var perJob: [[UInt8]] = []
        for limits in jobs {
            perJob.append(Array(String(limits.count).utf8))
            for limit in limits {
                let before = declared.keys.count
                let index = declared.index(of: base + limit.name)
                if declared.keys.count > before { intervals.append(Array(String(limit.intervalMicros).utf8)) }
                perJob.append(Array(String(index).utf8))
            }
        }
        return (QueueScripts.budgetCheck, declared.keys, [Array(String(jobs.count).utf8)] + intervals + perJob)
    }

    static func parseBudgetCheck(_ reply: RESPValue, count: Int) throws(RedisError) -> ([BudgetVerdict], [QueueKeyProblem]) {
        guard let parts = reply.array, parts.count == 2, let codes = parts[0].array, codes.count == count * 2 else {
            throw .protocolError("budgetCheck reply: \(reply)")
        }
        var verdicts: [BudgetVerdict] = []
        verdicts.reserveCapacity(count)
        for j in 0..<count {
            guard let due = codes[2 * j].int, let limit = codes[2 * j + 1].int else { throw .protocolError("budgetCheck reply element") }
            verdicts.append(due == 0 ? .allowed : .held(atMillis: due, limit: max(0, Int(limit) - 1)))
        }
        return (verdicts, try QueueKeyProblem.parse(parts[1]))
    }
}

extension JobQueue {
    /// Checks one batch's budgets in one call (see `QueueScripts.budgetCheck`); the verdicts in `jobs`' order.
    public func checkBudgets(_ jobs: [[BudgetLimit]], completion: @escaping (Result<[BudgetVerdict], RedisError>) -> Void) {
        let call = commands.budgetCheck(jobs)
        connection.evalScript(call.0, keys: call.1, args: call.2) { [weak self] result in
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
        do { reply = try redis.evalScript(call.0, keys: call.1, args: call.2) } catch { throw error.refined() }
        let (verdicts, problems) = try QueueCommands.parseBudgetCheck(reply, count: jobs.count)
        for problem in problems { onKeyProblem?(problem) }
        return verdicts
    }
}

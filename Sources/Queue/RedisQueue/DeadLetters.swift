import Basics
import Foundation

/// Which dead letters `herald dead` lists, requeues or purges. Every given criterion must hold; within one (several
/// reasons, apps, ids) any value may match.
public struct DeadLetterFilter: Sendable {
    /// Reason prefixes: `bad_token` matches `bad_token: "token" must be ...`.
    public var reasons: [String] = []
    /// The `app` the job names (a job whose bytes are not a JSON object names none).
    public var apps: Set<String> = []
    public var ids: Set<String> = []
    /// Dead-lettered at or before / at or after, ms since the epoch.
    public var until: Int64?
    public var since: Int64?

    public init() {}

    public var isEmpty: Bool { reasons.isEmpty && apps.isEmpty && ids.isEmpty && until == nil && since == nil }

    public func matches(_ letter: DeadLetter) -> Bool {
        (reasons.isEmpty || reasons.contains { letter.entry.reason.hasPrefix($0) })
            && (apps.isEmpty || letter.app.map(apps.contains) == true)
            && (ids.isEmpty || letter.entry.id.map(ids.contains) == true)
            && (until.map { letter.entry.at <= $0 } ?? true)
            && (since.map { letter.entry.at >= $0 } ?? true)
    }
}

/// One element of `<prefix>:dead` as read: its exact bytes (what LREM matches), the entry, and the app its job names.
public struct DeadLetter: Sendable {
    public let element: [UInt8]
    public let entry: DeadLetterEntry
    public let app: String?

    public init?(element: [UInt8]) {
        guard let entry = DeadLetterEntry.decode(element) else { return nil }
        self.element = element
        self.entry = entry
        let object = try? JSONSerialization.jsonObject(with: Data(entry.job)) as? [String: Any]
        self.app = object?["app"] as? String
    }

    /// A truncated job lost its tail when it was dead-lettered: it cannot be sent again as the producer wrote it.
    public var requeueable: Bool { !entry.truncated }
}

/// What a requeue or purge did.
public struct DeadLetterReport: Sendable, Equatable {
    /// Moved onto the queue (requeue) or removed (purge).
    public var done = 0
    /// No longer in the list when the script ran (requeued or purged meanwhile, or trimmed).
    public var gone = 0
    /// Kept on the list: the queue key holds another type (named in `problems`).
    public var kept = 0
    /// Kept on the list by a requeue: the job was truncated when it was dead-lettered.
    public var truncated = 0
    public var problems: [QueueKeyProblem] = []
    /// A pass (`sweep`) found another one running (`<p>:dead:lock` held): nothing was done.
    public var busy = false
    /// A pass stopped because `stop` said so (a signal) before it had looked at every letter.
    public var stopped = false
    public init() {}

    public mutating func add(_ other: DeadLetterReport) {
        done += other.done
        gone += other.gone
        kept += other.kept
        truncated += other.truncated
        problems += other.problems
        busy = busy || other.busy
        stopped = stopped || other.stopped
    }
}

/// What a purge or requeue pass does to the letters that match.
public enum DeadLetterAction: Sendable, Equatable {
    case purge
    /// Onto this queue key (the shard's own).
    case requeue(queue: String)
}

/// Reads the dead-letter list and requeues or removes letters, for `herald dead` and tests. Blocking. Every read is
/// paged and every script bounded (a page of letters, a binary search), so none holds Redis for long whatever the
/// list's length (docs/queue-design.md, "Dead letters"). The letters are `<p>:dead` followed by `<p>:dead:sweep`
/// (present while a purge or requeue pass runs, or after one died): newest first.
public enum DeadLetters {
    /// Letters per read and per pass step: a step's script runs well under a millisecond.
    public static let pageSize = 200
    /// A step holds at most about this many bytes of letters (fewer letters when they are large).
    static let pageBytes = 512 * 1024
    /// The pass's lock expires this long after its last step: a pass that died does not block the next for long.
    static let lockMilliseconds = 30_000

    /// An id as the letters carry it (JSON-escaped, without the quotes): the index's field.
    public static func indexField(_ id: String) -> [UInt8] {
        var out: [UInt8] = []
        appendJSONString(BoundedText.truncate(id, maxBytes: ResultEntry.maxTextBytes), to: &out)
        return Array(out.dropFirst().dropLast())
    }

    /// Whether the letter carries a seq (written by a worker with the index).
    static func isStamped(_ element: [UInt8]) -> Bool { element.starts(with: Array(#"{"seq":"#.utf8)) }

    /// Calls `body` with each letter that matches, oldest first, a page at a time (memory: one page). Reads from the
    /// tail: a letter pushed meanwhile comes after; one trimmed meanwhile may shift a page (a letter skipped or
    /// shown twice). Stops early when `stop` answers true. Returns how many matched. Elements that are not
    /// dead-letter entries are skipped.
    @discardableResult
    public static func each(redis: any BlockingRedisCommands, keys: QueueKeys, filter: DeadLetterFilter, stop: () -> Bool = { false },
                            _ body: (DeadLetter) -> Void) throws(RedisError) -> Int {
        var matched = 0
        if !filter.ids.isEmpty {
            for letter in try find(redis: redis, keys: keys, ids: filter.ids) where filter.matches(letter) {
                body(letter)
                matched += 1
            }
            return matched
        }
        for key in [keys.deadSweep, keys.dead] {
            var offset = 0
            while !stop() {
                let page = try redis.command(["LRANGE", key, String(-(offset + pageSize)), String(-(offset + 1))]).array ?? []
                for item in page.reversed() {
                    guard let bytes = item.bytes, let letter = DeadLetter(element: bytes), filter.matches(letter) else { continue }
                    body(letter)
                    matched += 1
                }
                if page.count < pageSize { break }
                offset += pageSize
            }
        }
        return matched
    }

    /// The dead letters that match, oldest first, at most `limit` (the newest `limit` are kept when more match).
    /// Memory: the letters returned and a page. With ids, through the index (`find`).
    public static func select(redis: any BlockingRedisCommands, keys: QueueKeys, filter: DeadLetterFilter, limit: Int = .max) throws(RedisError) -> [DeadLetter] {
        if !filter.ids.isEmpty {
            return Array(try find(redis: redis, keys: keys, ids: filter.ids).filter(filter.matches).suffix(limit))
        }
        var found: [DeadLetter] = []
        keys: for key in [keys.dead, keys.deadSweep] {
            var start = 0
            while found.count < limit {
                let page = try redis.command(["LRANGE", key, String(start), String(start + pageSize - 1)]).array ?? []
                for item in page {
                    guard let bytes = item.bytes, let letter = DeadLetter(element: bytes), filter.matches(letter) else { continue }
                    found.append(letter)
                    if found.count >= limit { break keys }
                }
                if page.count < pageSize { break }
                start += pageSize
            }
        }
        return found.reversed()
    }

    /// The letters of these job ids, oldest first: through `<p>:dead:ids` (a binary search by seq per letter,
    /// `QueueScripts.deadFind`), and for letters written before the index (no seq: the oldest, at the tail) a scan
    /// from the tail that ends at the first stamped letter, so it reads only those.
    public static func find(redis: any BlockingRedisCommands, keys: QueueKeys, ids: Set<String>) throws(RedisError) -> [DeadLetter] {
        guard !ids.isEmpty else { return [] }
        let wanted = Array(ids)
        let reply = try redis.evalScript(QueueScripts.deadFind, keys: [keys.dead, keys.deadSweep, keys.deadIDs].map { Array($0.utf8) },
                                         args: wanted.map(indexField))
        guard let items = reply.array, items.count % 2 == 0 else { throw .protocolError("deadFind reply: \(reply)") }
        var found: [DeadLetter] = []
        for index in stride(from: 0, to: items.count, by: 2) {
            guard let bytes = items[index + 1].bytes else { throw .protocolError("deadFind element: \(items[index + 1])") }
            // The id written is the id truncated; the letter's own id says whether it is the one asked for.
            if let letter = DeadLetter(element: bytes), letter.entry.id.map(ids.contains) == true { found.append(letter) }
        }
        found.sort { ($0.entry.seq ?? 0) < ($1.entry.seq ?? 0) }
        var older: [DeadLetter] = []
        tail: for key in [keys.deadSweep, keys.dead] {
            var offset = 0
            while true {
                let page = try redis.command(["LRANGE", key, String(-(offset + pageSize)), String(-(offset + 1))]).array ?? []
                for item in page.reversed() {
                    guard let bytes = item.bytes else { continue }
                    if isStamped(bytes) { break tail }
                    if let letter = DeadLetter(element: bytes), letter.entry.id.map(ids.contains) == true { older.append(letter) }
                }
                if page.count < pageSize { break }
                offset += pageSize
            }
        }
        return older + found
    }

    /// Pushes each letter's job, exactly as the producer wrote it, onto `queue` as a producer would (LPUSH), and
    /// takes the letter off the list in the same script: a job is requeued once however many tools run at once.
    /// Each letter is found by its seq and removed from the nearer end of the list (`QueueScripts.deadRemove`):
    /// for a few letters (`--id`); `sweep` is the pass over many.
    public static func requeue(_ letters: [DeadLetter], redis: any BlockingRedisCommands, keys: QueueKeys, queue: String) throws(RedisError) -> DeadLetterReport {
        try remove(letters, mode: "r", redis: redis, keys: [keys.dead, keys.deadIDs, queue])
    }

    /// Removes each letter from the list (as `requeue` finds it).
    public static func purge(_ letters: [DeadLetter], redis: any BlockingRedisCommands, keys: QueueKeys) throws(RedisError) -> DeadLetterReport {
        try remove(letters, mode: "p", redis: redis, keys: [keys.dead, keys.deadIDs])
    }

    /// Runs `deadRemove` over `letters`, 20 to a call (each may scan up to half the list in Redis, in C).
    private static func remove(_ letters: [DeadLetter], mode: String, redis: any BlockingRedisCommands, keys: [String]) throws(RedisError) -> DeadLetterReport {
        var report = DeadLetterReport()
        var start = 0
        while start < letters.count {
            let batch = letters[start..<min(letters.count, start + 20)]
            start += batch.count
            var args: [[UInt8]] = [Array(mode.utf8), Array(String(batch.count).utf8)]
            for letter in batch { args += [letter.element, mode == "r" ? letter.entry.job : []] }
            let reply: RESPValue
            do {
                reply = try redis.evalScript(QueueScripts.deadRemove, keys: keys.map { Array($0.utf8) }, args: args)
            } catch {
                throw error.refined()
            }
            guard let parts = reply.array, parts.count == 2, let codes = parts[0].array, codes.count == batch.count else {
                throw .protocolError("dead-letter script reply: \(reply)")
            }
            for code in codes {
                switch code.int {
                case 1: report.done += 1
                case 0: report.gone += 1
                default: report.kept += 1
                }
            }
            report.problems += try QueueKeyProblem.parse(parts[1])
        }
        return report
    }

    /// A purge or requeue pass over every letter, newest first, for `herald dead purge|requeue`: the list is renamed
    /// to `<p>:dead:sweep` (workers' new letters go to a fresh `<p>:dead`), then a page at a time the letters at its
    /// head are read, and one script (`deadSweepStep`) purges or requeues those that match (at most `limit`) and
    /// moves the rest to `<p>:dead`'s tail. Linear in the list; each step a page. One pass at a time per shard
    /// (`<p>:dead:lock`; another finds `busy`). When `stop` answers true (a signal) the pass ends after the step in
    /// progress and moves the letters it has not looked at back, unchanged: each letter is either done or listed.
    public static func sweep(redis: any BlockingRedisCommands, keys: QueueKeys, filter: DeadLetterFilter, limit: Int = .max,
                             action: DeadLetterAction, stop: () -> Bool = { false }) throws(RedisError) -> DeadLetterReport {
        var report = DeadLetterReport()
        let token = Array(String(UInt64.random(in: 1...UInt64.max), radix: 36).utf8)
        let ttl = Array(String(lockMilliseconds).utf8)
        let b = { (s: String) in Array(s.utf8) }
        started: while true {
            let reply = try refined { () throws(RedisError) in
                try redis.evalScript(QueueScripts.deadSweepStart, keys: [b(keys.dead), b(keys.deadSweep), b(keys.deadLock)], args: [token, ttl])
            }
            switch reply.array?.first?.string {
            case "busy"?:
                report.busy = true
                return report
            case "restore"?:
                try restore(redis: redis, keys: keys, token: token)
            case "started"?:
                break started
            default:
                throw .protocolError("deadSweepStart reply: \(reply)")
            }
        }
        var matched = 0
        var size = pageSize
        let queue: String?
        if case .requeue(let key) = action { queue = key } else { queue = nil }
        var stepKeys = [b(keys.deadSweep), b(keys.dead), b(keys.deadLock), b(keys.deadIDs)]
        if let queue { stepKeys.append(b(queue)) }
        while matched < limit {
            if stop() {
                report.stopped = true
                break
            }
            let page = (try redis.command(["LRANGE", keys.deadSweep, "0", String(size - 1)]).array ?? []).compactMap(\.bytes)
            if page.isEmpty { break }
            var args: [[UInt8]] = [token, ttl, b(String(page.count))]
            var bytes = 0
            for element in page {
                bytes += element.count
                var act = "k"
                var job: [UInt8] = []
                if matched < limit, let letter = DeadLetter(element: element), filter.matches(letter) {
                    matched += 1
                    if queue == nil {
                        act = "p"
                    } else if letter.requeueable {
                        act = "r"
                        job = letter.entry.job
                    } else {
                        report.truncated += 1
                    }
                }
                args += [b(act), b(String(element.count)), job]
            }
            let reply = try refined { () throws(RedisError) in try redis.evalScript(QueueScripts.deadSweepStep, keys: stepKeys, args: args) }
            guard let parts = reply.array, parts.count == 4, let status = parts[0].int else { throw .protocolError("deadSweepStep reply: \(reply)") }
            if status == -2 { throw .protocolError("the dead-letter pass lost its lock \(keys.deadLock) (paused longer than \(lockMilliseconds) ms?)") }
            guard status == 1 else { throw .protocolError("the head of \(keys.deadSweep) changed under the pass") }
            report.done += Int(parts[1].int ?? 0)
            report.kept += Int(parts[2].int ?? 0)
            report.problems += try QueueKeyProblem.parse(parts[3])
            // Fewer letters a step when they are large: a step's script copies each once or twice.
            size = max(1, min(pageSize, pageBytes / max(1, bytes / page.count)))
        }
        try restore(redis: redis, keys: keys, token: token)
        _ = try refined { () throws(RedisError) in try redis.evalScript(QueueScripts.deadSweepEnd, keys: [b(keys.deadLock)], args: [token]) }
        return report
    }

    /// Moves what is left of the sweep list back to `<p>:dead`'s tail, 1,000 letters a call.
    private static func restore(redis: any BlockingRedisCommands, keys: QueueKeys, token: [UInt8]) throws(RedisError) {
        let b = { (s: String) in Array(s.utf8) }
        while true {
            let left = try refined { () throws(RedisError) in
                try redis.evalScript(QueueScripts.deadRestore, keys: [b(keys.deadSweep), b(keys.dead), b(keys.deadLock)],
                                     args: [token, b(String(lockMilliseconds)), b("1000")])
            }
            guard let count = left.int else { throw .protocolError("deadRestore reply: \(left)") }
            if count == -2 { throw .protocolError("the dead-letter pass lost its lock \(keys.deadLock)") }
            if count == 0 { return }
        }
    }

    private static func refined(_ call: () throws(RedisError) -> RESPValue) throws(RedisError) -> RESPValue {
        do { return try call() } catch { throw error.refined() }
    }
}

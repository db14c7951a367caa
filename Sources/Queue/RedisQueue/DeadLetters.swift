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
    public var problems: [QueueKeyProblem] = []
    public init() {}
}

/// Reads the dead-letter list and requeues or removes chosen elements (`QueueScripts.deadRequeue`, `deadPurge`), for
/// `herald dead` and tests. Blocking.
public enum DeadLetters {
    /// The dead letters that match, oldest first, at most `limit` (the newest `limit` are kept when more match: the
    /// list is newest first). Reads in pages of 500; elements that are not dead-letter entries are skipped.
    public static func select(redis: any BlockingRedisCommands, keys: QueueKeys, filter: DeadLetterFilter, limit: Int = .max) throws(RedisError) -> [DeadLetter] {
        var found: [DeadLetter] = []
        var start = 0
        while found.count < limit {
            let page = try redis.command(["LRANGE", keys.dead, String(start), String(start + 499)])
            guard let items = page.array, !items.isEmpty else { break }
            for item in items {
                guard let bytes = item.bytes, let letter = DeadLetter(element: bytes), filter.matches(letter) else { continue }
                found.append(letter)
                if found.count >= limit { break }
            }
            if items.count < 500 { break }
            start += 500
        }
        return found.reversed()
    }

    /// Pushes each letter's job, exactly as the producer wrote it, onto `queue` as a producer would (LPUSH), and
    /// takes the letter off the list in the same script: a job is requeued once however many tools run at once.
    public static func requeue(_ letters: [DeadLetter], redis: any BlockingRedisCommands, keys: QueueKeys, queue: String) throws(RedisError) -> DeadLetterReport {
        try run(QueueScripts.deadRequeue, letters, redis: redis, keys: [keys.dead, queue]) { [$0.element, $0.entry.job] }
    }

    /// Removes each letter from the list.
    public static func purge(_ letters: [DeadLetter], redis: any BlockingRedisCommands, keys: QueueKeys) throws(RedisError) -> DeadLetterReport {
        try run(QueueScripts.deadPurge, letters, redis: redis, keys: [keys.dead]) { [$0.element] }
    }

    /// Runs `script` over `letters`, each giving `arguments`; code 1 done, 0 gone, -1 kept (a queue key of another type).
    private static func run(_ script: RedisScript, _ letters: [DeadLetter], redis: any BlockingRedisCommands, keys: [String],
                            arguments: (DeadLetter) -> [[UInt8]]) throws(RedisError) -> DeadLetterReport {
        var report = DeadLetterReport()
        let problems = try BatchedScript.run(script, letters, redis: redis, what: "dead-letter", build: { batch in
            var args: [[UInt8]] = [Array(String(batch.count).utf8)]
            for letter in batch { args += arguments(letter) }
            return (keys.map { Array($0.utf8) }, args)
        }, count: { code in
            switch code {
            case 1: report.done += 1
            case 0: report.gone += 1
            default: report.kept += 1
            }
        })
        report.problems = problems
        return report
    }
}

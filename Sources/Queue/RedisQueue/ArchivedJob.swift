/// One entry of the failed-job archive `<prefix>:archive` (a stream, trimmed like the results): a job that ended
/// `failed` or `token_dropped`, with its bytes exactly as the producer pushed them and why it ended, so
/// `herald replay` can put it back on its queue. Written by the completion script together with the job's
/// result (see `QueueScripts.complete`); the stream id says when.
public struct ArchivedJob: Sendable, Equatable {
    /// Herald's job id (the producer's, or the one Herald made), kept so a replay's results carry it on.
    public var id: String
    public var outcome: ResultEntry.Outcome
    public var reason: String
    /// The queue the job came from: where a replay puts it back.
    public var queue: String
    public var app: String?
    public var token: String?
    /// The attempt it ended on.
    public var attempt: Int
    /// The producer's job bytes (unwrapped from any retry envelope).
    public var job: [UInt8]

    public init(id: String, outcome: ResultEntry.Outcome, reason: String, queue: String, app: String? = nil,
                token: String? = nil, attempt: Int, job: [UInt8]) {
        self.id = id
        self.outcome = outcome
        self.reason = reason
        self.queue = queue
        self.app = app
        self.token = token
        self.attempt = attempt
        self.job = job
    }

    /// Larger jobs are not archived (their result is written as always): the archive's memory stays at most
    /// `archive_max_length` times this. A valid APNs payload is at most 5 KB, so real jobs are far below it.
    public static let maxJobBytes = 64 * 1024

    /// Only these outcomes are archived: the job could not be delivered and might be sent again once its cause
    /// is fixed (a key, an outage). Rejected jobs keep their bytes in the dead-letter list instead.
    public static func archives(_ outcome: ResultEntry.Outcome) -> Bool { outcome == .failed || outcome == .tokenDropped }

    /// Stream field/value pairs, text capped like result entries; the job last and uncut.
    public var fields: [(String, [UInt8])] {
        var out: [(String, [UInt8])] = [("id", Array(ResultEntry.text(id).utf8)), ("outcome", Array(outcome.rawValue.utf8)),
                                         ("reason", Array(ResultEntry.reason(reason).utf8)), ("queue", Array(queue.utf8))]
        if let app { out.append(("app", Array(ResultEntry.text(app).utf8))) }
        if let token { out.append(("token", Array(ResultEntry.text(token).utf8))) }
        out.append(("attempt", Array(String(attempt).utf8)))
        out.append(("job", job))
        return out
    }

    /// Reads an entry back from an XRANGE element `[id, [field, value, ...]]`: the stream id and the job, or
    /// nil when it lacks what a replay needs (id, outcome, queue, job).
    public static func decode(_ reply: RESPValue) -> (streamID: String, job: ArchivedJob)? {
        guard let parts = reply.array, parts.count == 2, let streamID = parts[0].string, let flat = parts[1].array else { return nil }
        var map: [String: [UInt8]] = [:]
        var index = 0
        while index + 1 < flat.count {
            if let field = flat[index].string, let value = flat[index + 1].bytes, map[field] == nil { map[field] = value }
            index += 2
        }
        func text(_ field: String) -> String? { map[field].map { String(decoding: $0, as: UTF8.self) } }
        guard let id = text("id"), let outcome = text("outcome").flatMap(ResultEntry.Outcome.init(rawValue:)),
              let queue = text("queue"), let job = map["job"] else { return nil }
        return (streamID, ArchivedJob(id: id, outcome: outcome, reason: text("reason") ?? "", queue: queue, app: text("app"),
                                      token: text("token"), attempt: Int(text("attempt") ?? "") ?? 1, job: job))
    }
}

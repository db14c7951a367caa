import Basics
import HTTP1
import PushCore
import Reactor
import RedisQueue

/// gorush's sync mode on `POST /api/push` (`"sync": true` or `?sync=true`): the answer waits, at most
/// `sync_timeout_ms`, for each accepted job's outcomes in the job-status index the workers keep
/// (`results.index_ttl_seconds`, the index `GET /v1/jobs/<id>` reads), and carries the failed deliveries in `logs`
/// as gorush's sync mode does; what had no outcome by then is listed under `pending` (docs/api.md).
extension FrontDoor {
    static let syncDefaultMillis = 10_000
    static let syncMaxMillis = 60_000
    /// The most jobs one sync request may wait for (each is read from the index every round).
    static let syncMaxJobs = 1000
    /// How often the index is read while a sync request waits.
    static let syncPollMillis = 100

    /// Reads the index of every accepted entry until each of its devices has a terminal outcome or `deadline`
    /// (monotonic ns) passes, each round only the entries not complete yet; `done` gets the entries read, by the
    /// entry's index.
    func awaitOutcomes(_ entries: [Entry], mapped: [GorushRequest.Job], deadline: UInt64, found: [Int: [[String: String]]] = [:],
                       done: @escaping ([Int: [[String: String]]]) -> Void) {
        let watched = entries.filter { $0.refusal == nil && $0.failure == nil && $0.jobID != nil && !Self.isComplete(mapped[$0.index], found[$0.index] ?? []) }
        var found = found
        var remaining = watched.count
        guard remaining > 0 else { return done(found) }
        for entry in watched {
            let id = entry.jobID!
            let key = shards.shards[shards.shard(forJobID: id)].keys.resultIndex(jobID: id)
            redis.send([Array("HGETALL".utf8), Array(key.utf8)]) { [weak self] result in
                guard let self else { return }
                if case .success(let reply) = result {
                    let items = reply.array ?? []
                    found[entry.index] = stride(from: 1, to: items.count, by: 2).compactMap { items[$0].string.flatMap(Self.flatObject) }
                }
                remaining -= 1
                guard remaining == 0 else { return }
                let complete = watched.allSatisfy { Self.isComplete(mapped[$0.index], found[$0.index] ?? []) }
                if complete || monotonicNanos() >= deadline { return done(found) }
                _ = self.redis.loop.schedule(afterMilliseconds: Self.syncPollMillis) { [weak self] in
                    self?.awaitOutcomes(entries, mapped: mapped, deadline: deadline, found: found, done: done)
                }
            }
        }
    }

    /// Every device of the job (one for a topic job) has a terminal entry.
    static func isComplete(_ job: GorushRequest.Job, _ entries: [[String: String]]) -> Bool {
        entries.filter(isTerminal).count >= max(1, job.tokens.count)
    }

    static func isTerminal(_ entry: [String: String]) -> Bool {
        ResultEntry.Outcome(rawValue: entry["outcome"] ?? "")?.isTerminal ?? false
    }

    /// A job's failed deliveries as gorush's `failed-push` logs, and its devices still without an outcome.
    static func syncLogs(_ job: GorushRequest.Job, id: String, entries: [[String: String]]) -> (logs: [String], pending: [String]) {
        var logs: [String] = []
        var done: Set<String> = []
        for entry in entries where isTerminal(entry) {
            let token = entry["token"] ?? ""
            done.insert(token.lowercased())
            guard errorOutcomes.contains(entry["outcome"] ?? "") else { continue }
            logs.append(gorushLog(job, token: token, error: "\(entry["outcome"] ?? ""): \(entry["reason"] ?? "")"))
        }
        let devices = job.tokens.isEmpty ? [""] : job.tokens
        let pending = devices.filter { !done.contains($0.lowercased()) && !(job.tokens.isEmpty && !done.isEmpty) }.map { token in
            "{\"notification\":\(job.notification),\"platform\":\(jsonEscaped(job.platform)),\"token\":\(jsonEscaped(token)),\"id\":\(jsonEscaped(id))}"
        }
        return (logs, pending)
    }
}

import Basics
import HTTP1

/// gorush's routes (`POST /api/push`, `GET /api/stat/app`) over the same checks, ids, shards and pushes as
/// `POST /v1/jobs`, answered in gorush's shapes (docs/api.md, "gorush compatibility").
extension FrontDoor {
    func gorushPush(_ request: HTTP1Parser.Request, respond: @escaping (HTTP1Server.Response) -> Void) {
        let (queue, key): (String, APIAccess.Key?)
        switch authorize(request) {
        case .success(let allowed): (queue, key) = allowed
        case .failure(let refusal): return respond(refusal.response)
        }
        let mapped: [GorushRequest.Job]
        switch GorushRequest.map(request.body, maxNotifications: settings.maxJobsPerRequest) {
        case .jobs(let jobs): mapped = jobs
        case .refused(let message): return respond(Self.json(400, "{\"message\":\(jsonEscaped(message))}"))
        }
        switch admit(mapped.map(\.bytes), isBatch: true, request: request, queue: queue, key: key) {
        case .failure(let refusal): respond(refusal.response)
        case .success(let entries):
            push(entries) { [weak self] entries in
                guard let self else { return }
                respond(self.gorushAnswer(entries, mapped: mapped, body: request.body))
            }
        }
    }

    /// `{"counts": <devices reached by accepted jobs>, "logs": [failed-push per refused device], "success": "ok"}`;
    /// a 503 with gorush's `message` when Redis did not take every accepted job.
    func gorushAnswer(_ entries: [Entry], mapped: [GorushRequest.Job], body: [UInt8]) -> HTTP1Server.Response {
        var counts = 0
        var logs: [String] = []
        var failed: [String] = []
        for (entry, job) in zip(entries, mapped) {
            var tally = gorushCounts[job.platform] ?? (0, 0)
            defer { gorushCounts[job.platform] = tally }
            if let failure = entry.failure {
                failed.append(failure)
                continue
            }
            guard let refusal = entry.refusal else {
                tally.accepted += 1
                counts += max(1, job.tokens.count)
                continue
            }
            tally.refused += 1
            for token in job.tokens.isEmpty ? [""] : job.tokens {
                logs.append("{\"type\":\"failed-push\",\"platform\":\(jsonEscaped(job.platform)),\"token\":\(jsonEscaped(token)),"
                            + "\"notification\":\(job.notification),\"error\":\(jsonEscaped(refusal))}")
            }
        }
        if !failed.isEmpty {
            return Self.json(503, "{\"message\":\(jsonEscaped("\(failed.count) notification job(s) not queued: \(failed[0])"))}")
        }
        return Self.json(200, "{\"counts\":\(counts),\"logs\":[\(logs.joined(separator: ","))],\"success\":\"ok\"}")
    }

    /// gorush's shape from what this process knows: `queue_usage` is the jobs waiting in every shard's queues
    /// (LLEN), `total_count` the jobs it accepted; `push_success`/`push_error` are jobs this process accepted and
    /// refused per platform (deliveries are the workers' figures: their `/metrics` and the results stream).
    func gorushStat(respond: @escaping (HTTP1Server.Response) -> Void) {
        let keys = routers.values.flatMap(\.shardQueues).sorted()
        let box = LengthSum(remaining: keys.count)
        let finish: (Int) -> Void = { [weak self] usage in
            guard let self else { return }
            let ios = self.gorushCounts["ios"] ?? (0, 0)
            let android = self.gorushCounts["android"] ?? (0, 0)
            let total = self.gorushCounts.values.reduce(0) { $0 + $1.accepted }
            respond(Self.json(200, "{\"version\":\"herald\",\"queue_max\":0,\"queue_usage\":\(usage),\"total_count\":\(total),"
                              + "\"ios\":{\"push_success\":\(ios.accepted),\"push_error\":\(ios.refused)},"
                              + "\"android\":{\"push_success\":\(android.accepted),\"push_error\":\(android.refused)}}"))
        }
        guard !keys.isEmpty else { return finish(0) }
        for key in keys {
            redis.send([Array("LLEN".utf8), Array(key.utf8)]) { result in
                if case .success(let value) = result { box.sum += Int(value.int ?? 0) }
                box.remaining -= 1
                if box.remaining == 0 { finish(box.sum) }
            }
        }
    }

    private final class LengthSum {
        var sum = 0
        var remaining: Int
        init(remaining: Int) { self.remaining = remaining }
    }
}

import Basics
import HTTP1
import Reactor

/// gorush's routes (`POST /api/push`, `GET /api/stat/app`) over the same checks, ids, shards and pushes as
/// `POST /v1/jobs`, answered in gorush's shapes (docs/api.md, "gorush compatibility").
extension FrontDoor {
    /// `markSync`: called when the request waits for outcomes (its metrics label).
    func gorushPush(_ request: HTTP1Parser.Request, markSync: @escaping () -> Void = {}, respond: @escaping (HTTP1Server.Response) -> Void) {
        let (queue, key): (String, APIAccess.Key?)
        switch authorize(request) {
        case .success(let allowed): (queue, key) = allowed
        case .failure(let refusal): return respond(Self.gorushShaped(refusal.response))
        }
        let mapped: [GorushRequest.Job]
        var sync = ["true", "1"].contains(Self.queryItems(request.query)["sync"] ?? "")
        switch GorushRequest.map(request.body, maxNotifications: settings.maxJobsPerRequest, hmsAppIDs: settings.hmsAppIDs) {
        case .jobs(let jobs, let wanted): (mapped, sync) = (jobs, sync || wanted)
        case .refused(let message, let detail): return respond(Self.gorushError(400, message, detail: detail))
        }
        if sync && indexTTLSeconds == 0 {
            return respond(Self.gorushError(400, "sync needs the job status index: results.index_ttl_seconds is 0, so no outcome could be read",
                                            reason: "sync_unavailable"))
        }
        if sync && mapped.count > Self.syncMaxJobs {
            return respond(Self.gorushError(400, "sync waits for at most \(Self.syncMaxJobs) jobs; these notifications make \(mapped.count) (one per Android token): send them without sync or in smaller requests",
                                            reason: "sync_too_large"))
        }
        let waitMillis = min(max(Int(Self.queryItems(request.query)["sync_timeout_ms"] ?? "") ?? Self.syncDefaultMillis, 1), Self.syncMaxMillis)
        for job in mapped where job.refusal != nil && job.platform != "" {
            settings.logger.warning("gorush notification refused", ["notification": .int(job.notification), "field": .string(job.field ?? ""),
                                                                    "platform": .string(job.platform), "reason": .string(job.refusal ?? "")])
        }
        let toAdmit = mapped.filter { $0.refusal == nil }
        switch admit(toAdmit.map(\.bytes), isBatch: true, request: request, queue: queue, key: key) {
        case .failure(let refusal): respond(Self.gorushShaped(refusal.response))
        case .success(let admitted):
            // One entry per mapped job: the refused notifications' beside the admitted jobs', in order.
            var next = admitted.makeIterator()
            let entries = mapped.enumerated().map { index, job -> Entry in
                guard let refusal = job.refusal else { var entry = next.next()!; entry.index = index; return entry }
                return Entry(index: index, refusal: refusal)
            }
            push(entries) { [weak self] entries in
                guard let self else { return }
                let tenant = key.map { self.access.tenant(of: $0) } ?? ""
                guard sync, entries.allSatisfy({ $0.failure == nil }) else { return respond(self.gorushAnswer(entries, mapped: mapped, tenant: tenant)) }
                markSync()
                self.awaitOutcomes(entries, mapped: mapped, deadline: monotonicNanos() &+ UInt64(waitMillis) * 1_000_000) { outcomes in
                    respond(self.gorushAnswer(entries, mapped: mapped, tenant: tenant, outcomes: outcomes))
                }
            }
        }
    }

    /// gorush's error shape: `{"code": <status>, "message": ...}`, with Go's decoding error as `detail` when there is one.
    static func gorushError(_ status: Int, _ message: String, reason: String? = nil, detail: String? = nil) -> HTTP1Server.Response {
        var body = "{\"code\":\(status),\"message\":\(jsonEscaped(message))"
        if let reason { body += ",\"reason\":\(jsonEscaped(reason))" }
        if let detail { body += ",\"detail\":\(jsonEscaped(detail))" }
        return json(status, body + "}")
    }

    /// Herald's own error answer (`{"error":{"code","message"}}`: keys, queues, rates) in gorush's shape, Herald's
    /// code as `reason`; the headers (`WWW-Authenticate`, `Retry-After`) kept.
    static func gorushShaped(_ response: HTTP1Server.Response) -> HTTP1Server.Response {
        guard case .success(let body) = GoJSON.parse(response.body), let error = body["error"] else { return response }
        var shaped = gorushError(response.status, error["message"]?.string ?? "", reason: error["code"]?.string)
        shaped.headers = response.headers
        return shaped
    }

    /// `{"counts": <devices reached by accepted jobs>, "logs": [failed-push per refused device], "success": "ok"}`;
    /// a 503 in gorush's error shape when Redis did not take every accepted job. In sync mode (`outcomes`), each
    /// accepted job's failed deliveries are logs too, and the devices without an outcome yet are under `pending`.
    /// `tenant`: the asking key's tenant id ("" with no keys), whose submissions `GET /api/stat/app` counts.
    func gorushAnswer(_ entries: [Entry], mapped: [GorushRequest.Job], tenant: String = "", outcomes: [Int: [[String: String]]]? = nil) -> HTTP1Server.Response {
        var counts = 0
        var logs: [String] = []
        var pending: [String] = []
        var failed: [String] = []
        for (entry, job) in zip(entries, mapped) {
            var tally = gorushCounts[tenant]?[job.platform] ?? (0, 0)
            defer { gorushCounts[tenant, default: [:]][job.platform] = tally }
            if let failure = entry.failure {
                failed.append(failure)
                continue
            }
            guard let refusal = entry.refusal else {
                tally.accepted += 1
                counts += max(1, job.tokens.count)
                if let outcomes {
                    let (failures, waiting) = Self.syncLogs(job, id: entry.id ?? "", entries: outcomes[entry.index] ?? [])
                    logs += failures
                    pending += waiting
                }
                continue
            }
            tally.refused += 1
            for token in job.tokens.isEmpty ? [""] : job.tokens {
                logs.append(Self.gorushLog(job, token: token, error: refusal))
            }
        }
        if !failed.isEmpty {
            let inDoubt = entries.filter(\.inDoubt).count
            let fate = inDoubt == 0 ? "not queued" : inDoubt == failed.count ? "in doubt (they may be queued)" : "not queued or in doubt (\(inDoubt) may be queued)"
            return Self.gorushError(503, "\(failed.count) notification job(s) \(fate): \(failed[0])")
        }
        let waiting = outcomes == nil ? "" : ",\"pending\":[\(pending.joined(separator: ","))]"
        return Self.json(200, "{\"counts\":\(counts),\"logs\":[\(logs.joined(separator: ","))]\(waiting),\"success\":\"ok\"}")
    }

    /// One of gorush's `failed-push` log entries (logx.LogPushEntry), with the notification's index besides.
    static func gorushLog(_ job: GorushRequest.Job, token: String, error: String) -> String {
        var log = "{\"type\":\"failed-push\",\"platform\":\(jsonEscaped(job.platform)),\"token\":\(jsonEscaped(token)),"
        if !job.notifID.isEmpty { log += "\"notif_id\":\(jsonEscaped(job.notifID))," }
        return log + "\"message\":\(jsonEscaped(job.message)),\"notification\":\(job.notification),\"error\":\(jsonEscaped(error))}"
    }
}

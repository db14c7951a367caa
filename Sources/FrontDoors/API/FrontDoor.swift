import Basics
import DeviceRegistry
import HTTP1
import PushCore
import Reactor
import RedisQueue
import Worker

/// `herald api`'s requests: validate each job with the worker's own intake (`JobCheck`), give it an id when it
/// has none, push the good ones onto their shard's queue (`ShardRouter`, as `herald enqueue` does) and answer once
/// Redis has them. A refused job is never sent to Redis. Stateless: every API process can take any request.
/// Loop-confined (the Redis client's loop).
public final class FrontDoor {
    public struct Settings: Sendable {
        public var maxJobsPerRequest = 1000
        /// gorush's `app_id` (a Huawei app ID, AppGallery Connect's) to the configured Huawei app that has it.
        public var hmsAppIDs: [String: String] = [:]
        /// Where refused gorush notifications are logged, one line each naming the field.
        public var logger = Logger(component: "api")
        /// `api.gorush_metrics`: gorush's metric families on `/metrics` too.
        public var gorushMetrics = false
        public init() {}
    }

    let check: JobCheck
    let access: APIAccess
    let redis: any RedisCommandSender
    let readiness: () -> Bool
    let settings: Settings
    /// One router per configured queue, each keeping its own turn for jobs without an id.
    var routers: [String: ShardRouter]
    let defaultQueue: String
    let shards: QueueShards
    /// `results.index_ttl_seconds`: 0 when workers keep no job status.
    let indexTTLSeconds: Int
    /// The device registry's routes (`/v1/devices/...`); nil while `registry.enabled` is off.
    let deviceRegistry: DeviceRegistryLoop?
    /// The platforms a device may be on: the configuration's providers'.
    let platforms: [Platform]
    /// The configured apps' names: the only apps devices are registered for (a typo is not a new registry, and the
    /// lists the sweeper walks and the metrics' label sets stay as many as the configuration's apps), and a campaign of
    /// another is refused `bad_app`.
    let appNames: Set<String>
    /// `worker.max_schedule_days`: a campaign dated further ahead is refused (`Campaign.check`).
    let maxScheduleDays: Int
    /// What this process accepted and refused, by tenant id ("" with no keys configured) and gorush platform name,
    /// for `GET /api/stat/app`: each key sees its own.
    var gorushCounts: [String: [String: (accepted: Int, refused: Int)]] = [:]
    /// The deliveries `GET /api/stat/app` has counted from the results streams.
    let deliveries = DeliveryTally()
    /// Where the ids given to jobs without one come from: the system's generator (getrandom(2) on Linux), so that
    /// an id can be neither guessed from another nor repeated by another API process.
    private var randomness = SystemRandomNumberGenerator()

    public init(configuration: Configuration, shards: QueueShards, redis: any RedisCommandSender, settings: Settings = Settings(),
                readiness: @escaping () -> Bool) throws {
        check = JobCheck(configuration: configuration)
        access = APIAccess(keys: configuration.api.keys)
        self.redis = redis
        self.settings = settings
        self.readiness = readiness
        var routers: [String: ShardRouter] = [:]
        for queue in shards.configuredQueues { routers[queue] = try ShardRouter(shards: shards, queue: queue) }
        self.routers = routers
        defaultQueue = shards.configuredQueues[0]
        self.shards = shards
        indexTTLSeconds = configuration.results.indexTTLSeconds
        deviceRegistry = configuration.registry.enabled ? DeviceRegistryLoop(redis: redis, shards: shards, settings: configuration.registry) : nil
        platforms = configuration.providers.map { $0.platform }
        appNames = Set(configuration.apps.map(\.name))
        maxScheduleDays = configuration.worker.maxScheduleDays
    }

    let metrics = APIMetrics()
    /// `rejectRequest`'s log lines: a burst of 10, then one a second.
    private var rejectionLog = TokenBucket(rate: 1, capacity: 10)
    private var rejectionsUnlogged = 0
    /// The server's open connections, for `/metrics` (set once the server exists).
    public var openConnections: () -> Int = { 0 }

    /// Answers one request and counts it (route, status, time to the answer).
    public func handle(_ request: HTTP1Parser.Request, respond: @escaping (HTTP1Server.Response) -> Void) {
        let started = monotonicNanos()
        var label = APIMetrics.route(request.path)
        let metrics = self.metrics
        // A sync gorush request waits for deliveries: its own label, so the door's submission latency stays its own.
        route(request, markSync: { label = APIMetrics.syncPushRoute }) { response in
            metrics.request(route: label, status: response.status, nanoseconds: monotonicNanos() &- started)
            respond(response)
        }
    }

    private func route(_ request: HTTP1Parser.Request, markSync: @escaping () -> Void, respond: @escaping (HTTP1Server.Response) -> Void) {
        switch (request.method, request.path) {
        case ("POST", "/v1/jobs"): submit(request, respond: respond)
        case ("POST", "/api/push"): gorushPush(request, markSync: markSync, respond: respond)
        case ("GET", "/api/stat/app"), ("GET", "/api/stat/go"):
            // Behind the key like every `/api` route (issue 52; docs/api.md): its counts are the tenants' business.
            var key: APIAccess.Key?
            switch access.authenticate(request) {
            case .refused(let code, let message):
                return respond(Self.gorushShaped(Self.error(401, code, message, headers: [("WWW-Authenticate", "Bearer")])))
            case .key(let presented): key = presented
            case .open: key = nil
            }
            if request.path == "/api/stat/go" { return respond(runtimeStats()) }
            gorushStat(key: key, respond: respond)
        case ("GET", "/sys/stats"): respond(sysStats())
        case ("GET", "/version"): respond(version())
        case ("GET", let path) where path.hasPrefix(Self.jobsPathPrefix): status(request, respond: respond)
        case (_, let path) where path.hasPrefix(Self.devicesPathPrefix): devices(request, respond: respond)
        case (_, let path) where Self.isCampaignsPath(path): campaigns(request, respond: respond)
        case ("GET", "/metrics") where settings.gorushMetrics:
            refreshDeliveries { [weak self] figures in
                guard let self else { return }
                var out = PrometheusText()
                self.gorushMetrics(queueUsage: figures.queueUsage.values.reduce(0, +), liveWorkers: figures.liveWorkers, to: &out)
                respond(HTTP1Server.Response(status: 200, contentType: PrometheusText.contentType,
                                             body: Array((self.metrics.text(openConnections: self.openConnections(), redisUp: self.readiness()) + out.text).utf8)))
            }
        case ("GET", "/metrics"):
            respond(HTTP1Server.Response(status: 200, contentType: PrometheusText.contentType,
                                         body: Array(metrics.text(openConnections: openConnections(), redisUp: readiness()).utf8)))
        case ("GET", "/healthz"), ("HEAD", "/healthz"): respond(Self.json(200, #"{"status":"ok"}"#))
        case ("GET", "/readyz"), ("HEAD", "/readyz"):
            respond(readiness() ? Self.json(200, #"{"status":"ready"}"#) : Self.json(503, #"{"status":"redis unreachable"}"#))
        case (_, let path) where path.hasPrefix(Self.jobsPathPrefix):
            respond(Self.error(405, "method_not_allowed", "use GET", headers: [("Allow", "GET")]))
        case (_, "/v1/jobs"), (_, "/api/push"): respond(Self.error(405, "method_not_allowed", "use POST", headers: [("Allow", "POST")]))
        case (_, "/healthz"), (_, "/readyz"): respond(Self.error(405, "method_not_allowed", "use GET", headers: [("Allow", "GET, HEAD")]))
        default: respond(Self.error(404, "not_found", "no route \(request.method) \(request.path)"))
        }
    }

    /// `HTTP1Server.HeadCheck`: a request that would carry jobs is authenticated and authorized (key, queue) from its
    /// head, before any byte of its body is read or `100 Continue` is sent (issue 51: a keyless client could make
    /// the API buffer 8 MiB a request). Its rate is taken once the body says how many jobs it holds.
    public func decideFromHead(_ head: HTTP1Parser.Request) -> HTTP1Server.Response? {
        let started = monotonicNanos()
        guard let refusal = refusalFromHead(head) else { return nil }
        // Counted like any answer (a keyless upload refused here is a 401 of its route).
        metrics.request(route: APIMetrics.route(head.path), status: refusal.status, nanoseconds: monotonicNanos() &- started)
        return refusal
    }

    private func refusalFromHead(_ head: HTTP1Parser.Request) -> HTTP1Server.Response? {
        switch (head.method, head.path) {
        case ("POST", "/v1/jobs"):
            if case .failure(let refusal) = authorize(head) { return refusal.response }
        case ("POST", "/api/push"):
            if case .failure(let refusal) = authorize(head) { return Self.gorushShaped(refusal.response) }
        case ("PUT", let path) where path.hasPrefix(Self.devicesPathPrefix), ("POST", let path) where path.hasPrefix(Self.devicesPathPrefix):
            if case .failure(let refusal) = deviceAccess(head) { return refusal.response }
        case ("POST", let path) where Self.isCampaignsPath(path):
            if case .failure(let refusal) = campaignAccess(head) { return refusal.response }
        default:
            // No other route reads a body: one declared is refused now rather than buffered (up to max_body_bytes)
            // for a request that needs no key.
            let length = head.header("content-length") ?? "0"
            if head.header("transfer-encoding") != nil || (length != "0" && !length.allSatisfy { $0 == "0" }) {
                return Self.error(413, "content_too_large", "\(head.method) \(head.path) takes no body")
            }
        }
        return nil
    }

    /// One job's fate within a request.
    struct Entry {
        var index: Int
        /// The id as the producer knows it (named in answers).
        var id: String?
        /// The id the job carries in Redis, in the results and in the status index: `id` scoped by the key's tenant
        /// (`<tenant>/<id>`), or `id` itself when no keys are configured.
        var jobID: String?
        var queue: String?
        /// The configured app it was matched to.
        var app: String?
        var job: [UInt8] = []
        /// Refused by validation (never pushed).
        var refusal: String?
        /// Redis did not take it, or its fate is unknown (`inDoubt`).
        var failure: String?
        /// The push was sent and no answer came (a timeout, a lost connection): it may be in Redis.
        var inDoubt = false
    }

    /// What every job-taking route does first: the queue, the key, and whether it may push there.
    func authorize(_ request: HTTP1Parser.Request) -> Result<(queue: String, key: APIAccess.Key?), Refusal> {
        let queue = Self.queryItems(request.query)["queue"] ?? defaultQueue
        guard routers[queue] != nil else {
            return .failure(Refusal(Self.error(400, "unknown_queue", "queue \(queue.debugDescription) is not one of redis.queues")))
        }
        switch access.authenticate(request) {
        case .open: return .success((queue, nil))
        case .refused(let code, let message): return .failure(Refusal(Self.error(401, code, message, headers: [("WWW-Authenticate", "Bearer")])))
        case .key(let key):
            if !key.queues.isEmpty, !key.queues.contains(queue) {
                return .failure(Refusal(Self.error(403, "forbidden", "key '\(key.name)' may not push to queue \(queue.debugDescription) (its queues: \(key.queues.joined(separator: ", ")))")))
            }
            return .success((queue, key))
        }
    }

    /// The key a request presents: nil with no keys configured, a 401 refusal for a missing or unknown one.
    func authenticated(_ request: HTTP1Parser.Request) -> Result<APIAccess.Key?, Refusal> {
        switch access.authenticate(request) {
        case .open: .success(nil)
        case .refused(let code, let message): .failure(Refusal(Self.error(401, code, message, headers: [("WWW-Authenticate", "Bearer")])))
        case .key(let key): .success(key)
        }
    }

    struct Refusal: Error {
        let response: HTTP1Server.Response
        init(_ response: HTTP1Server.Response) { self.response = response }
    }

    private func submit(_ request: HTTP1Parser.Request, respond: @escaping (HTTP1Server.Response) -> Void) {
        let (queue, key): (String, APIAccess.Key?)
        switch authorize(request) {
        case .success(let allowed): (queue, key) = allowed
        case .failure(let refusal): return respond(refusal.response)
        }
        let jobs: [[UInt8]]
        let isBatch: Bool
        switch JobSubmission.split(request.body, maxJobs: settings.maxJobsPerRequest) {
        case .single(let job): (jobs, isBatch) = ([job], false)
        case .batch(let list): (jobs, isBatch) = (list, true)
        case .unusable(let status, let reason): return respond(Self.error(status, "bad_request", reason))
        }
        let validateOnly = ["true", "1"].contains(Self.queryItems(request.query)["validate_only"] ?? "")
        switch admit(jobs, isBatch: isBatch, request: request, queue: queue, key: key) {
        case .failure(let refusal): respond(refusal.response)
        case .success(let entries) where validateOnly:
            // Every check a worker makes before sending, and nothing queued.
            count(entries.map { var e = $0; e.failure = nil; return e }, validated: true)
            respond(Self.answer(entries, validated: true))
        case .success(let entries): push(entries) { respond(Self.answer($0)) }
        }
    }

    /// The rate, the worker's checks, the ids and the shard of every job, and the key's apps: the entries to push,
    /// or why the whole request is refused.
    func admit(_ jobs: [[UInt8]], isBatch: Bool, request: HTTP1Parser.Request, queue: String, key: APIAccess.Key?) -> Result<[Entry], Refusal> {
        // A key's rate counts sends (issue 51: 50 multicast jobs of 200 tokens were 50, not 10,000): every job is
        // at least one, so too many jobs are refused before any is read.
        if let key, key.ratePerSecond > 0, jobs.count > max(key.burst, key.ratePerSecond) {
            return .failure(Refusal(Self.error(413, "too_many_jobs", "key '\(key.name)' may submit at most \(max(key.burst, key.ratePerSecond)) sends at once (its burst); send fewer per request")))
        }
        let idempotencyKey = request.header("idempotency-key").flatMap { $0.isEmpty ? nil : $0 }
        let tenant = key.map { access.tenant(of: $0) }
        let now = wallClockMillis()
        var entries: [Entry] = []
        entries.reserveCapacity(jobs.count)
        var sends: [Int] = []
        sends.reserveCapacity(jobs.count)
        for (index, job) in jobs.enumerated() {
            var entry = Entry(index: index)
            var verdict = check.check(job, wallMillis: now)
            var bytes = job
            var producerID = verdict.producerID
            if verdict.refusal == nil, let given = producerID, let tenant {
                // The producer's id, scoped by its key's tenant: another key's jobs can neither be suppressed as
                // duplicates of it nor looked up by it (docs/api.md, "Tenancy").
                bytes = JobSubmission.replacingID(job, with: tenant + "/" + given) ?? job
            } else if verdict.refusal == nil && producerID == nil {
                // Every accepted job is answered with its id (for the results stream): the Idempotency-Key when
                // given (one per job of a batch), else a fresh one.
                let id = idempotencyKey.map { isBatch ? "\($0).\(index)" : $0 } ?? nextID()
                producerID = id
                bytes = JobSubmission.withID(job, id: tenant.map { $0 + "/" + id } ?? id)
                if JobSubmission.mayNameID(job) {
                    // Checked again as it will be queued (an `"id": null` member, say, makes the id a duplicate field).
                    verdict = check.check(bytes, wallMillis: now)
                }
            }
            sends.append(verdict.refusal == nil ? verdict.sends : 1)
            if let refusal = verdict.refusal {
                entry.refusal = refusal
            } else {
                entry.id = producerID
                entry.jobID = producerID.map { id in tenant.map { $0 + "/" + id } ?? id }
                entry.app = verdict.app
                entry.queue = routers[queue]!.queueKey(forJobID: entry.jobID)
                entry.job = bytes
            }
            entries.append(entry)
        }
        if let key, key.ratePerSecond > 0 {
            // One send per token of each job (a refused one counts one, as every job did).
            let sends = sends.reduce(0, +)
            if sends > max(key.burst, key.ratePerSecond) {
                return .failure(Refusal(Self.error(413, "too_many_jobs", "key '\(key.name)' may submit at most \(max(key.burst, key.ratePerSecond)) sends at once (its burst); "
                                                   + "these jobs make \(sends) (one per device token): send fewer per request")))
            }
            if let wait = access.take(sends, for: key) {
                return .failure(Refusal(Self.error(429, "rate_limited", "key '\(key.name)' may submit \(key.ratePerSecond) sends a second (burst \(max(key.burst, key.ratePerSecond))); "
                                                   + "these \(sends) (one per device token) fit in \(wait) s", headers: [("Retry-After", String(wait))])))
            }
        }
        if let key, !key.apps.isEmpty {
            // A key that may not send for an app gets nothing queued: an access error is the request's, not a job's.
            let forbidden = entries.filter { $0.refusal == nil && !key.apps.contains($0.app ?? "") }
            if !forbidden.isEmpty {
                let list = forbidden.map { "job \($0.index) (app '\($0.app ?? "")')" }.joined(separator: ", ")
                return .failure(Refusal(Self.error(403, "forbidden", "key '\(key.name)' may not send for \(list); nothing was queued")))
            }
        }
        return .success(entries)
    }

    /// LPUSHes every accepted job (pipelined on the loop); `done` gets the entries once Redis has replied to all.
    func push(_ entries: [Entry], done: @escaping ([Entry]) -> Void) {
        let toPush = entries.indices.filter { entries[$0].refusal == nil }
        guard !toPush.isEmpty else {
            count(entries)
            return done(entries)
        }
        let box = PendingPush(entries: entries, remaining: toPush.count)
        for index in toPush {
            let entry = entries[index]
            redis.send([Self.lpush, Array(entry.queue!.utf8), entry.job]) { result in
                if case .failure(let error) = result {
                    let inDoubt = Self.mayHaveLanded(error)
                    box.entries[index].inDoubt = inDoubt
                    box.entries[index].failure = inDoubt
                        ? "in doubt: LPUSH to \(entry.queue!.debugDescription) got no answer (\(error)), so the job may be queued: send it again with the same id (idempotency makes that safe)"
                        : "not pushed: Redis refused LPUSH to \(entry.queue!.debugDescription) or was not reached: \(error)"
                }
                box.entries[index].job = []
                box.remaining -= 1
                if box.remaining == 0 { self.count(box.entries); done(box.entries) }
            }
        }
    }

    private static let lpush = Array("LPUSH".utf8)

    /// Whether a push that failed with `error` may still have been applied (issue 51: a timed-out push was answered
    /// "not pushed", and was in Redis and delivered).
    static func mayHaveLanded(_ error: RedisError) -> Bool {
        switch error {
        case .connectionLost, .timeout, .closed, .protocolError, .notReplicated: true
        case .notConnected, .connectFailed, .server, .wrongType: false
        }
    }

    private func count(_ entries: [Entry], validated: Bool = false) {
        for entry in entries { metrics.job(refusal: entry.refusal, failed: entry.failure != nil, validated: validated) }
    }

    private final class PendingPush {
        var entries: [Entry]
        var remaining: Int
        init(entries: [Entry], remaining: Int) {
            self.entries = entries
            self.remaining = remaining
        }
    }

    /// 202 when a job was accepted and Redis took every accepted one; 422 when every job was refused; 503 when
    /// Redis failed some (those named under `failed`, with why: a failed LPUSH may or may not have landed).
    /// `validated`: a `validate_only` request, whose good jobs are listed under `valid` (200) and not queued.
    static func answer(_ entries: [Entry], validated: Bool = false) -> HTTP1Server.Response {
        // Appended as bytes: a single job's answer is most of what a small request costs besides the kernel.
        var accepted = 0, failed = 0
        var body: [UInt8] = []
        body.reserveCapacity(64 + entries.count * 64)
        func section(_ name: StaticString, _ include: (Entry) -> Bool, _ fields: (Entry, inout [UInt8]) -> Void) {
            appendStatic(name, to: &body)
            var first = true
            for entry in entries where include(entry) {
                if !first { body.append(UInt8(ascii: ",")) }
                first = false
                appendStatic(#"{"index":"#, to: &body)
                appendDecimal(entry.index, to: &body)
                fields(entry, &body)
                body.append(UInt8(ascii: "}"))
            }
            body.append(UInt8(ascii: "]"))
        }
        for entry in entries where entry.refusal == nil {
            if entry.failure == nil { accepted += 1 } else { failed += 1 }
        }
        section(validated ? #"{"valid":["# : #"{"accepted":["#, { $0.refusal == nil && $0.failure == nil }) { entry, out in
            appendStatic(#","id":"#, to: &out)
            appendJSONString(entry.id ?? "", to: &out)
            appendStatic(#","queue":"#, to: &out)
            appendJSONString(entry.queue ?? "", to: &out)
        }
        section(#","refused":["#, { $0.refusal != nil }) { entry, out in
            appendStatic(#","reason":"#, to: &out)
            appendJSONString(entry.refusal ?? "", to: &out)
        }
        if failed > 0 {
            section(#","failed":["#, { $0.refusal == nil && $0.failure != nil }) { entry, out in
                appendStatic(#","id":"#, to: &out)
                appendJSONString(entry.id ?? "", to: &out)
                appendStatic(#","reason":"#, to: &out)
                appendJSONString(entry.failure ?? "", to: &out)
                appendStatic(entry.inDoubt ? #","in_doubt":true"# : #","in_doubt":false"#, to: &out)
            }
        }
        body.append(UInt8(ascii: "}"))
        let status = failed > 0 ? 503 : accepted == 0 ? 422 : validated ? 200 : 202
        return HTTP1Server.Response(status: status, body: body)
    }

    /// `api-` and 128 random bits in hex.
    func nextID() -> String {
        let hex = Array("0123456789abcdef".utf8)
        var out = Array("api-".utf8)
        out.reserveCapacity(36)
        for _ in 0..<2 {
            let word: UInt64 = randomness.next()
            for shift in stride(from: 60, through: 0, by: -4) { out.append(hex[Int((word >> UInt64(shift)) & 15)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func json(_ status: Int, _ body: String, headers: [(String, String)] = []) -> HTTP1Server.Response {
        HTTP1Server.Response(status: status, body: Array(body.utf8), headers: headers)
    }

    /// `{"error":{"code":..,"message":..}}`, the shape of every error answer.
    public static func error(_ status: Int, _ code: String, _ message: String, headers: [(String, String)] = []) -> HTTP1Server.Response {
        json(status, "{\"error\":{\"code\":\(jsonEscaped(code)),\"message\":\(jsonEscaped(message))}}", headers: headers)
    }

    /// The parser's and the server's own refusals, in the same shape.
    public static func protocolError(_ status: Int, _ message: String) -> HTTP1Server.Response {
        error(status, status == 503 ? "unavailable" : "bad_request", message)
    }

    /// `protocolError`, counted by reason and logged (issue 51: smuggling attempts and other refused requests were
    /// neither), at most `rejectionLogBurst` lines at once and one a second after, the rest counted in the next line.
    public func rejectRequest(_ status: Int, _ message: String) -> HTTP1Server.Response {
        let reason = Self.rejectionReason(status: status, message: message)
        metrics.rejected(reason: reason)
        rejectionsUnlogged += 1
        if rejectionLog.take(1, now: monotonicNanos()) == nil {
            settings.logger.warning("request refused", ["reason": .string(reason), "status": .int(status), "message": .string(message),
                                                        "refused_since_last_line": .int(rejectionsUnlogged - 1)])
            rejectionsUnlogged = 0
        }
        return Self.protocolError(status, message)
    }

    /// A refusal's message as a label of its own fixed set (messages carry numbers and names: never labels).
    static func rejectionReason(status: Int, message: String) -> String {
        let known: [(String, String)] = [
            ("a bare LF", "bare_lf"), ("a bare CR", "bare_cr"), ("a NUL byte", "nul_byte"), ("the request line", "request_line"),
            ("bad method", "method"), ("the request target", "target"), ("more than one Host", "host_twice"),
            ("an HTTP/1.1 request without a Host", "host_missing"), ("more than one Authorization", "authorization_twice"),
            ("Transfer-Encoding: chunked twice", "chunked_twice"), ("both Content-Length and Transfer-Encoding", "length_and_chunked"),
            ("two different Content-Length", "content_length_twice"), ("Content-Length is not", "content_length"),
            ("chunked framing is HTTP/1.1", "chunked_http10"), ("bad header field name", "field_name"),
            ("a header field without a colon", "field_without_colon"), ("a control character", "control_character"),
            ("request head larger", "head_too_large"), ("more than", "too_many"), ("request body larger", "body_too_large"),
            ("too many open connections", "max_connections"), ("accept failed", "accept_failed"),
        ]
        if let found = known.first(where: { message.hasPrefix($0.0) }) { return found.1 }
        switch status {
        case 413: return "body_too_large"
        case 431: return "head_too_large"
        case 501: return "transfer_encoding"
        case 505: return "http_version"
        default: return "other"
        }
    }

    /// `a=1&b=%2F` as a dictionary (percent-decoded; `+` is a space); the first of a repeated name wins.
    static func queryItems(_ query: String) -> [String: String] {
        var items: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = percentDecoded(parts[0])
            if items[name] == nil { items[name] = parts.count > 1 ? percentDecoded(parts[1]) : "" }
        }
        return items
    }

    static func percentDecoded(_ text: Substring) -> String {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let b = bytes.first {
            bytes = bytes.dropFirst()
            if b == UInt8(ascii: "+") { out.append(32); continue }
            if b == UInt8(ascii: "%"), bytes.count >= 2, let hi = hexValue(bytes[bytes.startIndex]), let lo = hexValue(bytes[bytes.startIndex + 1]) {
                out.append(hi << 4 | lo)
                bytes = bytes.dropFirst(2)
                continue
            }
            out.append(b)
        }
        return String(decoding: out, as: UTF8.self)
    }
}

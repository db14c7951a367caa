import Basics
import Glibc
import HTTP1
import PushCore
import Reactor
import RedisQueue
import Worker

/// gorush's status routes with Herald's figures: `GET /api/stat/app` counts deliveries from the workers' results
/// streams (every shard's `<prefix>:results`, read on from where this process last stopped), `GET /api/stat/go` the
/// process's own runtime figures, `GET /sys/stats` this process's answers, `GET /version` the build
/// (docs/api.md, "gorush compatibility").
extension FrontDoor {
    /// Terminal outcomes as gorush's `push_success` / `push_error` (retries, duplicates, cancellations, replays and
    /// dry runs are neither).
    static let successOutcomes: Set<String> = ["delivered"]
    static let errorOutcomes: Set<String> = ["failed", "rejected", "token_dropped", "channel_dropped"]
    /// Herald's platforms by gorush's names (`web_push` is Herald's own section), and the word gorush's metric
    /// families use for their failures (`gorush_ios_error`, `gorush_android_fail`; none: gorush has no such family).
    static let gorushPlatforms: [(herald: String, gorush: String, failure: String?)] = [
        ("apns", "ios", "error"), ("fcm", "android", "fail"), ("hms", "huawei", "fail"), ("webpush", "web_push", nil),
    ]
    /// Entries read from one stream per XRANGE, and pages read per request at the most (the rest on the next one).
    static let statPage = 1000
    static let statPagesPerRequest = 20

    /// `key`: the asking key (nil with no keys configured), whose own jobs' deliveries and submissions, and whose
    /// queues' lengths, are all it is told (docs/api.md, "Tenancy").
    func gorushStat(key: APIAccess.Key?, respond: @escaping (HTTP1Server.Response) -> Void) {
        refreshDeliveries { [weak self] figures in
            guard let self else { return }
            guard let key else { return respond(Self.json(200, self.statBody(queueUsage: figures.queueUsage.values.reduce(0, +), liveWorkers: figures.liveWorkers))) }
            let tenant = self.access.tenant(of: key)
            let usage = figures.queueUsage.filter { key.queues.isEmpty || key.queues.contains($0.key) }.values.reduce(0, +)
            respond(Self.json(200, self.statBody(queueUsage: usage, liveWorkers: figures.liveWorkers, tenant: tenant)))
        }
    }

    /// Reads the results streams on from the cursors (one read at a time: a request during it waits for it), the
    /// queues' lengths and the live workers, then calls `then`.
    func refreshDeliveries(then: @escaping (_ figures: Figures) -> Void) {
        deliveries.waiting.append(then)
        guard !deliveries.reading else { return }
        deliveries.reading = true
        readResults(shardIndex: 0, pages: 0)
    }

    /// Reads shard `shardIndex`'s results stream from the cursor on, page by page, then the next shard's.
    private func readResults(shardIndex: Int, pages: Int) {
        guard shardIndex < shards.shards.count else { return finishStat() }
        let stream = shards.shards[shardIndex].keys.results
        let start = deliveries.cursors[stream].map { "(" + $0 } ?? "-"
        redis.send(["XRANGE", stream, start, "+", "COUNT", String(Self.statPage)].map { Array($0.utf8) }) { [weak self] result in
            guard let self else { return }
            guard case .success(let reply) = result else {
                self.deliveries.unread.insert(stream)
                return self.readResults(shardIndex: shardIndex + 1, pages: 0)
            }
            self.deliveries.unread.remove(stream)
            let entries = StreamEntry.entries(reply)
            let tenants = self.access.tenantIDs
            for entry in entries {
                guard let platform = entry["platform"], let outcome = entry["outcome"] else { continue }
                let success = Self.successOutcomes.contains(outcome), failure = Self.errorOutcomes.contains(outcome)
                guard success || failure else { continue }
                if success { self.deliveries.success[platform, default: 0] += 1 } else { self.deliveries.error[platform, default: 0] += 1 }
                // A job the API took under a key carries `<tenant>/` in front of its id: that tenant's count too.
                guard let tenant = entry["id"].flatMap(Self.tenantPrefix), tenants.contains(tenant) else { continue }
                if success { self.deliveries.tenantSuccess[tenant, default: [:]][platform, default: 0] += 1 }
                else { self.deliveries.tenantError[tenant, default: [:]][platform, default: 0] += 1 }
            }
            if let last = entries.last { self.deliveries.cursors[stream] = last.id }
            if entries.count == Self.statPage && pages + 1 < Self.statPagesPerRequest {
                self.readResults(shardIndex: shardIndex, pages: pages + 1)
            } else {
                self.readResults(shardIndex: shardIndex + 1, pages: 0)
            }
        }
    }

    /// The tenant id in front of a job id (`<16 hex digits>/`), if there is one.
    static func tenantPrefix(_ id: String) -> String? {
        let utf8 = id.utf8
        guard utf8.count > APIAccess.tenantIDLength, utf8[utf8.index(utf8.startIndex, offsetBy: APIAccess.tenantIDLength)] == UInt8(ascii: "/") else { return nil }
        let prefix = String(id.prefix(APIAccess.tenantIDLength))
        return prefix.utf8.allSatisfy { hexValue($0) != nil } ? prefix : nil
    }

    /// The queues' lengths and the live workers, then one answer for every request that waited.
    private func finishStat() {
        let queueKeys = routers.flatMap { queue, router in router.shardQueues.map { (queue, $0) } }.sorted { $0.1 < $1.1 }
        let workerKeys = shards.shards.map(\.keys.workers)
        let now = String(wallClockMillis())
        var commands = queueKeys.map { ["LLEN", $0.1, $0.0] }
        commands += workerKeys.map { ["ZRANGEBYSCORE", $0, now, "+inf"] }
        var usage: [String: Int] = [:]
        var workers: Set<String> = []
        var remaining = commands.count
        let answer: () -> Void = { [weak self] in
            guard let self else { return }
            let waiting = self.deliveries.waiting
            self.deliveries.waiting = []
            self.deliveries.reading = false
            for then in waiting { then(Figures(queueUsage: usage, liveWorkers: workers.count)) }
        }
        for command in commands {
            // An LLEN's third word is the configured queue it counts for (not sent).
            redis.send(command.prefix(command[0] == "LLEN" ? 2 : 4).map { Array($0.utf8) }) { result in
                if case .success(let value) = result {
                    if command[0] == "LLEN" { usage[command[2], default: 0] += Int(value.int ?? 0) } else { workers.formUnion((value.array ?? []).compactMap(\.string)) }
                }
                remaining -= 1
                if remaining == 0 { answer() }
            }
        }
    }

    /// `tenant`: only that tenant's deliveries and submissions (nil: everyone's, with no keys configured).
    private func statBody(queueUsage: Int, liveWorkers: Int, tenant: String? = nil) -> String {
        let successes = tenant.map { deliveries.tenantSuccess[$0] ?? [:] } ?? deliveries.success
        let errors = tenant.map { deliveries.tenantError[$0] ?? [:] } ?? deliveries.error
        let success = successes.values.reduce(0, +), failure = errors.values.reduce(0, +)
        let submitted = (tenant.map { gorushCounts[$0] ?? [:] } ?? gorushCounts.values.reduce(into: [:]) { $0.merge($1) { a, b in (a.0 + b.0, a.1 + b.1) } })
            .values.reduce(0) { $0 + $1.accepted }
        var body = "{\"version\":\(jsonEscaped("herald " + BuildInfo.version)),\"busy_workers\":\(liveWorkers),\"success_tasks\":\(success),"
            + "\"failure_tasks\":\(failure),\"submitted_tasks\":\(submitted),\"total_count\":\(success + failure),\"queue_usage\":\(queueUsage)"
        for (herald, gorush, _) in Self.gorushPlatforms {
            body += ",\(jsonEscaped(gorush)):{\"push_success\":\(successes[herald] ?? 0),\"push_error\":\(errors[herald] ?? 0)}"
        }
        if !deliveries.unread.isEmpty { body += ",\"unread_streams\":[" + deliveries.unread.sorted().map(jsonEscaped).joined(separator: ",") + "]" }
        return body + "}"
    }

    /// gorush's own metric families (its metric/metrics.go), from the same figures as `GET /api/stat/app`, when
    /// `api.gorush_metrics` is on: a gorush dashboard keeps working.
    func gorushMetrics(queueUsage: Int, liveWorkers: Int, to out: inout PrometheusText) {
        let success = deliveries.success.values.reduce(0, +), failure = deliveries.error.values.reduce(0, +)
        var families: [(String, PrometheusText.Kind, String, Int)] = [
            ("gorush_total_push_count", .counter, "Deliveries that ended, delivered or failed, in the results streams (gorush's push count).", success + failure),
        ]
        for (herald, gorush, failure) in Self.gorushPlatforms {
            guard let failure else { continue }
            families.append(("gorush_\(gorush)_success", .counter, "\(herald) deliveries that ended delivered.", deliveries.success[herald] ?? 0))
            families.append(("gorush_\(gorush)_\(failure)", .counter, "\(herald) deliveries that ended failed, rejected, token_dropped or channel_dropped.",
                             deliveries.error[herald] ?? 0))
        }
        families += [
            ("gorush_busy_workers", .gauge, "Herald workers whose heartbeat is live.", liveWorkers),
            ("gorush_success_tasks", .counter, "Deliveries that ended delivered, every platform.", success),
            ("gorush_failure_tasks", .counter, "Deliveries that ended failed, every platform.", failure),
            ("gorush_submitted_tasks", .counter, "Jobs this API process accepted from POST /api/push.", gorushCounts.values.reduce(0) { $0 + $1.values.reduce(0) { $0 + $1.accepted } }),
        ]
        for (name, kind, help, value) in families {
            out.family(name, kind, help)
            out.sample(name, [], value)
        }
    }

    /// `GET /sys/stats` (gorush's thoas/stats shape): this process's pid, uptime, and its answers by status and time.
    func sysStats() -> HTTP1Server.Response {
        let (count, nanos, statuses) = metrics.totals()
        let uptime = max(0, Double(wallClockMillis()) / 1000 - ProcessStats.read().startTimeSeconds)
        let codes = statuses.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",")
        let total = Double(nanos), average = count == 0 ? 0 : Double(nanos) / Double(count)
        var body = "{\"pid\":\(getpid()),\"uptime\":\"\(Int(uptime))s\",\"uptime_sec\":\(uptime),"
        body += "\"total_response_time\":\"\(total / 1e6)ms\",\"total_response_time_sec\":\(total / 1e9),"
        body += "\"average_response_time\":\"\(average / 1e6)ms\",\"average_response_time_sec\":\(average / 1e9),"
        return Self.json(200, body + "\"total_count\":\(count),\"total_status_code_count\":{\(codes)}}")
    }

    /// `GET /api/stat/go`: gorush answers with Go's runtime; Herald is no Go program, so this is its process's own
    /// figures, named as such.
    func runtimeStats() -> HTTP1Server.Response {
        let process = ProcessStats.read()
        return Self.json(200, "{\"runtime\":\"swift\",\"version\":\(jsonEscaped("herald " + BuildInfo.version)),\"pid\":\(getpid()),"
                         + "\"resident_memory_bytes\":\(Int(process.residentBytes)),\"cpu_seconds\":\(process.cpuSeconds),"
                         + "\"open_fds\":\(Int(process.openFileDescriptors)),\"max_fds\":\(Int(process.maxFileDescriptors)),"
                         + "\"start_time_seconds\":\(process.startTimeSeconds),\"open_connections\":\(openConnections())}")
    }

    /// `GET /version`, in gorush's shape.
    func version() -> HTTP1Server.Response {
        Self.json(200, "{\"source\":\"herald\",\"version\":\(jsonEscaped(BuildInfo.version)),\"build\":\(jsonEscaped(BuildInfo.stamp))}")
    }
}

/// What the stat routes read besides the results streams: each configured queue's length (its shards' together) and
/// the workers whose heartbeat is live.
struct Figures {
    var queueUsage: [String: Int]
    var liveWorkers: Int
}

/// What `GET /api/stat/app` has read of the results streams so far. Loop-confined.
final class DeliveryTally {
    /// Stream key -> the id of the last entry counted.
    var cursors: [String: String] = [:]
    /// Herald platform (`apns`, `fcm`, `hms`, `webpush`) -> entries.
    var success: [String: Int] = [:]
    var error: [String: Int] = [:]
    /// The same, by tenant id, for jobs the API took under a key (their ids start `<tenant>/`).
    var tenantSuccess: [String: [String: Int]] = [:]
    var tenantError: [String: [String: Int]] = [:]
    /// Streams Redis did not answer for on the last read (their counts are as before).
    var unread: Set<String> = []
    var reading = false
    var waiting: [(Figures) -> Void] = []
}

import Basics
import Glibc
import HTTP1
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

    func gorushStat(respond: @escaping (HTTP1Server.Response) -> Void) {
        refreshDeliveries { [weak self] figures in
            guard let self else { return }
            respond(Self.json(200, self.statBody(queueUsage: figures.queueUsage, liveWorkers: figures.liveWorkers)))
        }
    }

    /// Reads the results streams on from the cursors (one read at a time: a request during it waits for it), the
    /// queues' lengths and the live workers, then calls `then`.
    func refreshDeliveries(then: @escaping (_ figures: (queueUsage: Int, liveWorkers: Int)) -> Void) {
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
            for entry in entries {
                guard let platform = entry["platform"], let outcome = entry["outcome"] else { continue }
                if Self.successOutcomes.contains(outcome) { self.deliveries.success[platform, default: 0] += 1 }
                if Self.errorOutcomes.contains(outcome) { self.deliveries.error[platform, default: 0] += 1 }
            }
            if let last = entries.last { self.deliveries.cursors[stream] = last.id }
            if entries.count == Self.statPage && pages + 1 < Self.statPagesPerRequest {
                self.readResults(shardIndex: shardIndex, pages: pages + 1)
            } else {
                self.readResults(shardIndex: shardIndex + 1, pages: 0)
            }
        }
    }

    /// The queues' lengths and the live workers, then one answer for every request that waited.
    private func finishStat() {
        let queueKeys = routers.values.flatMap(\.shardQueues).sorted()
        let workerKeys = shards.shards.map(\.keys.workers)
        let now = String(wallClockMillis())
        var commands = queueKeys.map { ["LLEN", $0] }
        commands += workerKeys.map { ["ZRANGEBYSCORE", $0, now, "+inf"] }
        var usage = 0
        var workers: Set<String> = []
        var remaining = commands.count
        let answer: () -> Void = { [weak self] in
            guard let self else { return }
            let waiting = self.deliveries.waiting
            self.deliveries.waiting = []
            self.deliveries.reading = false
            for then in waiting { then((usage, workers.count)) }
        }
        for command in commands {
            redis.send(command.map { Array($0.utf8) }) { result in
                if case .success(let value) = result {
                    if command[0] == "LLEN" { usage += Int(value.int ?? 0) } else { workers.formUnion((value.array ?? []).compactMap(\.string)) }
                }
                remaining -= 1
                if remaining == 0 { answer() }
            }
        }
    }

    private func statBody(queueUsage: Int, liveWorkers: Int) -> String {
        let success = deliveries.success.values.reduce(0, +), failure = deliveries.error.values.reduce(0, +)
        let submitted = gorushCounts.values.reduce(0) { $0 + $1.accepted }
        var body = "{\"version\":\(jsonEscaped("herald " + BuildInfo.version)),\"busy_workers\":\(liveWorkers),\"success_tasks\":\(success),"
            + "\"failure_tasks\":\(failure),\"submitted_tasks\":\(submitted),\"total_count\":\(success + failure),\"queue_usage\":\(queueUsage)"
        for (herald, gorush, _) in Self.gorushPlatforms {
            body += ",\(jsonEscaped(gorush)):{\"push_success\":\(deliveries.success[herald] ?? 0),\"push_error\":\(deliveries.error[herald] ?? 0)}"
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
            ("gorush_submitted_tasks", .counter, "Jobs this API process accepted from POST /api/push.", gorushCounts.values.reduce(0) { $0 + $1.accepted }),
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

/// What `GET /api/stat/app` has read of the results streams so far. Loop-confined.
final class DeliveryTally {
    /// Stream key -> the id of the last entry counted.
    var cursors: [String: String] = [:]
    /// Herald platform (`apns`, `fcm`, `hms`, `webpush`) -> entries.
    var success: [String: Int] = [:]
    var error: [String: Int] = [:]
    /// Streams Redis did not answer for on the last read (their counts are as before).
    var unread: Set<String> = []
    var reading = false
    var waiting: [((queueUsage: Int, liveWorkers: Int)) -> Void] = []
}

import Basics
import DeviceRegistry
import Foundation
import HeraldProviders
import Reactor
import TLS
import RedisQueue
import Worker

/// `herald dashboard`: one self-contained status page (`/`), its JSON (`/api/status`) and the queue-wide
/// Prometheus metrics (`/metrics`) that no single worker owns, read from Redis when asked.
enum DashboardCommand {
    static let command = Command(
        name: "dashboard", abstract: "Serve a live status page and the queue-wide Prometheus metrics.",
        discussion: """
        Serves / (an HTML page with no external resources, refreshing every second), /api/status (its JSON),
        /metrics (queue depths, retry set, dead letters, workers and heartbeats, stream lengths, devices, open
        campaigns) and /healthz.
        Run one per deployment: it only reads Redis. Stops on SIGTERM or SIGINT.
        """,
        options: redisOptions + [
            .value("listen", "addr", "Address to serve on (default 127.0.0.1:8090; :port for every interface)."),
            .value("lease-seconds", "n", "The workers' worker.lease_seconds, to estimate heartbeat ages (default: the config's, else 30)."),
        ],
        run: run)

    static func run(_ args: ParsedArguments) throws -> Int32 {
        let settings = try redisSettings(args)
        let listenText = args.value("listen") ?? "127.0.0.1:8090"
        guard let address = ListenAddress(listenText) else { throw UsageError("--listen must be host:port or :port, got '\(listenText)'") }
        var leaseSeconds = 30
        if let path = args.value("config") ?? ProcessInfo.processInfo.environment["HERALD_CONFIG"],
           let configuration = try? ConfigurationLoader.load(path: path) {
            leaseSeconds = configuration.worker.leaseSeconds
        }
        if let n = try args.int("lease-seconds") { leaseSeconds = n }
        let logger = Logger(component: "dashboard")
        let loop = try EventLoop.startThread(name: "herald-dashboard")
        let lease = Int64(leaseSeconds) * 1000
        let server = try loop.submit { () -> LoopBound<HTTPListener> in
            // Made on the loop and reachable only from the listener's handler: it never leaves the loop's thread.
            let source = DashboardSource(redis: settings, keys: settings.keys, queues: settings.queues, leaseMilliseconds: lease)
            let listener = try HTTPListener(loop: loop, host: address.host, port: address.port) { request, respond in
                respond(source.answer(request))
            }
            return LoopBound(listener, loop: loop)
        }
        let port = try loop.submit { server.value.port }
        let shown = ListenAddress("\(address.host):\(port)")?.description ?? listenText
        logger.info("dashboard listening", ["url": .string("http://\(shown)/"), "redis": .string(settings.description)])
        // Scripts (scripts/demo, the tests) read the URL from this line.
        print("dashboard: http://\(shown)/")
        serveUntilSignalled(loop) {
            server.value.close()
            loop.stop()
        }
        return ExitCode.success
    }
}

/// The dashboard's view of Redis, refreshed at most every `refreshMilliseconds` however many clients poll.
/// It runs on the dashboard's own loop and reads Redis with blocking calls (with timeouts): that loop serves
/// nothing else, so a slow Redis delays only the page. Loop-confined: only the listener's handler holds it.
final class DashboardSource {
    let settings: ToolRedis
    let keys: QueueKeys
    let queues: [String]
    let leaseMilliseconds: Int64
    private var redis: (any BlockingRedisCommands)?
    private var overview = QueueOverview()
    private var devices = DeviceRegistry.Counts()
    private var campaigns: [CampaignStatus] = []
    /// Campaign keys that answered an error at the last read (their campaigns left out), served with the overview's.
    private var campaignKeyErrors: [KeyReplyError] = []
    /// Parsed campaign documents kept from one read to the next (a document never changes while its id exists).
    private let campaignDocuments = CampaignDocuments()
    private var window = ResultsWindow()
    private var refreshedAt: UInt64 = 0
    /// The results window was read since the overview was.
    private var windowFresh = false
    /// The open campaigns were read since the overview was (only `/metrics` shows them: the page's poll skips them).
    private var campaignsFresh = false
    private var lastError: String?
    private let refreshMilliseconds: UInt64 = 500

    init(redis settings: ToolRedis, keys: QueueKeys, queues: [String], leaseMilliseconds: Int64) {
        self.settings = settings
        self.keys = keys
        self.queues = queues
        self.leaseMilliseconds = leaseMilliseconds
    }

    func answer(_ request: HTTPListener.Request) -> HTTPListener.Response {
        switch request.path {
        case "/": return .init(status: 200, contentType: "text/html; charset=utf-8", body: DashboardPage.html)
        case "/healthz": return .init(status: 200, body: "ok\n")
        case "/api/status":
            refresh(withResults: true, withCampaigns: false)
            return .init(status: lastError == nil ? 200 : 503, contentType: "application/json", body: statusJSON())
        case "/metrics":
            // The queue-wide state only: a scrape never pays for reading the results stream.
            // 200 whether or not Redis answers: `herald_redis_up` tells "Redis down" from "dashboard down" (no
            // scrape at all), and the process and build families stay. The queue families need a fresh read.
            refresh(withResults: false, withCampaigns: true)
            var out = PrometheusText()
            out.single("herald_redis_up", .gauge, "1 when the dashboard's last read of Redis succeeded, 0 when it failed (the queue families are then absent).",
                       lastError == nil ? 1 : 0)
            if lastError == nil {
                // A campaign key of the wrong type is named with the overview's key errors: only its campaign is left out.
                var shown = overview
                shown.keyErrors += campaignKeyErrors
                shown.write(to: &out)
                devices.write(to: &out)
                CampaignStatus.write(open: campaigns, to: &out)
            }
            ProcessStats.read().write(to: &out)
            CertificateExpiry.shared.write(to: &out)
            BuildInfo.write(to: &out)
            return .init(status: 200, contentType: PrometheusText.contentType, body: out.text)
        default: return .init(status: 404, body: "not found: try /, /api/status, /metrics or /healthz\n")
        }
    }

    private func refresh(withResults: Bool, withCampaigns: Bool) {
        let now = monotonicNanos()
        let fresh = refreshedAt != 0 && now &- refreshedAt < refreshMilliseconds * 1_000_000
        if fresh && (!withResults || windowFresh) && (!withCampaigns || campaignsFresh) { return }
        do throws(RedisError) {
            if redis == nil { redis = try settings.connect(connectTimeoutMilliseconds: 1000, commandTimeoutMilliseconds: 3000) }
            if !fresh {
                overview = try QueueOverview.read(redis: redis!, shards: settings.shards, leaseMilliseconds: leaseMilliseconds)
                devices = try DeviceRegistry(redis: redis!, shards: settings.shards).counts()
                refreshedAt = now
                windowFresh = false
                campaignsFresh = false
            }
            if withCampaigns && !campaignsFresh {
                let open = try Campaigns(redis: redis!, shards: settings.shards).openStatuses(documents: campaignDocuments)
                campaigns = open.statuses
                campaignKeyErrors = open.keyErrors
                campaignsFresh = true
            }
            if withResults && !windowFresh {
                try window.read(redis: redis!, shards: settings.shards.shards.map(\.keys), now: overview.nowMilliseconds)
                windowFresh = true
            }
            lastError = nil
        } catch {
            redis?.close()
            redis = nil
            lastError = error.description
        }
    }

    /// JSON null for a missing value (JSONSerialization takes NSNull, not a nil inside Any).
    private func nullable<T>(_ value: T?) -> Any { value.map { $0 as Any } ?? NSNull() }

    private func statusJSON() -> String {
        let now = overview.nowMilliseconds
        // Every outcome the results stream knows, so a new one shows up on the page without touching it.
        let outcomes = ResultEntry.Outcome.allCases.map(\.rawValue)
        var object: [String: Any] = [
            "now_ms": now,
            "redis": lastError ?? "ok",
            "queues": overview.queueLengths.enumerated().map { index, queue in
                ["name": queue.0, "length": queue.1, "paused": index < overview.queuePaused.count && overview.queuePaused[index]]
            },
            "queue_total": overview.queueLengths.reduce(0) { $0 + $1.1 },
            "retry": ["size": overview.retrySize, "due": overview.retryDue,
                      "next_due_in_s": nullable(overview.retryNextDueMilliseconds.map { Double($0 - now) / 1000 })],
            "dead_letters": overview.deadLetters,
            "results_length": overview.resultsLength,
            "dropped_tokens_length": overview.droppedTokensLength,
            "key_errors": overview.keyErrors.map { ["key": $0.key, "error": $0.message] },
            "workers": overview.workers.map {
                ["id": $0.id, "heartbeat_age_s": Double($0.heartbeatAgeMilliseconds) / 1000, "live": $0.heartbeatDeadlineInMilliseconds > 0,
                 "in_flight": $0.inFlight]
            },
            "in_flight": overview.workers.reduce(0) { $0 + $1.inFlight },
            "throughput": ["slot_s": ResultsWindow.slotMilliseconds / 1000, "outcomes": outcomes,
                           "slots": window.slots.map { slot in ["start_ms": slot.start, "counts": slot.counts] }],
            "totals": Dictionary(uniqueKeysWithValues: outcomes.map { ($0, window.totals[$0] ?? 0) }),
            "last_minute": Dictionary(uniqueKeysWithValues: outcomes.map { ($0, window.count($0, lastMilliseconds: 60_000, now: now)) }),
            "latency_ms": ["p50": nullable(window.latencyPercentile(0.5)), "p99": nullable(window.latencyPercentile(0.99))],
            "top_reasons": window.topReasons().map { ["reason": $0.reason, "count": $0.count] },
            "dropped_tokens_per_minute": window.count("token_dropped", lastMilliseconds: 60_000, now: now),
            "paused_apps": window.pausedApps(now: now),
        ]
        if lastError != nil { object["redis"] = lastError! }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}

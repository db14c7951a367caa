import TLS
import Worker

/// `herald api`'s own figures for `/metrics` (docs/api.md, "Metrics"): requests by route and status, their
/// latency, jobs accepted, refused (by the reason's code) and failed, open connections and Redis. Loop-confined.
final class APIMetrics {
    /// The routes as labels: anything else counts as `other`, so a scanner cannot grow the label set.
    /// `POST /api/push` in sync mode, which waits for deliveries.
    static let syncPushRoute = "/api/push sync"
    static let routes: Set<String> = ["/v1/jobs", "/api/push", "/api/stat/app", "/api/stat/go", "/sys/stats", "/version", "/healthz", "/readyz", "/metrics"]

    private var requests: [String: [Int: UInt64]] = [:]
    private var latency: [String: LatencyHistogram] = [:]
    private(set) var accepted: UInt64 = 0
    private(set) var refusedByReason: [String: UInt64] = [:]
    private(set) var failed: UInt64 = 0
    private(set) var validated: UInt64 = 0
    /// Requests refused before any route saw them (the parser's and the server's refusals), by reason.
    private(set) var rejectedByReason: [String: UInt64] = [:]

    func rejected(reason: String) { rejectedByReason[reason, default: 0] += 1 }

    static func route(_ path: String) -> String {
        if routes.contains(path) { return path }
        if path.hasPrefix(FrontDoor.jobsPathPrefix) { return "/v1/jobs/{id}" }
        // Never the app or the token: one label per shape of path.
        if path.hasPrefix(FrontDoor.devicesPathPrefix) {
            return path.dropFirst(FrontDoor.devicesPathPrefix.count).contains("/") ? "/v1/devices/{app}/{platform}/{token}" : "/v1/devices/{app}"
        }
        if FrontDoor.isCampaignsPath(path) {
            switch path.dropFirst(FrontDoor.campaignsPath.count).split(separator: "/", omittingEmptySubsequences: false).count {
            case 0, 1: return FrontDoor.campaignsPath
            case 2: return "/v1/campaigns/{id}"
            default: return "/v1/campaigns/{id}/{action}"
            }
        }
        return "other"
    }

    func request(route: String, status: Int, nanoseconds: UInt64) {
        requests[route, default: [:]][status, default: 0] += 1
        latency[route, default: LatencyHistogram()].observe(nanoseconds)
    }

    /// A job's fate; `reason` is the refusal text, whose code (before the first `:`) is the label.
    func job(refusal: String?, failed didFail: Bool, validated isValidation: Bool = false) {
        if isValidation && refusal == nil {
            validated += 1
        } else if didFail {
            failed += 1
        } else if let refusal {
            let code = refusal.prefix { $0 != ":" }.prefix(64)
            refusedByReason[String(code), default: 0] += 1
        } else {
            accepted += 1
        }
    }

    /// Every answer so far: how many, their time in all, and how many of each status (for `GET /sys/stats`).
    func totals() -> (count: UInt64, nanoseconds: UInt64, statuses: [Int: UInt64]) {
        var statuses: [Int: UInt64] = [:]
        for byStatus in requests.values { statuses.merge(byStatus, uniquingKeysWith: +) }
        let nanos = latency.values.reduce(UInt64(0)) { $0 &+ $1.sumNanos }
        return (statuses.values.reduce(0, +), nanos, statuses)
    }

    func text(openConnections: Int, redisUp: Bool) -> String {
        var out = PrometheusText()
        out.family("herald_api_requests_total", .counter, "HTTP requests answered, by route and status.")
        for route in requests.keys.sorted() {
            for (status, count) in requests[route]!.sorted(by: { $0.key < $1.key }) {
                out.sample("herald_api_requests_total", [("route", route), ("status", String(status))], count)
            }
        }
        out.family("herald_api_request_duration_seconds", .histogram, "From a whole request to its answer, by route (Redis round trips included).")
        for route in latency.keys.sorted() { out.histogram("herald_api_request_duration_seconds", [("route", route)], latency[route]!) }
        out.family("herald_api_jobs_total", .counter, "Jobs by outcome: accepted (in Redis), refused (by the reason's code, never queued), failed (Redis did not take them), validated (validate_only: checked, not queued).")
        out.sample("herald_api_jobs_total", [("outcome", "accepted")], accepted)
        out.sample("herald_api_jobs_total", [("outcome", "failed")], failed)
        out.sample("herald_api_jobs_total", [("outcome", "validated")], validated)
        for (reason, count) in refusedByReason.sorted(by: { $0.key < $1.key }) {
            out.sample("herald_api_jobs_total", [("outcome", "refused"), ("reason", reason)], count)
        }
        out.family("herald_api_requests_rejected_total", .counter, "Requests refused before any route saw them (malformed, too large, past max_connections; `accept_failed`: a connection the kernel could not hand over, at the open-file limit), by reason.")
        for (reason, count) in rejectedByReason.sorted(by: { $0.key < $1.key }) {
            out.sample("herald_api_requests_rejected_total", [("reason", reason)], count)
        }
        out.single("herald_api_open_connections", .gauge, "Client connections open now.", Double(openConnections))
        out.single("herald_api_redis_up", .gauge, "1 while the Redis connection is up.", redisUp ? 1 : 0)
        // Like the worker and the dashboard: the standard process families, certificates and the build.
        ProcessStats.read().write(to: &out)
        CertificateExpiry.shared.write(to: &out)
        BuildInfo.write(to: &out)
        return out.text
    }
}

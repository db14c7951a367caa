import PushCore
import TLS
/// A worker's `/metrics` page: every family documented in docs/observability.md, from one merged snapshot.
public enum WorkerMetricsText {
    public static func render(_ s: MetricsSnapshot, process: ProcessStats = .read(), reloads: ConfigReloads? = nil) -> String {
        var out = PrometheusText()
        let apps = s.appNames + ["unknown"]

        out.family("herald_results_total", .counter, "Result entries written, by app, platform and outcome (retrying included; agrees with the results stream).")
        for platform in MetricsSnapshot.jobPlatforms {
            for (app, name) in apps.enumerated() {
                for outcome in JobOutcome.allCases {
                    let value = s.jobs[s.jobIndex(platform, app, outcome)]
                    // The "unknown" app and platform (rejected jobs naming no configured app, no platform that parses)
                    // only once it has happened.
                    if (app == s.appNames.count || platform == nil) && value == 0 { continue }
                    // A configured app's zero series for its own platform only: no line for one it cannot have.
                    if value == 0, let platforms = s.appPlatforms, app < platforms.count, platform != platforms[app] { continue }
                    out.sample("herald_results_total", [("app", name), ("platform", platform?.rawValue ?? "unknown"), ("outcome", outcome.rawValue)], value)
                }
            }
        }
        out.single("herald_jobs_scheduled_total", .counter, "Jobs whose deliver_at lay ahead, put in the retry set until then.", Double(s.scheduled))
        out.single("herald_jobs_unguarded_total", .counter, "Jobs sent without the idempotency check: their id's key held another type.", Double(s.unguarded))

        out.family("herald_push_responses_total", .counter, "HTTP answers from the push service, by status and reason.")
        for platform in Platform.allCases {
            for status in 0...DeliveryMetrics.statuses.count {
                for reason in s.reasonNames.indices {
                    let value = s.responses[s.responseIndex(platform, status: status, reason: reason)]
                    guard value > 0 else { continue }
                    let statusLabel = status < DeliveryMetrics.statuses.count ? String(DeliveryMetrics.statuses[status]) : "other"
                    out.sample("herald_push_responses_total", [
                        ("platform", platform.rawValue), ("status", statusLabel), ("reason", s.reasonNames[reason]),
                    ], value)
                }
            }
        }
        out.family("herald_push_transport_failures_total", .counter, "Requests that got no HTTP answer, by kind.")
        for platform in Platform.allCases {
            for kind in TransportFailureKind.allCases {
                out.sample("herald_push_transport_failures_total", [("platform", platform.rawValue), ("kind", kind.label)],
                           s.transport[platform.slot * TransportFailureKind.allCases.count + kind.rawValue])
            }
        }
        out.family("herald_push_resends_total", .counter, "Jobs sent again at once, by cause.")
        for platform in Platform.allCases {
            for cause in ResendCause.allCases {
                out.sample("herald_push_resends_total", [("platform", platform.rawValue), ("cause", cause.label)],
                           s.resends[platform.slot * ResendCause.allCases.count + cause.rawValue])
            }
        }
        out.family("herald_job_latency_seconds", .histogram, "From claim to the job's terminal outcome.")
        for platform in Platform.allCases { out.histogram("herald_job_latency_seconds", [("platform", platform.rawValue)], s.jobLatency[platform.slot]) }
        out.family("herald_push_request_duration_seconds", .histogram, "From a request's send to its answer or failure.")
        for platform in Platform.allCases {
            out.histogram("herald_push_request_duration_seconds", [("platform", platform.rawValue)], s.requestLatency[platform.slot])
        }

        out.single("herald_jobs_in_flight", .gauge, "Jobs claimed and not yet recorded.", Double(s.inFlight))
        out.single("herald_jobs_backlog", .gauge, "Jobs waiting in memory for a pool with room (back-pressure).", Double(s.backlog))

        let poolLabels: (PoolSnapshot) -> [(String, String)] = { [("app", $0.app), ("environment", $0.environment)] }
        let poolFamilies: [(String, PrometheusText.Kind, String, (PoolSnapshot) -> Int)] = [
            ("herald_pool_connections", .gauge, "Connections ready to take requests.", \.connections),
            ("herald_pool_open_streams", .gauge, "Requests on the wire (open HTTP/2 streams).", \.openStreams),
            ("herald_pool_stream_limit", .gauge, "The server's SETTINGS_MAX_CONCURRENT_STREAMS on the best connection (0 without one).", \.streamLimit),
            ("herald_pool_queued_requests", .gauge, "Requests waiting for a free stream.", \.queued),
            ("herald_pool_reconnects_total", .counter, "Connections opened to replace ones that closed or failed.", \.reconnects),
            ("herald_pool_goaways_total", .counter, "GOAWAY frames received.", \.goaways),
        ]
        for (name, kind, help, value) in poolFamilies {
            out.family(name, kind, help)
            for pool in s.pools { out.sample(name, poolLabels(pool), value(pool)) }
        }
        // Bounded: a pool has at most its connection count of remote addresses; an address without a connection has no series.
        out.family("herald_pool_remote_connections", .gauge, "Ready connections per remote address (ip:port): how a pool spreads over the provider's hosts.")
        for pool in s.pools {
            for (remote, count) in pool.remotes.sorted(by: { $0.key < $1.key }) {
                out.sample("herald_pool_remote_connections", poolLabels(pool) + [("remote", remote)], count)
            }
        }

        // One series per kind, each 0 or 1: a pause that changes kind moves no series between label values.
        out.family("herald_app_paused", .gauge, "1 while the app's destination is paused for this kind of cause (outage, credential, setup, throttle); an outage's until an answer proves it reachable again.")
        for (index, name) in s.appNames.enumerated() {
            for environment in s.appEnvironments[index] {
                let pause = s.paused.first { $0.app == name && $0.environment == environment }
                for kind in DestinationGate.PauseKind.allCases.map({ "\($0)" }) {
                    out.sample("herald_app_paused", [("app", name), ("environment", environment), ("kind", kind)], pause?.kind == kind ? 1 : 0)
                }
            }
        }
        // A Web Push app pauses one push service at a time, its origin in `environment`: those series exist while it lasts.
        for pause in s.paused where !(s.appNames.firstIndex(of: pause.app).map { s.appEnvironments[$0].contains(pause.environment) } ?? true) {
            for kind in DestinationGate.PauseKind.allCases.map({ "\($0)" }) {
                out.sample("herald_app_paused", [("app", pause.app), ("environment", pause.environment), ("kind", kind)], pause.kind == kind ? 1 : 0)
            }
        }
        out.family("herald_budget_app_per_second", .gauge, "The app's per-second budget as it is now: budgets.app_per_second, lowered after a provider's 429 and climbing back on good answers (0: no per-second budget).")
        for (index, name) in s.appNames.enumerated() {
            out.sample("herald_budget_app_per_second", [("app", name)], index < s.budgetAppPerSecond.count ? s.budgetAppPerSecond[index] : 0)
        }
        out.family("herald_environment_fallbacks_total", .counter, "Jobs sent to the app's other environment after BadDeviceToken, by how they ended (resolved: delivered there).")
        for (index, name) in s.appNames.enumerated() {
            out.sample("herald_environment_fallbacks_total", [("app", name), ("result", "resolved")], s.fallbacks[index * 2])
            out.sample("herald_environment_fallbacks_total", [("app", name), ("result", "not_resolved")], s.fallbacks[index * 2 + 1])
        }
        out.single("herald_destination_pauses_total", .counter, "Pauses started (each once, however many jobs it parked).", Double(s.pauses))
        out.family("herald_provider_tokens_signed_total", .counter, "Provider tokens signed, by app: APNs' ES256 tokens (the first and every refresh), an OAuth app's token fetches.")
        for (index, name) in s.appNames.enumerated() { out.sample("herald_provider_tokens_signed_total", [("app", name)], s.tokensSigned[index]) }
        out.family("herald_provider_token_exchange_failures_total", .counter, "Access-token exchanges (FCM's OAuth grant) that brought no token: refused (the credential) or unavailable (the endpoint).")
        for (index, name) in s.appNames.enumerated() {
            let stats = s.provider.tokenExchanges[index]
            out.sample("herald_provider_token_exchange_failures_total", [("app", name), ("kind", "refused")], stats.refused)
            out.sample("herald_provider_token_exchange_failures_total", [("app", name), ("kind", "unavailable")], stats.unavailable)
        }
        out.family("herald_provider_token_exchange_seconds", .summary, "Time the access-token exchanges took (answered ones, with a token or not).")
        for (index, name) in s.appNames.enumerated() {
            let stats = s.provider.tokenExchanges[index]
            out.sample("herald_provider_token_exchange_seconds_sum", [("app", name)], Double(stats.nanoseconds) / 1e9)
            out.sample("herald_provider_token_exchange_seconds_count", [("app", name)], stats.answered)
        }

        out.single("herald_redis_round_trips_total", .counter, "Redis commands answered.", Double(s.redis.roundTrips))
        out.single("herald_redis_errors_total", .counter, "Redis commands failed (error replies, timeouts, lost with the connection).", Double(s.redis.errors))
        out.single("herald_redis_connects_total", .counter, "Redis connections established (the first and every reconnect).", Double(s.redis.connects))
        out.single("herald_redis_not_replicated_total", .counter, "Script calls fewer replicas than redis.wait_replicas confirmed in time (each retried or put back).", Double(s.redis.notReplicated))
        out.single("herald_workers_reaped_total", .counter, "Workers whose heartbeat ran out that this worker's reaper reaped (their leased jobs went back to the queue).",
                   Double(s.workersReaped))
        out.single("herald_redis_connected_loops", .gauge, "Event loops whose Redis connection is up.", Double(s.redisConnected))
        out.single("herald_event_loops", .gauge, "Event loops running a delivery pipeline.", Double(s.loops))
        out.single("herald_worker_claiming", .gauge, "Event loops claiming jobs (0 while draining on SIGTERM).", Double(s.claimingLoops))
        reloads?.write(to: &out)
        process.write(to: &out)
        CertificateExpiry.shared.write(to: &out)
        BuildInfo.write(to: &out)
        return out.text
    }
}

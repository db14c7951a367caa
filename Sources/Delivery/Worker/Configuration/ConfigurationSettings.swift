import Foundation
import PushCore

/// Every setting of the configuration file, in the order of docs/configuration.md. Adding a setting is one
/// line here (plus its field, whose initial value is the default); the loader, the bounds check, the
/// environment overrides, `worker --help` and the docs' tables follow (`ConfigurationDocsTests` keeps the docs
/// in step). Upper bounds are generous but keep every derived value (milliseconds, nanoseconds, doubled
/// back-offs, due times in ms since the epoch) far from Int64's limit: what `check-config` accepts, the worker runs.
extension Configuration {
    /// With `providers`' sections (the composition root's list), each after `redis` in the list's order.
    public static func settings(_ providers: [any PushProvider.Type]) -> [Setting<Configuration>] {
        redisSettings + providers.flatMap { $0.settings } + appsSettings
            + retrySettings.map { $0.lifted(\Configuration.retry, prefix: "retry.") } + [retryQueues] + workerSettings + resultsSettings + budgetSettings + metricsSettings + apiSettings + registrySettings
    }

    /// The sections, in file order (the top-level keys).
    public static func sections(_ providers: [any PushProvider.Type]) -> [String] {
        ["redis"] + providers.map { $0.sectionKey } + ["apps", "retry", "worker", "results", "budgets", "metrics", "api", "registry"]
    }

    /// The longest timeout a setting in milliseconds takes: an hour.
    static let maxTimeoutMs = SettingBounds.maxTimeoutMs
    /// The longest retry delay: 30 days, as long as APNs keeps a notification.
    static let maxRetryDelaySeconds: Int64 = 2_592_000

    static let redisSettings: [Setting<Configuration>] = [
        .text("redis.url", \.redis.url, environment: "HERALD_REDIS_URL",
              "`redis://[user:password@]host:port/db`, `rediss://...` (the same over TLS, see `tls` below and [docs/redis.md](redis.md#tls-managed-redis)) or `unix:///path/to/redis.sock?db=0`."),
        .text("redis.prefix", \.redis.prefix, environment: "HERALD_REDIS_PREFIX",
              "Prefix of every key. On Redis Cluster use a hash tag such as `{herald}` (and the same tag in every key of `queues`) so that every key lands in one slot, or `shards` (below), whose shard prefixes are hash tags of their own; the limits of Cluster are in `docs/operations.md`."),
        .list("redis.queues", \.redis.queues, environment: "HERALD_QUEUES", default: "`[\"<prefix>:queue\"]`",
              "Queue keys, in priority order when `queue_mode` is `priority` (from the environment: comma-separated). With more than one shard (or `shard_prefixes`), write each as `<prefix>:<name>` (`herald:queue:urgent`): every shard gets its own copy, `<shard prefix>:<name>` (`{herald:0}:queue:urgent`); a key outside the prefix is refused then. With one shard any key works, as before. `queue_weights` and `retry.queues` name these configured keys and apply to every shard's copy."),
        .choice("redis.queue_mode", \.redis.queueMode, [.priority, .weighted],
                "`priority`: a worker always takes from the first non-empty queue. `weighted`: fair share, claims go round the non-empty queues in proportion to `queue_weights` (see below)."),
        .custom("redis.queue_weights", default: "every queue 1", allowed: "1...1000 each",
                "`{\"<queue key>\": weight}` for `weighted`; a queue not named weighs 1. Only keys of `queues`.",
                read: { value, c, name, problems in
                    guard let weights = value as? [String: Any] else { return problems.append("\(name) must be an object") }
                    for key in weights.keys.sorted() where !key.hasPrefix("//") {
                        guard let n = weights[key] as? NSNumber, !isBoolean(n), n.doubleValue == n.doubleValue.rounded() else {
                            problems.append("\(name).\(key) must be a whole number")
                            continue
                        }
                        c.redis.queueWeights[key] = (1...1000).contains(n.doubleValue) ? n.intValue : 0
                    }
                },
                check: { c in
                    c.redis.queueWeights.sorted(by: { $0.key < $1.key }).flatMap { queue, weight in
                        (c.redis.queueKeys.contains(queue) ? [] : ["redis.queue_weights: '\(queue)' is not one of redis.queues"])
                            + ((1...1000).contains(weight) ? [] : ["redis.queue_weights: the weight of '\(queue)' must be 1...1000"])
                    }
                }),
        .integer("redis.connect_timeout_ms", \.redis.connectTimeoutMs, 100...maxTimeoutMs, "Connecting, AUTH and SELECT."),
        .choice("redis.mode", \.redis.mode, [.standalone, .sentinel, .cluster],
                "`standalone`: one Redis at `url`. `sentinel`: the master is whatever the sentinels name (docs/redis.md, \"Sentinel\"); `url` then still gives the master's user, password and database, its host and port are ignored. `cluster`: a Redis Cluster; `url` is one seed node (its user and password are used for every node), commands go to the master of their key's slot over one connection per master, MOVED/ASK are followed (docs/redis.md, \"Redis Cluster\"). Cluster mode needs database 0, a TCP `url`, and a `prefix` with a hash tag (and the same tag in every key of `queues`), or `shards` > 1 / `shard_prefixes` with a tag each; anything else is refused with why."),
        .integer("redis.shards", \.redis.shards, 1...RedisSettings.maxShards, environment: "HERALD_REDIS_SHARDS",
                 "Shards: complete key sets (queues, retry set, leases, results, archive, ...), each under its own hash tag `{<prefix>:<i>}` for i in 0..<shards, so on Redis Cluster each lives on whichever master owns that slot. 1 keeps today's keys exactly (`herald:queue`, ...). Workers claim from every shard; `herald enqueue` spreads jobs over them; every tool sees them all (docs/redis.md, \"Sharding\"); the tools also take `--shards N`."),
        .list("redis.shard_prefixes", \.redis.shardPrefixes,
              "The shard prefixes by name instead (one per shard, e.g. `[\"{herald:0}\", \"{herald:7}\", \"{herald:2}\"]`), to pick hash tags that land on different cluster masters. When given, `shards` may be left out (or must equal the count). In cluster mode each must contain a hash tag."),
        .list("redis.cluster_nodes", \.redis.clusterNodes,
              "More cluster seed nodes as `host:port`, tried after `url` when the slot map is first read (so a worker starts while the `url` node is down). `cluster` mode only."),
        .integer("redis.command_timeout_ms", \.redis.commandTimeoutMs, 100...maxTimeoutMs,
                 "A command that gets no answer in this time counts as a lost connection. (`check-config`, `stats`, `enqueue`, `tail` and `scheduler` use 2 s and 10 s, whatever the file says.)"),
        .list("redis.sentinels", \.redis.sentinels,
              "Sentinel mode: the sentinels as `\"host:port\"` (or `\"[v6]:port\"`), asked in turn, each within `connect_timeout_ms`. Required in sentinel mode, refused in any other."),
        .text("redis.master_name", \.redis.masterName,
              "Sentinel mode: the name the sentinels monitor the master under (`sentinel monitor <name> ...`). Required in sentinel mode."),
        .optionalText("redis.sentinel_user", \.redis.sentinelUser,
                      "AUTH user for the sentinels themselves (their ACL user), when it differs from the master's; needs `sentinel_password`."),
        .optionalText("redis.sentinel_password", \.redis.sentinelPassword,
                      "AUTH password for the sentinels themselves (their `requirepass` or the ACL user's)."),
        .integer("redis.wait_replicas", \.redis.waitReplicas, 0...16, off: true, default: "0 (off)",
                 "Standalone and sentinel mode (not cluster, yet). After every script call (claims, completions, releases, the reaper, the retry scheduler, heartbeats) the worker sends `WAIT <n> <wait_timeout_ms>` behind it and counts the call only once `n` replicas have it. Fewer in time: the call counts as \"outcome unknown\" (a completion batch is re-sent as a repeat, a claim's leases are put back) and `herald_redis_not_replicated_total` goes up. Cost and what it buys: docs/redis.md."),
        .integer("redis.wait_timeout_ms", \.redis.waitTimeoutMs, 1...600_000,
                 "How long one WAIT may block; below `command_timeout_ms` when `wait_replicas` is set. WAIT blocks the connection it runs on, so with too few replicas every call waits this long in turn."),
        .optionalText("redis.tls.ca_file", \.redis.tls.caFile, environment: "HERALD_REDIS_TLS_CA_FILE", default: "none: the system trust store",
                      "`rediss://` only. PEM CA bundle the server certificate must chain to; when given, only it is trusted."),
        .optionalText("redis.tls.cert_file", \.redis.tls.certFile, environment: "HERALD_REDIS_TLS_CERT_FILE",
                      "Client certificate (PEM, chain allowed) for mutual TLS (`tls-auth-clients yes`); needs `tls.key_file`."),
        .optionalText("redis.tls.key_file", \.redis.tls.keyFile, environment: "HERALD_REDIS_TLS_KEY_FILE",
                      "Its private key (PEM); may be the same file as `tls.cert_file`."),
        .optionalText("redis.tls.server_name", \.redis.tls.serverName, environment: "HERALD_REDIS_TLS_SERVER_NAME",
                      default: "the host reached (the URL's; in sentinel mode the announced master; in cluster mode each node's address)",
                      "Name sent as SNI and checked against the certificate (DNS name or IP)."),
        .flag("redis.tls.verify", \.redis.tls.verify,
              "Verify the server certificate and name. `false` only for diagnostics. Any `tls` key with a `redis://` URL is a configuration error (no silent plaintext). `check-config` loads the files and reports missing or unreadable files, a certificate without its key and a key of another certificate."),
    ]





    /// The apps have their own table in the docs (each app is an object of its own); here only their reader.
    static let appsSettings: [Setting<Configuration>] = [
        .custom("apps", default: "required", "The apps: a list of objects (below).", read: { value, c, name, problems in
            guard let list = value as? [Any] else { return problems.append("\(name) must be a list") }
            for (index, item) in list.enumerated() {
                guard let app = item as? [String: Any] else { problems.append("apps[\(index)] must be an object"); continue }
                c.apps.append(AppReader.readApp(app, index: index, providers: c.providers, problems: &problems))
            }
        }),
    ]

    /// The keys every app has, whatever its provider (its credential block is its provider's: `credentialBlocks`).
    static let appKeys: [Setting<AppSettings>] = [
        .text("name", \.name, "The app's name: jobs name it in `app`, results and metrics carry it."),
        .text("bundle_id", \.bundleID, "APNs: the app's bundle ID, the default `apns-topic`."),
        .list("environments", \.environments, "APNs: `production`, `sandbox` or both."),
        .text("default_environment", \.defaultEnvironment, "APNs: for jobs that name none."),
        .flag("environment_fallback", \.environmentFallback, "APNs: a BadDeviceToken is tried once in the other environment."),
    ]

    /// The retry policy's numbers, rooted at `RetrySettings` so `retry.queues.<queue>` reads its overrides with
    /// the same declarations (`perQueueRetryKeys`).
    static let retrySettings: [Setting<RetrySettings>] = [
        .integer("server_error_base_seconds", \.serverErrorBaseSeconds, 1...maxRetryDelaySeconds,
                 "First retry after a 500/503: 15 minutes, doubling per attempt."),
        .integer("server_error_cap_seconds", \.serverErrorCapSeconds, 1...maxRetryDelaySeconds, "Back-off cap (4 hours); at least the base."),
        .integer("throttle_base_seconds", \.throttleBaseSeconds, 1...maxRetryDelaySeconds, "First retry after 429 TooManyRequests, doubling."),
        .integer("throttle_cap_seconds", \.throttleCapSeconds, 1...maxRetryDelaySeconds, "Its cap (10 minutes); at least the base."),
        .fraction("jitter_fraction", \.jitterFraction, from: 0, below: 1,
                  "Each delay is spread by up to this fraction, so retries do not arrive in a wave."),
        .integer("max_attempts", \.maxAttempts, 1...1_000,
                 "Attempts per job, immediate resends after a lost connection or a timeout included (not refused streams or GOAWAYs: APNs did not process those); after that a retry becomes `failed` with reason `MaxAttempts:<reason>`."),
        .integer("configuration_pause_seconds", \.configurationPauseSeconds, 1...86_400,
                 "An app and environment with a credential error is paused this long (its jobs wait; nothing is dropped); then the key or certificate is read again."),
        .integer("outage_pause_seconds", \.outagePauseSeconds, 1...3_600,
                 "First pause of an app and environment that APNs cannot be reached for (connect or TLS failure, a server that processes nothing); doubles while the outage lasts. Jobs wait in Redis with no attempt counted."),
        .integer("outage_pause_cap_seconds", \.outagePauseCapSeconds, 1...3_600,
                 "Longest outage pause: at worst this long after APNs (or FCM) is back before the worker notices; at least `outage_pause_seconds`. The probe after each pause opens a connection at once, whatever the connection pool's own reconnect back-off (up to 60 s) says."),
        .integer("give_up_after_seconds", \.giveUpAfterSeconds, 0...31_536_000, off: true, default: "0 (none)",
                 "A job whose next retry or resend would come later than this after its first attempt fails with reason `GaveUp:<reason>` instead. Pauses (outage, credentials) never fail a job, but their time counts. At most a year."),
    ]

    /// What `retry.queues.<queue>` may override: the job-level numbers. The pauses are per destination, not per
    /// job, so they stay global.
    static let perQueueRetryKeys: Set<String> = ["server_error_base_seconds", "server_error_cap_seconds", "throttle_base_seconds",
                                                 "throttle_cap_seconds", "jitter_fraction", "max_attempts", "give_up_after_seconds"]
    static var perQueueRetrySettings: [Setting<RetrySettings>] { retrySettings.filter { perQueueRetryKeys.contains($0.key) } }

    static let retryQueues: Setting<Configuration> = .custom(
        "retry.queues", default: "none",
        "Per-queue retry policies: `{\"<queue key>\": {overrides}}`. A job follows the policy of the queue it was taken from (a retry goes back to that queue, so all its attempts do). Each may override `server_error_base_seconds`, `server_error_cap_seconds`, `throttle_base_seconds`, `throttle_cap_seconds`, `jitter_fraction`, `max_attempts` and `give_up_after_seconds`, within the same bounds; what it leaves out is the global value above. The pauses are per app and environment, not per job, so they stay global. Only keys of `redis.queues`.",
        read: { value, c, name, problems in
            guard let queues = value as? [String: Any] else { return problems.append("\(name) must be an object") }
            for (key, value) in queues.sorted(by: { $0.key < $1.key }) where !key.hasPrefix("//") {
                guard let overrides = value as? [String: Any] else { problems.append("\(name).\(key) must be an object"); continue }
                var settings = c.retry
                problems += SettingsReader.apply(perQueueRetrySettings, object: overrides, to: &settings, at: "\(name).\(key).")
                // A cap below an overridden base would be refused; a base above the inherited cap lifts the cap with it.
                if overrides["server_error_cap_seconds"] == nil { settings.serverErrorCapSeconds = max(settings.serverErrorCapSeconds, settings.serverErrorBaseSeconds) }
                if overrides["throttle_cap_seconds"] == nil { settings.throttleCapSeconds = max(settings.throttleCapSeconds, settings.throttleBaseSeconds) }
                c.queueRetry[key] = settings
            }
        },
        check: { c in
            c.queueRetry.sorted(by: { $0.key < $1.key }).flatMap { queue, settings in
                (c.redis.queueKeys.contains(queue) ? [] : ["retry.queues: '\(queue)' is not one of redis.queues"])
                    + retryProblems(settings, perQueueRetrySettings, at: "retry.queues.\(queue).")
            }
        })

    /// The bounds of each number, then the caps against their bases, each naming its keys under `at`.
    static func retryProblems(_ r: RetrySettings, _ settings: [Setting<RetrySettings>] = retrySettings, at: String) -> [String] {
        var problems = settings.compactMap { $0.check(r, at + $0.key) }
        if r.serverErrorCapSeconds < r.serverErrorBaseSeconds {
            problems.append("\(at)server_error_cap_seconds (\(r.serverErrorCapSeconds)) must be at least \(at)server_error_base_seconds (\(r.serverErrorBaseSeconds))")
        }
        if r.throttleCapSeconds < r.throttleBaseSeconds {
            problems.append("\(at)throttle_cap_seconds (\(r.throttleCapSeconds)) must be at least \(at)throttle_base_seconds (\(r.throttleBaseSeconds))")
        }
        if r.outagePauseCapSeconds < r.outagePauseSeconds {
            problems.append("\(at)outage_pause_cap_seconds (\(r.outagePauseCapSeconds)) must be at least \(at)outage_pause_seconds (\(r.outagePauseSeconds))")
        }
        return problems
    }

    static let workerSettings: [Setting<Configuration>] = [
        .optionalText("worker.id", \.worker.id, environment: "HERALD_WORKER_ID", default: "`<hostname>-<pid>-<random>`",
                      "Names the worker in leases and results."),
        .integer("worker.max_in_flight", \.worker.maxInFlight, 1...1_000_000, environment: "HERALD_MAX_IN_FLIGHT",
                 "Jobs claimed and not yet recorded, per process: with `event_loops` N each loop gets 1/N of it (and claims at most that many at once). Memory stays flat at any queue length (about 60 MB at 10,000)."),
        .integer("worker.claim_batch", \.worker.claimBatch, 1...10_000, "Jobs claimed per Redis round trip."),
        .integer("worker.lease_seconds", \.worker.leaseSeconds, 2...86_400,
                 "A worker that stops heartbeating for this long is presumed dead; its jobs go back to the queue."),
        .integer("worker.shutdown_deadline_seconds", \.worker.shutdownDeadlineSeconds, 0...3_600,
                 "On SIGTERM, how long in-flight requests may take before their leases are returned."),
        .flag("worker.run_scheduler", \.worker.runScheduler, "Move due retries to the queue (safe in every worker at once)."),
        .flag("worker.run_reaper", \.worker.runReaper, "Return the jobs of dead workers (safe in every worker at once)."),
        .integer("worker.results_max_length", \.worker.resultsMaxLength, 1...1_000_000_000, "Approximate length the results stream is trimmed to."),
        .integer("worker.dead_max_length", \.worker.deadMaxLength, 1...1_000_000_000, "Length the dead-letter list is trimmed to."),
        .integer("worker.archive_max_length", \.worker.archiveMaxLength, 0...1_000_000_000, off: true,
                 "Approximate length of the failed-job archive `<prefix>:archive` (jobs that ended `failed` or `token_dropped`, with their bytes, for `herald replay`); 0 keeps none."),
        .integer("worker.event_loops", \.worker.eventLoops, 1...64,
                 "Pipelines (threads) in one process, each with its own Redis and APNs connections."),
        .text("worker.log_level", \.worker.logLevel, environment: "HERALD_LOG_LEVEL", "`debug`, `info`, `warning`, `error`."),
        .integer("worker.flush_interval_ms", \.worker.flushIntervalMs, 0...1_000, "Results are written in batches at most this much later."),
        .integer("worker.idempotency_window_seconds", \.worker.idempotencyWindowSeconds, 0...2_592_000, off: true, default: "0 (off)",
                 "A job `id` taken within this many seconds (from its first claim) is not sent again: the copy gets outcome `duplicate` (docs/job-format.md, \"Idempotency\"). E.g. `86400`; at most 30 days. Every worker sharing a Redis should use the same value."),
        .integer("worker.max_schedule_days", \.worker.maxScheduleDays, 1...3_650,
                 "How far ahead a job's `deliver_at` may lie, in days. A job scheduled further ahead is rejected with `bad_deliver_at` instead of waiting for ever: usually a time in microseconds or nanoseconds where milliseconds were meant."),
    ]

    static let resultsSettings: [Setting<Configuration>] = [
        .integer("results.index_ttl_seconds", \.results.indexTTLSeconds, 0...2_592_000, off: true, default: "0 (off)",
                 "Keep a small index of each job's latest result entries (one per token) at `<prefix>:result:<job id>`, expiring this many seconds after the job's last entry, for `GET /v1/jobs/<id>` (docs/api.md, \"Job status\"; its Redis cost in docs/results.md). E.g. `86400`; at most 30 days. 0 writes none. The API process reads it; workers write it."),
    ]

    /// Budgets pace in whole microseconds (Redis's `TIME`): a million a second is the most one can space, so the
    /// bounds stop there (issue 54: 10,000,000 a second was accepted and ran at a tenth of it).
    static let budgetSettings: [Setting<Configuration>] = [
        .integer("budgets.app_per_second", \.budgets.appPerSecond, 0...1_000_000, off: true, default: "0 (off)",
                 "Sends per second to each app (an FCM project, an APNs app), for every worker together, evenly spaced; a job over it waits in the retry set (`RateLimited:app`, no attempt spent). Lowered after a provider's 429 and climbs back (`adaptive_*`). docs/budgets.md."),
        .integer("budgets.app_per_minute", \.budgets.appPerMinute, 0...60_000_000, off: true, default: "0 (off)",
                 "Sends per minute to each app, e.g. `600000`, FCM's project quota."),
        .integer("budgets.device_per_second", \.budgets.devicePerSecond, 0...1_000_000, off: true, default: "0 (off)",
                 "Sends per second to one device token (`RateLimited:device`). A Huawei many-token job is paced by the app and queue budgets only."),
        .integer("budgets.device_per_minute", \.budgets.devicePerMinute, 0...60_000_000, off: true, default: "0 (off)",
                 "Sends per minute to one device token, e.g. a limit for APNs tokens (Apple publishes none)."),
        .integer("budgets.device_per_hour", \.budgets.devicePerHour, 0...1_000_000_000, off: true, default: "0 (off)",
                 "Sends per hour to one device token."),
        .flag("budgets.fcm_device_defaults",  \.budgets.fcmDeviceDefaults,
              "FCM's published per-device limits for FCM tokens: 240 a minute and 5,000 an hour, where `device_per_minute` and `device_per_hour` are 0."),
        .integer("budgets.queue_per_second", \.budgets.queuePerSecond, 0...1_000_000, off: true, default: "0 (off)",
                 "Sends per second from each queue (a tenant's share; `RateLimited:queue`). Fair share and `retry.queues` still apply."),
        .integer("budgets.channel_per_second", \.budgets.channelPerSecond, 0...1_000_000, off: true, default: "0 (off)",
                 "Broadcasts per second to one APNs channel (`RateLimited:channel`)."),
        .integer("budgets.adaptive_floor_percent", \.budgets.adaptiveFloorPercent, 1...100,
                 "After a provider's 429 an app's per-second budget halves, but not below this share of `app_per_second`. 100 keeps it fixed."),
        .integer("budgets.adaptive_recovery_answers", \.budgets.adaptiveRecoveryAnswers, 1...1_000_000,
                 "Good answers from the app before a lowered budget climbs one step (a tenth of `app_per_second`) back; each worker keeps its own (`herald_budget_app_per_second`)."),
    ]

    static let metricsSettings: [Setting<Configuration>] = [
        .text("metrics.listen", \.metrics.listen, environment: "HERALD_METRICS_LISTEN", emptyFromEnvironment: true,
              "Where the worker serves `/metrics`, `/healthz` and `/readyz` (docs/observability.md): `host:port`, `[v6]:port`, or `:port` for every interface. Empty turns the listener off (also when `HERALD_METRICS_LISTEN` is set but empty). A port that cannot be bound is logged (`metrics listener not started`) and the worker runs without it."),
    ]

    static let apiSettings: [Setting<Configuration>] = [
        .text("api.listen", \.api.listen, environment: "HERALD_API_LISTEN",
              "Where `herald api` serves (docs/api.md): `host:port`, `[v6]:port`, or `:port` for every interface. `--listen` wins."),
        .integer("api.max_connections", \.api.maxConnections, 1...1_000_000, "Open connections at most; a newcomer past that is answered 503 and closed."),
        .integer("api.max_body_bytes", \.api.maxBodyBytes, 1...(256 << 20), "The largest request body (413 past it)."),
        .integer("api.max_head_bytes", \.api.maxHeadBytes, 256...(1 << 20), "The largest request line and header fields together (431 past it)."),
        .integer("api.max_jobs_per_request", \.api.maxJobsPerRequest, 1...100_000, "The most jobs in one `POST /v1/jobs` (413 past it)."),
        .integer("api.request_timeout_ms", \.api.requestTimeoutMs, 100...maxTimeoutMs,
                 "A request must arrive whole within this of its first byte, and its answer be read within as long; else the connection is closed."),
        .integer("api.idle_timeout_ms", \.api.idleTimeoutMs, 100...maxTimeoutMs, "An idle keep-alive connection is closed after this."),
        .flag("api.gorush_metrics", \.api.gorushMetrics,
              "Also export gorush's metric families on `/metrics` (`gorush_total_push_count`, `gorush_ios_success`, `gorush_android_fail`, ...: docs/api.md), counted from the results streams, so a gorush dashboard keeps working."),
        .custom("api.keys", default: "none (every request is served)",
                "API keys: a list of `{\"name\", \"sha256\", \"apps\", \"queues\", \"rate_per_second\", \"burst\"}`. `sha256` is the lower-case hex SHA-256 of the key (`printf %s \"$KEY\" | sha256sum`); the key itself is never stored. `apps` and `queues` (configured queue keys) limit what it may send (empty or absent: all); `rate_per_second` limits the sends it submits to one API process, a job counting one per device token (a multicast of 200 tokens is 200; 0 or absent: no limit), `burst` how many at once (at least one second's worth; a request with more sends is answered 413). With any key, every `/v1` and `/api` request needs `Authorization: Bearer <key>` (or `X-API-Key`).",
                read: { value, c, name, problems in
                    guard let list = value as? [Any] else { return problems.append("\(name) must be a list") }
                    for (index, item) in list.enumerated() {
                        let at = "\(name)[\(index)]"
                        guard let object = item as? [String: Any] else { problems.append("\(at) must be an object"); continue }
                        let keyName = object["name"] as? String ?? ""
                        let hash = (object["sha256"] as? String ?? "").lowercased()
                        var key = APISettings.Key(name: keyName, sha256: hash)
                        if keyName.isEmpty { problems.append("\(at).name must be a non-empty string") }
                        if hash.count != 64 || !hash.allSatisfy(\.isHexDigit) {
                            problems.append("\(at).sha256 must be 64 hex digits: the SHA-256 of the key, not the key")
                        }
                        for field in ["apps", "queues"] where object[field] != nil && !(object[field] is [String]) {
                            problems.append("\(at).\(field) must be a list of strings")
                        }
                        key.apps = object["apps"] as? [String] ?? []
                        key.queues = object["queues"] as? [String] ?? []
                        for field in ["rate_per_second", "burst"] {
                            guard let raw = object[field] else { continue }
                            guard let n = raw as? NSNumber, !isBoolean(n), n.doubleValue == n.doubleValue.rounded(), (0...1_000_000).contains(n.doubleValue) else {
                                problems.append("\(at).\(field) must be a whole number 0...1000000")
                                continue
                            }
                            if field == "burst" { key.burst = n.intValue } else { key.ratePerSecond = n.intValue }
                        }
                        c.api.keys.append(key)
                    }
                },
                check: { c in
                    var problems: [String] = []
                    var names = Set<String>()
                    var hashes: [String: String] = [:]
                    for key in c.api.keys {
                        if !names.insert(key.name).inserted { problems.append("api.keys: the name '\(key.name)' is given twice") }
                        // One secret, one key: with two entries the API would serve it with whichever's grants came last.
                        if let first = hashes[key.sha256] {
                            problems.append("api.keys: key '\(key.name)' has the sha256 of key '\(first)': each key needs its own secret")
                        } else if !key.sha256.isEmpty {
                            hashes[key.sha256] = key.name
                        }
                        for app in key.apps where !c.apps.contains(where: { $0.name == app }) {
                            problems.append("api.keys: key '\(key.name)' names app '\(app)', which is not configured")
                        }
                        for queue in key.queues where !c.redis.queueKeys.contains(queue) {
                            problems.append("api.keys: key '\(key.name)' names queue '\(queue)', which is not one of redis.queues")
                        }
                    }
                    // The TLS files go together (checked here, the one api setting with a check).
                    if c.api.tlsCertificateFile.isEmpty != c.api.tlsKeyFile.isEmpty {
                        problems.append("api.tls: cert_file and key_file go together (give both, or neither for plain HTTP)")
                    }
                    if !c.api.tlsClientCAFile.isEmpty && c.api.tlsCertificateFile.isEmpty {
                        problems.append("api.tls.client_ca_file needs cert_file and key_file: client certificates are asked for over TLS only")
                    }
                    return problems
                }),
        .text("api.tls.cert_file", \.api.tlsCertificateFile,
              "PEM certificate (chain) to serve HTTPS with; with `key_file`. Unset: plain HTTP."),
        .text("api.tls.key_file", \.api.tlsKeyFile, "PEM private key of `cert_file`."),
        .text("api.tls.client_ca_file", \.api.tlsClientCAFile,
              "PEM CA bundle: when set, every client must present a certificate it signed (mutual TLS)."),
    ]

    /// The device registry (docs/devices.md): ages in days; a removal's record is kept for `removed_retention_days`.
    static let registrySettings: [Setting<Configuration>] = [
        .flag("registry.enabled", \.registry.enabled,
              "Keep a device registry in Redis (docs/devices.md): `PUT /v1/devices/...` registers devices, every worker's completion removes the ones a provider answers gone (`token_dropped`) and stamps deliveries, and workers age devices unseen for long (`stale_after_days`, `remove_after_days`). Off: no registry key is read or written."),
        .integer("registry.stale_after_days", \.registry.staleAfterDays, 1...3_650,
                 "A device not registered again (refreshed) for this many days becomes stale: still addressable by token, left out of audiences. 30: Google's rule for FCM tokens, the default of every platform (the others publish none)."),
        .integer("registry.remove_after_days", \.registry.removeAfterDays, 1...3_650,
                 "A device unseen for this many days is removed (reason `unseen`). 270: when FCM expires an unused Android token."),
        .custom("registry.platforms", default: "none: every platform takes the two ages above", allowed: "1...3650 days each",
                "Ages of one platform's devices: `{\"webpush\": {\"stale_after_days\": 14, \"remove_after_days\": 60}}`; a platform not named takes `stale_after_days` and `remove_after_days`.",
                read: { value, c, name, problems in
                    guard let object = value as? [String: Any] else { return problems.append("\(name) must be an object") }
                    let known: [String] = c.providers.map { $0.platform.rawValue }
                    for platform in object.keys.sorted() where !platform.hasPrefix("//") {
                        guard known.contains(platform) else {
                            problems.append("\(name).\(platform) is not a platform (\(known.joined(separator: ", ")))")
                            continue
                        }
                        guard let ages = object[platform] as? [String: Any], Set(ages.keys).isSubset(of: ["stale_after_days", "remove_after_days"]) else {
                            problems.append("\(name).\(platform) must be {\"stale_after_days\", \"remove_after_days\"}")
                            continue
                        }
                        var aging = c.registry.aging(.init(rawValue: platform)!)
                        var good = true
                        for key in ["stale_after_days", "remove_after_days"] {
                            guard let raw = ages[key] else { continue }
                            guard let n = raw as? NSNumber, !isBoolean(n), n.doubleValue == n.doubleValue.rounded(), (1...3_650).contains(n.doubleValue) else {
                                problems.append("\(name).\(platform).\(key) must be a whole number of days, 1...3650")
                                good = false
                                continue
                            }
                            if key == "stale_after_days" { aging.staleAfterDays = n.intValue } else { aging.removeAfterDays = n.intValue }
                        }
                        if good { c.registry.platforms[platform] = aging }
                    }
                },
                check: { c in
                    var problems: [String] = []
                    for provider in c.providers {
                        let aging = c.registry.aging(provider.platform)
                        if aging.removeAfterDays < aging.staleAfterDays {
                            problems.append("registry: \(provider.platform.rawValue) devices would be removed (after \(aging.removeAfterDays) days) before they are stale (after \(aging.staleAfterDays)): remove_after_days must be at least stale_after_days")
                        }
                    }
                    return problems
                }),
        .custom("registry.apps", default: "none: devices without a time zone are at UTC, no quiet hours", allowed: "configured app names",
                "Per app, its campaigns' local time (docs/campaigns.md, \"Local time and quiet hours\"): `{\"shop\": {\"time_zone\": \"Europe/Berlin\", \"quiet_hours\": {\"start\": \"22:00\", \"end\": \"08:00\"}}}`. `time_zone` (IANA) is the zone of its devices registered without one (UTC otherwise); during `quiet_hours` (in each device's local time, crossing midnight when `end` is earlier) a campaign's job for a device waits until the window ends, unless the notification is `time_sensitive` or the campaign says `quiet_hours: false`.",
                read: { value, c, name, problems in
                    guard let object = value as? [String: Any] else { return problems.append("\(name) must be an object") }
                    for app in object.keys.sorted() where !app.hasPrefix("//") {
                        guard let members = object[app] as? [String: Any], Set(members.keys).isSubset(of: ["time_zone", "quiet_hours"]) else {
                            problems.append("\(name).\(app) must be {\"time_zone\", \"quiet_hours\"}")
                            continue
                        }
                        var local = RegistrySettings.AppLocalTime()
                        if let zone = members["time_zone"] {
                            guard let zone = zone as? String, LocalTime.zone(zone) != nil else {
                                problems.append("\(name).\(app).time_zone must be an IANA time zone such as Europe/Berlin")
                                continue
                            }
                            local.timeZone = zone
                        }
                        if let quiet = members["quiet_hours"] {
                            let window = quiet as? [String: Any]
                            guard let window, let hours = QuietHours(start: window["start"] as? String, end: window["end"] as? String, members: window.count) else {
                                problems.append("\(name).\(app).quiet_hours: \(QuietHours.rule)")
                                continue
                            }
                            local.quietHours = hours
                        }
                        c.registry.apps[app] = local
                    }
                },
                check: { c in
                    let names = Set(c.apps.map(\.name))
                    return c.registry.apps.keys.sorted().filter { !names.contains($0) }.map { "registry.apps.\($0) is not a configured app" }
                }),
        .integer("registry.removed_retention_days", \.registry.removedRetentionDays, 1...3_650,
                 "How long a removed device's record (its reason and the provider's answer) stays readable (`GET /v1/devices/...`) before the sweeper purges it."),
        .integer("registry.sweep_interval_ms", \.registry.sweepIntervalMs, 1_000...maxTimeoutMs,
                 "How often each worker sweeps (ages) the registry. Every worker may: a sweep takes a bounded batch per list atomically, so many workers only share the work."),
        .integer("registry.sweep_batch", \.registry.sweepBatch, 1...100_000,
                 "The most devices one sweep call makes stale, removes or purges in one list (an app's devices on one platform); more due: the next sweep comes at once."),
        .integer("registry.events_max_length", \.registry.eventsMaxLength, 1_000...RegistrySettings.maxEventsLength,
                 "Approximate length cap of the `<prefix>:device-events` stream (XADD MAXLEN ~)."),
    ]

    /// The settings an environment variable overrides, in declaration order.
    public static func environmentSettings(_ providers: [any PushProvider.Type]) -> [Setting<Configuration>] {
        settings(providers).filter { $0.environment != nil }
    }

    /// The settings whose value is a whole number, with their bounds and access to the field.
    public static func numericSettings(_ providers: [any PushProvider.Type]) -> [(key: String, access: NumberAccess<Configuration>)] {
        settings(providers).compactMap { s in s.number.map { (s.key, $0) } }
    }
}

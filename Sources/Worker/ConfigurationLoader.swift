import APNs
import Foundation
import PushCore
import RedisQueue

/// Reads the JSON configuration and the environment overrides, collecting every problem instead of
/// stopping at the first, so `herald check-config` can list them all in one run.
public enum ConfigurationLoader {
    /// Environment variables that override the file (documented in docs/configuration.md).
    public static let environmentOverrides = [
        "HERALD_REDIS_URL", "HERALD_REDIS_PREFIX", "HERALD_QUEUES", "HERALD_MAX_IN_FLIGHT", "HERALD_LOG_LEVEL",
        "HERALD_WORKER_ID", "HERALD_APNS_PRODUCTION_URL", "HERALD_APNS_SANDBOX_URL", "HERALD_APNS_CA_FILE",
        "HERALD_APNS_CONNECTIONS", "HERALD_APNS_PROXY", "HERALD_APNS_CHANNELS_PRODUCTION_URL", "HERALD_APNS_CHANNELS_SANDBOX_URL",
        "HERALD_FCM_URL", "HERALD_FCM_CA_FILE", "HERALD_FCM_PROXY",
        "HERALD_METRICS_LISTEN", "HERALD_REDIS_SHARDS",
        "HERALD_REDIS_TLS_CA_FILE", "HERALD_REDIS_TLS_CERT_FILE", "HERALD_REDIS_TLS_KEY_FILE", "HERALD_REDIS_TLS_SERVER_NAME",
    ]

    public static func load(path: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError) -> Configuration {
        var configuration = Configuration()
        var problems: [String] = []
        if let path {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError(["cannot read configuration file \(path)"])
            }
            do {
                let object = try JSONSerialization.jsonObject(with: data)
                guard let root = object as? [String: Any] else { throw ConfigurationError(["\(path): the top level must be a JSON object"]) }
                var reader = Reader(problems: [])
                reader.apply(root, to: &configuration)
                problems += reader.problems.map { "\(path): \($0)" }
            } catch let error as ConfigurationError {
                throw error
            } catch {
                throw ConfigurationError(["\(path): not valid JSON (\(error.localizedDescription))"])
            }
        }
        applyEnvironment(environment, to: &configuration, problems: &problems)
        problems += validate(configuration)
        if !problems.isEmpty { throw ConfigurationError(problems) }
        return configuration
    }

    /// Only the `redis` section (plus environment overrides), for tools that do not send.
    public static func loadRedisOnly(path: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError) -> Configuration.RedisSettings {
        guard let data = FileManager.default.contents(atPath: path),
              let root = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw ConfigurationError(["cannot read configuration file \(path) as a JSON object"])
        }
        var configuration = Configuration()
        var reader = Reader(problems: [])
        reader.apply(["redis": root["redis"] ?? [String: Any]()], to: &configuration)
        var problems = reader.problems
        applyEnvironment(environment, to: &configuration, problems: &problems)
        if !problems.isEmpty { throw ConfigurationError(problems) }
        return configuration.redis
    }

    /// The defaults with the environment's overrides (HERALD_REDIS_URL, HERALD_REDIS_TLS_*, ...), for tools run
    /// without a configuration file.
    public static func redisFromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError) -> Configuration.RedisSettings {
        var configuration = Configuration()
        var problems: [String] = []
        applyEnvironment(environment, to: &configuration, problems: &problems)
        if !problems.isEmpty { throw ConfigurationError(problems) }
        return configuration.redis
    }

    static func applyEnvironment(_ env: [String: String], to c: inout Configuration, problems: inout [String]) {
        if let v = env["HERALD_REDIS_URL"], !v.isEmpty { c.redis.url = v }
        if let v = env["HERALD_REDIS_PREFIX"], !v.isEmpty { c.redis.prefix = v }
        if let v = env["HERALD_REDIS_TLS_CA_FILE"], !v.isEmpty { c.redis.tls.caFile = v }
        if let v = env["HERALD_REDIS_TLS_CERT_FILE"], !v.isEmpty { c.redis.tls.certFile = v }
        if let v = env["HERALD_REDIS_TLS_KEY_FILE"], !v.isEmpty { c.redis.tls.keyFile = v }
        if let v = env["HERALD_REDIS_TLS_SERVER_NAME"], !v.isEmpty { c.redis.tls.serverName = v }
        if let v = env["HERALD_QUEUES"], !v.isEmpty {
            c.redis.queues = v.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        if let v = env["HERALD_REDIS_SHARDS"], !v.isEmpty {
            if let n = Int(v) { c.redis.shards = n } else { problems.append("HERALD_REDIS_SHARDS must be a whole number, got '\(v)'") }
        }
        if let v = env["HERALD_MAX_IN_FLIGHT"], !v.isEmpty {
            if let n = Int(v) { c.worker.maxInFlight = n } else { problems.append("HERALD_MAX_IN_FLIGHT must be a whole number, got '\(v)'") }
        }
        if let v = env["HERALD_LOG_LEVEL"], !v.isEmpty { c.worker.logLevel = v }
        if let v = env["HERALD_WORKER_ID"], !v.isEmpty { c.worker.id = v }
        if let v = env["HERALD_APNS_PRODUCTION_URL"], !v.isEmpty { c.apns.productionURL = v }
        if let v = env["HERALD_APNS_SANDBOX_URL"], !v.isEmpty { c.apns.sandboxURL = v }
        if let v = env["HERALD_APNS_CHANNELS_PRODUCTION_URL"], !v.isEmpty { c.apns.channelsProductionURL = v }
        if let v = env["HERALD_APNS_CHANNELS_SANDBOX_URL"], !v.isEmpty { c.apns.channelsSandboxURL = v }
        if let v = env["HERALD_APNS_CA_FILE"], !v.isEmpty { c.apns.caFile = v }
        if let v = env["HERALD_APNS_PROXY"], !v.isEmpty { c.apns.proxy = v }
        if let v = env["HERALD_FCM_URL"], !v.isEmpty { c.fcm.url = v }
        if let v = env["HERALD_FCM_CA_FILE"], !v.isEmpty { c.fcm.caFile = v }
        if let v = env["HERALD_FCM_PROXY"], !v.isEmpty { c.fcm.proxy = v }
        // Set but empty turns the listener off.
        if let v = env["HERALD_METRICS_LISTEN"] { c.metrics.listen = v }
        if let v = env["HERALD_APNS_CONNECTIONS"], !v.isEmpty {
            if let n = Int(v) { c.apns.connectionsPerPool = n } else { problems.append("HERALD_APNS_CONNECTIONS must be a whole number, got '\(v)'") }
        }
    }

    /// Cross-field rules: ranges, app names, exactly one credential per app.
    public static func validate(_ c: Configuration) -> [String] {
        var problems: [String] = []
        do {
            _ = try RedisURL(parsing: c.redis.url)
        } catch {
            // The parse error names the URL with its password redacted.
            problems.append("redis.url: \(error.description)")
        }
        if c.redis.mode == .cluster { problems += c.redis.clusterProblems() }
        problems += c.redis.tls.problems(url: c.redis.url)
        if !c.metrics.listen.isEmpty && ListenAddress(c.metrics.listen) == nil {
            problems.append("metrics.listen must be host:port, [v6]:port or :port (empty turns it off), got '\(c.metrics.listen)'")
        }
        if c.redis.prefix.isEmpty { problems.append("redis.prefix must not be empty") }
        if !QueueKeys.isValid(c.redis.prefix) { problems.append("redis.prefix may not contain quotes, backslashes or control characters") }
        for queue in c.redis.queues where queue.isEmpty || !QueueKeys.isValid(queue) {
            problems.append("redis.queues: '\(queue)' is not a usable key (empty, or quotes, backslashes, control characters)")
        }
        if let id = c.worker.id, id.isEmpty || !QueueKeys.isValid(id) {
            problems.append("worker.id '\(id)' may not be empty or contain quotes, backslashes or control characters")
        }
        problems += c.redis.shardProblems()
        if c.redis.connectTimeoutMs < 100 { problems.append("redis.connect_timeout_ms must be at least 100") }
        if c.redis.commandTimeoutMs < 100 { problems.append("redis.command_timeout_ms must be at least 100") }
        problems += c.redis.topologyProblems()
        if c.apns.connectTimeoutMs < 100 { problems.append("apns.connect_timeout_ms must be at least 100") }
        if c.apns.pingIdleSeconds < 1 { problems.append("apns.ping_idle_seconds must be at least 1") }
        if c.apns.pingTimeoutSeconds < 1 { problems.append("apns.ping_timeout_seconds must be at least 1") }
        if c.apns.maxQueuedPerPool < 1 { problems.append("apns.max_queued_per_pool must be at least 1") }
        if c.worker.resultsMaxLength < 1 { problems.append("worker.results_max_length must be at least 1") }
        if c.worker.deadMaxLength < 1 { problems.append("worker.dead_max_length must be at least 1") }
        if c.worker.archiveMaxLength < 0 { problems.append("worker.archive_max_length must not be negative (0 keeps no archive)") }
        for (queue, weight) in c.redis.queueWeights.sorted(by: { $0.key < $1.key }) {
            if !c.redis.queueKeys.contains(queue) { problems.append("redis.queue_weights: '\(queue)' is not one of redis.queues") }
            if weight < 1 || weight > 1000 { problems.append("redis.queue_weights: the weight of '\(queue)' must be 1...1000") }
        }
        for (queue, settings) in c.queueRetry.sorted(by: { $0.key < $1.key }) {
            if !c.redis.queueKeys.contains(queue) { problems.append("retry.queues: '\(queue)' is not one of redis.queues") }
            if let problem = settings.problem() { problems.append("retry.queues.\(queue): \(problem)") }
        }
        if c.worker.shutdownDeadlineSeconds < 0 { problems.append("worker.shutdown_deadline_seconds must not be negative") }
        if c.worker.flushIntervalMs < 0 || c.worker.flushIntervalMs > 1000 { problems.append("worker.flush_interval_ms must be 0...1000") }
        if c.worker.idempotencyWindowSeconds < 0 || c.worker.idempotencyWindowSeconds > 30 * 86_400 {
            problems.append("worker.idempotency_window_seconds must be 0 (off) ... 2592000 (30 days)")
        }
        for (name, url) in [("apns.production_url", c.apns.productionURL), ("apns.sandbox_url", c.apns.sandboxURL),
                            ("apns.channels_production_url", c.apns.channelsProductionURL),
                            ("apns.channels_sandbox_url", c.apns.channelsSandboxURL)] {
            if APNsURL(url) == nil { problems.append("\(name) must look like https://host[:port], got '\(url)'") }
        }
        if APNsURL(c.fcm.url) == nil { problems.append("fcm.url must look like https://host[:port], got '\(c.fcm.url)'") }
        if c.fcm.connectionsPerPool < 1 || c.fcm.connectionsPerPool > 64 { problems.append("fcm.connections_per_pool must be 1...64") }
        if c.fcm.requestTimeoutMs < 100 { problems.append("fcm.request_timeout_ms must be at least 100") }
        if c.fcm.connectTimeoutMs < 100 { problems.append("fcm.connect_timeout_ms must be at least 100") }
        if c.fcm.tokenTimeoutMs < 100 { problems.append("fcm.token_timeout_ms must be at least 100") }
        if c.fcm.maxQueuedPerPool < 1 { problems.append("fcm.max_queued_per_pool must be at least 1") }
        if c.apns.connectionsPerPool < 1 || c.apns.connectionsPerPool > 64 { problems.append("apns.connections_per_pool must be 1...64") }
        if c.apns.requestTimeoutMs < 100 { problems.append("apns.request_timeout_ms must be at least 100") }
        if c.worker.maxInFlight < 1 { problems.append("worker.max_in_flight must be at least 1") }
        if c.worker.claimBatch < 1 || c.worker.claimBatch > 10000 { problems.append("worker.claim_batch must be 1...10000") }
        if c.worker.leaseSeconds < 2 { problems.append("worker.lease_seconds must be at least 2") }
        if c.worker.eventLoops < 1 || c.worker.eventLoops > 64 { problems.append("worker.event_loops must be 1...64") }
        if LogLevel(name: c.worker.logLevel) == nil { problems.append("worker.log_level must be debug, info, warning or error") }
        if let problem = c.retry.problem() { problems.append("retry: \(problem)") }
        if c.apps.isEmpty { problems.append("no apps configured: add at least one entry to \"apps\"") }
        var seen = Set<String>()
        for (index, app) in c.apps.enumerated() {
            let label = app.name.isEmpty ? "apps[\(index)]" : "app '\(app.name)'"
            if app.name.isEmpty { problems.append("\(label): name is required") }
            if !seen.insert(app.name).inserted { problems.append("\(label): the name is used twice") }
            if let fcm = app.fcm {
                if app.token != nil || app.certificate != nil {
                    problems.append("\(label): an FCM app (\"fcm\") takes no APNs \"token\" or \"certificate\"; make a second app for APNs")
                }
                if fcm.serviceAccountFile.isEmpty { problems.append("\(label): fcm.service_account_file is required") }
                if app.environmentFallback { problems.append("\(label): environment_fallback is for APNs apps") }
                continue
            }
            if app.bundleID.isEmpty { problems.append("\(label): bundle_id is required") }
            for environment in app.environments where environment != "production" && environment != "sandbox" {
                problems.append("\(label): environment '\(environment)' is not production or sandbox")
            }
            if app.environmentFallback && !(app.environments.contains("production") && app.environments.contains("sandbox")) {
                problems.append("\(label): environment_fallback needs both production and sandbox in its environments")
            }
            if !app.environments.contains(app.defaultEnvironment) {
                problems.append("\(label): default_environment '\(app.defaultEnvironment)' is not among its environments")
            }
            switch (app.token, app.certificate) {
            case (nil, nil): problems.append("\(label): needs \"token\" (team_id, key_id, key_file), \"certificate\" or \"fcm\" (service_account_file) credentials")
            case (.some, .some): problems.append("\(label): give either \"token\" or \"certificate\", not both")
            case (let token?, nil):
                if token.teamID.count != 10 { problems.append("\(label): token.team_id must be 10 characters") }
                if token.keyID.count != 10 { problems.append("\(label): token.key_id must be 10 characters") }
                if token.keyFile.isEmpty { problems.append("\(label): token.key_file is required") }
                if token.refreshMinutes < 20 || token.refreshMinutes > 60 { problems.append("\(label): token.refresh_minutes must be 20...60 (Apple's window)") }
            case (nil, let cert?):
                if cert.pkcs12File == nil && cert.pemFile == nil { problems.append("\(label): certificate needs pem_file (+ key_file) or pkcs12_file") }
            }
        }
        return problems
    }
}

/// `https://host[:port]` split into its parts; port defaults to 443.
public struct APNsURL: Sendable, Equatable {
    public let host: String
    public let port: Int

    public init?(_ text: String) {
        guard let components = URLComponents(string: text), components.scheme == "https",
              let host = components.host, !host.isEmpty else { return nil }
        let port = components.port ?? 443
        guard (1...65535).contains(port) else { return nil }
        self.host = host
        self.port = port
    }
}

/// Reads known keys from the parsed JSON; unknown keys and wrong types become problems.
private struct Reader {
    var problems: [String]

    mutating func apply(_ root: [String: Any], to c: inout Configuration) {
        check(root, known: ["redis", "apns", "fcm", "apps", "retry", "worker", "metrics"], at: "")
        if let redis = object(root["redis"], "redis") {
            check(redis, known: ["url", "prefix", "queues", "connect_timeout_ms", "command_timeout_ms", "queue_mode", "queue_weights",
                                 "mode", "cluster_nodes", "sentinels", "master_name", "sentinel_user", "sentinel_password", "wait_replicas", "wait_timeout_ms",
                                 "tls", "shards", "shard_prefixes"], at: "redis.")
            strings(redis, "sentinels", "redis.", &c.redis.sentinels)
            string(redis, "master_name", "redis.", &c.redis.masterName)
            optionalString(redis, "sentinel_user", "redis.", &c.redis.sentinelUser)
            optionalString(redis, "sentinel_password", "redis.", &c.redis.sentinelPassword)
            int(redis, "wait_replicas", "redis.", &c.redis.waitReplicas)
            int(redis, "wait_timeout_ms", "redis.", &c.redis.waitTimeoutMs)
            if let tls = object(redis["tls"], "redis.tls") {
                check(tls, known: ["ca_file", "cert_file", "key_file", "server_name", "verify"], at: "redis.tls.")
                optionalString(tls, "ca_file", "redis.tls.", &c.redis.tls.caFile)
                optionalString(tls, "cert_file", "redis.tls.", &c.redis.tls.certFile)
                optionalString(tls, "key_file", "redis.tls.", &c.redis.tls.keyFile)
                optionalString(tls, "server_name", "redis.tls.", &c.redis.tls.serverName)
                bool(tls, "verify", "redis.tls.", &c.redis.tls.verify)
            }
            string(redis, "url", "redis.", &c.redis.url)
            string(redis, "prefix", "redis.", &c.redis.prefix)
            strings(redis, "queues", "redis.", &c.redis.queues)
            int(redis, "connect_timeout_ms", "redis.", &c.redis.connectTimeoutMs)
            int(redis, "command_timeout_ms", "redis.", &c.redis.commandTimeoutMs)
            int(redis, "shards", "redis.", &c.redis.shards)
            strings(redis, "shard_prefixes", "redis.", &c.redis.shardPrefixes)
            if let mode = redis["queue_mode"] {
                if let text = mode as? String, let parsed = Configuration.QueueMode(rawValue: text) {
                    c.redis.queueMode = parsed
                } else {
                    problems.append("redis.queue_mode must be \"priority\" or \"weighted\"")
                }
            }
            if let mode = redis["mode"] {
                if let text = mode as? String, let parsed = Configuration.RedisMode(rawValue: text) {
                    c.redis.mode = parsed
                } else {
                    problems.append("redis.mode must be \"standalone\", \"sentinel\" or \"cluster\"")
                }
            }
            strings(redis, "cluster_nodes", "redis.", &c.redis.clusterNodes)
            if let weights = object(redis["queue_weights"], "redis.queue_weights") {
                for key in weights.keys.sorted() where !key.hasPrefix("//") {
                    var weight = 1
                    int(weights, key, "redis.queue_weights.", &weight)
                    c.redis.queueWeights[key] = weight
                }
            }
        }
        if let apns = object(root["apns"], "apns") {
            check(apns, known: ["production_url", "sandbox_url", "connections_per_pool", "request_timeout_ms", "connect_timeout_ms",
                                "ping_idle_seconds", "ping_timeout_seconds", "ca_file", "proxy", "max_queued_per_pool",
                                "channels_production_url", "channels_sandbox_url"], at: "apns.")
            string(apns, "production_url", "apns.", &c.apns.productionURL)
            string(apns, "sandbox_url", "apns.", &c.apns.sandboxURL)
            string(apns, "channels_production_url", "apns.", &c.apns.channelsProductionURL)
            string(apns, "channels_sandbox_url", "apns.", &c.apns.channelsSandboxURL)
            int(apns, "connections_per_pool", "apns.", &c.apns.connectionsPerPool)
            int(apns, "request_timeout_ms", "apns.", &c.apns.requestTimeoutMs)
            int(apns, "connect_timeout_ms", "apns.", &c.apns.connectTimeoutMs)
            int(apns, "ping_idle_seconds", "apns.", &c.apns.pingIdleSeconds)
            int(apns, "ping_timeout_seconds", "apns.", &c.apns.pingTimeoutSeconds)
            optionalString(apns, "ca_file", "apns.", &c.apns.caFile)
            optionalString(apns, "proxy", "apns.", &c.apns.proxy)
            int(apns, "max_queued_per_pool", "apns.", &c.apns.maxQueuedPerPool)
        }
        if let fcm = object(root["fcm"], "fcm") {
            check(fcm, known: ["url", "connections_per_pool", "request_timeout_ms", "connect_timeout_ms", "token_timeout_ms", "ca_file",
                               "proxy", "max_queued_per_pool"], at: "fcm.")
            string(fcm, "url", "fcm.", &c.fcm.url)
            int(fcm, "connections_per_pool", "fcm.", &c.fcm.connectionsPerPool)
            int(fcm, "request_timeout_ms", "fcm.", &c.fcm.requestTimeoutMs)
            int(fcm, "connect_timeout_ms", "fcm.", &c.fcm.connectTimeoutMs)
            int(fcm, "token_timeout_ms", "fcm.", &c.fcm.tokenTimeoutMs)
            optionalString(fcm, "ca_file", "fcm.", &c.fcm.caFile)
            optionalString(fcm, "proxy", "fcm.", &c.fcm.proxy)
            int(fcm, "max_queued_per_pool", "fcm.", &c.fcm.maxQueuedPerPool)
        }
        if let apps = root["apps"] {
            guard let list = apps as? [Any] else { problems.append("apps must be a list"); return }
            for (index, item) in list.enumerated() {
                guard let app = object(item, "apps[\(index)]") else { continue }
                c.apps.append(readApp(app, index: index))
            }
        }
        if let retry = object(root["retry"], "retry") {
            check(retry, known: ["server_error_base_seconds", "server_error_cap_seconds", "throttle_base_seconds", "throttle_cap_seconds",
                                 "jitter_fraction", "max_attempts", "configuration_pause_seconds", "outage_pause_seconds",
                                 "outage_pause_cap_seconds", "give_up_after_seconds", "queues"], at: "retry.")
            int64(retry, "server_error_base_seconds", "retry.", &c.retry.serverErrorBaseSeconds)
            int64(retry, "server_error_cap_seconds", "retry.", &c.retry.serverErrorCapSeconds)
            int64(retry, "throttle_base_seconds", "retry.", &c.retry.throttleBaseSeconds)
            int64(retry, "throttle_cap_seconds", "retry.", &c.retry.throttleCapSeconds)
            double(retry, "jitter_fraction", "retry.", &c.retry.jitterFraction)
            int(retry, "max_attempts", "retry.", &c.retry.maxAttempts)
            int64(retry, "configuration_pause_seconds", "retry.", &c.retry.configurationPauseSeconds)
            int64(retry, "outage_pause_seconds", "retry.", &c.retry.outagePauseSeconds)
            int64(retry, "outage_pause_cap_seconds", "retry.", &c.retry.outagePauseCapSeconds)
            int64(retry, "give_up_after_seconds", "retry.", &c.retry.giveUpAfterSeconds)
            if let queues = object(retry["queues"], "retry.queues") {
                for (key, value) in queues.sorted(by: { $0.key < $1.key }) where !key.hasPrefix("//") {
                    guard let overrides = object(value, "retry.queues.\(key)") else { continue }
                    c.queueRetry[key] = readQueueRetry(overrides, base: c.retry, at: "retry.queues.\(key).")
                }
            }
        }
        if let metrics = object(root["metrics"], "metrics") {
            check(metrics, known: ["listen"], at: "metrics.")
            string(metrics, "listen", "metrics.", &c.metrics.listen)
        }
        if let worker = object(root["worker"], "worker") {
            check(worker, known: ["id", "max_in_flight", "claim_batch", "lease_seconds", "shutdown_deadline_seconds", "run_scheduler",
                                  "run_reaper", "results_max_length", "dead_max_length", "archive_max_length", "event_loops", "log_level",
                                  "flush_interval_ms", "idempotency_window_seconds"], at: "worker.")
            optionalString(worker, "id", "worker.", &c.worker.id)
            int(worker, "max_in_flight", "worker.", &c.worker.maxInFlight)
            int(worker, "claim_batch", "worker.", &c.worker.claimBatch)
            int(worker, "lease_seconds", "worker.", &c.worker.leaseSeconds)
            int(worker, "shutdown_deadline_seconds", "worker.", &c.worker.shutdownDeadlineSeconds)
            bool(worker, "run_scheduler", "worker.", &c.worker.runScheduler)
            bool(worker, "run_reaper", "worker.", &c.worker.runReaper)
            int(worker, "results_max_length", "worker.", &c.worker.resultsMaxLength)
            int(worker, "dead_max_length", "worker.", &c.worker.deadMaxLength)
            int(worker, "archive_max_length", "worker.", &c.worker.archiveMaxLength)
            int(worker, "event_loops", "worker.", &c.worker.eventLoops)
            string(worker, "log_level", "worker.", &c.worker.logLevel)
            int(worker, "flush_interval_ms", "worker.", &c.worker.flushIntervalMs)
            int(worker, "idempotency_window_seconds", "worker.", &c.worker.idempotencyWindowSeconds)
        }
    }

    /// A queue's retry policy: the global one with the job-level numbers this queue overrides. The pauses are
    /// per destination, not per job, so they stay global.
    mutating func readQueueRetry(_ o: [String: Any], base: RetrySettings, at: String) -> RetrySettings {
        check(o, known: ["server_error_base_seconds", "server_error_cap_seconds", "throttle_base_seconds", "throttle_cap_seconds",
                         "jitter_fraction", "max_attempts", "give_up_after_seconds"], at: at)
        var settings = base
        int64(o, "server_error_base_seconds", at, &settings.serverErrorBaseSeconds)
        int64(o, "server_error_cap_seconds", at, &settings.serverErrorCapSeconds)
        int64(o, "throttle_base_seconds", at, &settings.throttleBaseSeconds)
        int64(o, "throttle_cap_seconds", at, &settings.throttleCapSeconds)
        double(o, "jitter_fraction", at, &settings.jitterFraction)
        int(o, "max_attempts", at, &settings.maxAttempts)
        int64(o, "give_up_after_seconds", at, &settings.giveUpAfterSeconds)
        // A cap below an overridden base would be refused; a base above the inherited cap lifts the cap with it.
        if o["server_error_cap_seconds"] == nil { settings.serverErrorCapSeconds = max(settings.serverErrorCapSeconds, settings.serverErrorBaseSeconds) }
        if o["throttle_cap_seconds"] == nil { settings.throttleCapSeconds = max(settings.throttleCapSeconds, settings.throttleBaseSeconds) }
        return settings
    }

    mutating func readApp(_ app: [String: Any], index: Int) -> Configuration.AppSettings {
        let at = "apps[\(index)]."
        check(app, known: ["name", "bundle_id", "environments", "default_environment", "environment_fallback", "token", "certificate", "fcm"], at: at)
        var settings = Configuration.AppSettings(name: "", bundleID: "")
        string(app, "name", at, &settings.name)
        string(app, "bundle_id", at, &settings.bundleID)
        strings(app, "environments", at, &settings.environments)
        if settings.environments.count == 1 { settings.defaultEnvironment = settings.environments[0] }
        string(app, "default_environment", at, &settings.defaultEnvironment)
        bool(app, "environment_fallback", at, &settings.environmentFallback)
        if let token = object(app["token"], at + "token") {
            check(token, known: ["team_id", "key_id", "key_file", "refresh_minutes"], at: at + "token.")
            var auth = Configuration.AppSettings.TokenAuth(teamID: "", keyID: "", keyFile: "")
            string(token, "team_id", at + "token.", &auth.teamID)
            string(token, "key_id", at + "token.", &auth.keyID)
            string(token, "key_file", at + "token.", &auth.keyFile)
            int(token, "refresh_minutes", at + "token.", &auth.refreshMinutes)
            settings.token = auth
        }
        if let cert = object(app["certificate"], at + "certificate") {
            check(cert, known: ["pem_file", "key_file", "pkcs12_file", "password", "password_env"], at: at + "certificate.")
            var auth = Configuration.AppSettings.CertificateAuth()
            optionalString(cert, "pem_file", at + "certificate.", &auth.pemFile)
            optionalString(cert, "key_file", at + "certificate.", &auth.keyFile)
            optionalString(cert, "pkcs12_file", at + "certificate.", &auth.pkcs12File)
            optionalString(cert, "password", at + "certificate.", &auth.password)
            optionalString(cert, "password_env", at + "certificate.", &auth.passwordEnv)
            settings.certificate = auth
        }
        if let fcm = object(app["fcm"], at + "fcm") {
            check(fcm, known: ["service_account_file"], at: at + "fcm.")
            var auth = Configuration.AppSettings.FCMAuth(serviceAccountFile: "")
            string(fcm, "service_account_file", at + "fcm.", &auth.serviceAccountFile)
            settings.fcm = auth
        }
        return settings
    }

    /// JSONSerialization hands booleans back as NSNumber; their Objective-C type code is "c".
    func isBoolean(_ n: NSNumber) -> Bool { String(cString: n.objCType) == "c" }

    /// Keys starting with `//` are comments (JSON has none), so a shipped example can explain itself; a typo
    /// of a real key never starts that way, so it is still caught.
    mutating func check(_ object: [String: Any], known: Set<String>, at path: String) {
        for key in object.keys.sorted() where !known.contains(key) && !key.hasPrefix("//") {
            problems.append("unknown setting '\(path)\(key)'")
        }
    }

    mutating func object(_ value: Any?, _ path: String) -> [String: Any]? {
        guard let value else { return nil }
        guard let object = value as? [String: Any] else { problems.append("\(path) must be an object"); return nil }
        return object
    }

    mutating func string(_ o: [String: Any], _ key: String, _ at: String, _ out: inout String) {
        guard let value = o[key] else { return }
        if let s = value as? String { out = s } else { problems.append("\(at)\(key) must be a string") }
    }

    mutating func optionalString(_ o: [String: Any], _ key: String, _ at: String, _ out: inout String?) {
        guard let value = o[key] else { return }
        if value is NSNull { out = nil } else if let s = value as? String { out = s } else { problems.append("\(at)\(key) must be a string") }
    }

    mutating func strings(_ o: [String: Any], _ key: String, _ at: String, _ out: inout [String]) {
        guard let value = o[key] else { return }
        if let list = value as? [String] { out = list } else { problems.append("\(at)\(key) must be a list of strings") }
    }

    mutating func int(_ o: [String: Any], _ key: String, _ at: String, _ out: inout Int) {
        guard let value = o[key] else { return }
        if let n = value as? NSNumber, !isBoolean(n), n.doubleValue == n.doubleValue.rounded() {
            out = n.intValue
        } else {
            problems.append("\(at)\(key) must be a whole number")
        }
    }

    mutating func int64(_ o: [String: Any], _ key: String, _ at: String, _ out: inout Int64) {
        var value = Int(out)
        int(o, key, at, &value)
        out = Int64(value)
    }

    mutating func double(_ o: [String: Any], _ key: String, _ at: String, _ out: inout Double) {
        guard let value = o[key] else { return }
        if let n = value as? NSNumber, !isBoolean(n) { out = n.doubleValue } else { problems.append("\(at)\(key) must be a number") }
    }

    mutating func bool(_ o: [String: Any], _ key: String, _ at: String, _ out: inout Bool) {
        guard let value = o[key] else { return }
        if let n = value as? NSNumber, isBoolean(n) { out = n.boolValue } else { problems.append("\(at)\(key) must be true or false") }
    }
}

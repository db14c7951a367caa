import Foundation
import PushCore

/// Everything a worker process needs, from one JSON file (`--config` or `HERALD_CONFIG`) with
/// environment-variable overrides for the settings operators change most. Every field has a default
/// except the apps; see docs/configuration.md. Below the providers: each provider's section is kept by its key
/// (`sections`), its typed accessor (`configuration.apns`) declared in the provider's module.
public struct Configuration: Sendable {
    /// The providers the file was read with (the composition root's list, in `Platform.allCases` order): what
    /// reads the configuration asks them, so nothing below the root names a provider.
    public var providers: [any PushProvider.Type] = []
    public var redis = RedisSettings()
    /// Each provider's section, by its key; a section the file does not give reads as its default.
    public var sections = ProviderSections()
    public var apps: [AppSettings] = []
    public var retry = RetrySettings()
    /// Per-queue retry policies (`retry.queues`): queue key -> the global `retry` with that queue's overrides.
    /// A job's policy is its origin queue's, else `retry`.
    public var queueRetry: [String: RetrySettings] = [:]
    public var worker = WorkerSettings()
    public var results = ResultsSettings()
    public var budgets = BudgetSettings()
    public var metrics = MetricsSettings()
    public var api = APISettings()
    public var registry = RegistrySettings()

    /// The retry policy of jobs from `queueKey`.
    public func retry(forQueue queueKey: String) -> RetrySettings { queueRetry[queueKey] ?? retry }

    public init() {}

    public init(providers: [any PushProvider.Type]) { self.providers = providers }

    /// Rate budgets shared by every worker (docs/budgets.md): each off at 0, the default.
    public struct BudgetSettings: Sendable, Equatable {
        public init() {}
        public var appPerSecond = 0
        public var appPerMinute = 0
        public var devicePerSecond = 0
        public var devicePerMinute = 0
        public var devicePerHour = 0
        /// FCM's published per-device limits (240 a minute, 5,000 an hour) for FCM tokens whose own are 0.
        public var fcmDeviceDefaults = false
        public var queuePerSecond = 0
        public var channelPerSecond = 0
        /// After a provider's 429 the app's per-second budget drops to half, at least to this share of it.
        public var adaptiveFloorPercent = 10
        /// Good answers of the app before its lowered budget climbs one step (a tenth) back.
        public var adaptiveRecoveryAnswers = 200

        /// Whether any budget is set: with none the worker checks nothing (not one script call).
        public var anyOn: Bool {
            appPerSecond > 0 || appPerMinute > 0 || devicePerSecond > 0 || devicePerMinute > 0 || devicePerHour > 0
                || fcmDeviceDefaults || queuePerSecond > 0 || channelPerSecond > 0
        }
    }

    /// What the worker keeps about results beside the results stream.
    public struct ResultsSettings: Sendable, Equatable {
        public init() {}
        /// The per-job result index `<prefix>:result:<id>` (for `GET /v1/jobs/<id>`) lives this long; 0: none.
        public var indexTTLSeconds = 0
    }

    /// The worker's `/metrics`, `/healthz` and `/readyz` listener (docs/observability.md).
    public struct MetricsSettings: Sendable, Equatable {
        public init() {}
        /// `host:port`; loopback by default, empty turns the listener off.
        public var listen = "127.0.0.1:9464"
    }

    public struct RedisSettings: Sendable, Equatable {
        public init() {}
        public var url = "redis://127.0.0.1:6379/0"
        public var prefix = "herald"
        /// Queue keys in priority order; empty means `<prefix>:queue`.
        public var queues: [String] = []
        public var connectTimeoutMs = 5000
        public var commandTimeoutMs = 10000
        /// How claims pick among the queues: strict priority, or a weighted fair share.
        public var queueMode = QueueMode.priority
        /// Fair-share weights by queue key (`queue_weights`); a queue not named weighs 1.
        public var queueWeights: [String: Int] = [:]
        /// How Redis is run: one server (default), the master Sentinel names, or a Redis Cluster whose seed node
        /// `url` then names.
        public var mode = RedisMode.standalone
        /// More cluster seed nodes (`host:port`), tried after `url` when the map is first read.
        public var clusterNodes: [String] = []
        /// Sentinel mode: the sentinels as `host:port`, the master's name, and AUTH for the sentinels themselves.
        public var sentinels: [String] = []
        public var masterName = ""
        public var sentinelUser: String?
        public var sentinelPassword: String?
        /// WAIT after every script call for this many replicas (0: off), up to `waitTimeoutMs`.
        public var waitReplicas = 0
        public var waitTimeoutMs = 1000
        /// `redis.tls`: CA, client certificate, server name, verification for `rediss://`.
        public var tls = RedisTLSSettings()
        /// Shards (`redis.shards`): complete key sets under `{<prefix>:<i>}`; 1 is the plain `prefix` (see
        /// `queueShards()`).
        public var shards = 1
        /// Explicit shard prefixes (`redis.shard_prefixes`), one per shard, instead of the numbered ones.
        public var shardPrefixes: [String] = []

        public var queueKeys: [String] { queues.isEmpty ? ["\(prefix):queue"] : queues }

        /// The claim weights in `queueKeys` order, or nil for strict priority (`JobQueueOptions.queueWeights`).
        public var claimWeights: [Int]? {
            queueMode == .weighted ? queueKeys.map { queueWeights[$0] ?? 1 } : nil
        }
    }

    /// `redis.mode`.
    public enum RedisMode: String, Sendable, Equatable {
        case standalone
        /// A Redis Cluster: commands go to the master of their key's slot (`RedisCluster`).
        case cluster
        /// The master the sentinels name (`SentinelAddressSource`); `url` gives its AUTH and database.
        case sentinel
    }

    public enum QueueMode: String, Sendable, Equatable {
        /// A worker always takes from the first non-empty queue.
        case priority
        /// Claims go round the non-empty queues in proportion to their weights.
        case weighted
    }

    /// One app: a bundle ID and how it authenticates. Each distinct credential gets its own connections.
    public struct AppSettings: Sendable, Equatable {
        public var name: String
        public var bundleID: String
        public var environments: [String] = ["production", "sandbox"]
        public var defaultEnvironment = "production"
        /// Opt-in: a token one environment answers 400 BadDeviceToken is tried once on the other before it is
        /// dropped (Apple gives that answer to a sandbox token sent to production, and the reverse).
        public var environmentFallback = false
        /// Its provider's credential blocks, by key (`fcm`; APNs' `token` or `certificate`); each provider's module
        /// declares the typed accessor (`app.fcm`).
        public var credentials = CredentialBlocks()

        public init(name: String, bundleID: String) {
            self.name = name
            self.bundleID = bundleID
        }

        /// The service the app's jobs go to: its credential's.
        public var platform: Platform { credentials.platform }
    }

    public struct WorkerSettings: Sendable, Equatable {
        public init() {}
        public var id: String? = nil
        public var maxInFlight = 8000
        public var claimBatch = 512
        public var leaseSeconds = 30
        public var shutdownDeadlineSeconds = 20
        public var runScheduler = true
        public var runReaper = true
        public var resultsMaxLength = 1_000_000
        public var deadMaxLength = 100_000
        /// Approximate length of the failed-job archive (`<prefix>:archive`); 0 keeps none.
        public var archiveMaxLength = 100_000
        public var eventLoops = 1
        public var logLevel = "info"
        /// How often completed results are flushed to Redis in one batch.
        public var flushIntervalMs = 2
        /// Idempotency: a job `id` claimed again within this many seconds is not sent again (0: off).
        public var idempotencyWindowSeconds = 0
        /// How far ahead `deliver_at` may lie; a job beyond it is rejected (`bad_deliver_at`), not parked for ever.
        public var maxScheduleDays = 365
    }
}

import APNs
import Foundation
import PushCore

/// Everything a worker process needs, from one JSON file (`--config` or `HERALD_CONFIG`) with
/// environment-variable overrides for the settings operators change most. Every field has a default
/// except the apps; see docs/configuration.md.
public struct Configuration: Sendable {
    public var redis = RedisSettings()
    public var apns = APNsSettings()
    public var fcm = FCMSettings()
    public var apps: [AppSettings] = []
    public var retry = RetrySettings()
    /// Per-queue retry policies (`retry.queues`): queue key -> the global `retry` with that queue's overrides.
    /// A job's policy is its origin queue's, else `retry`.
    public var queueRetry: [String: RetrySettings] = [:]
    public var worker = WorkerSettings()
    public var metrics = MetricsSettings()
    public var api = APISettings()

    /// The retry policy of jobs from `queueKey`.
    public func retry(forQueue queueKey: String) -> RetrySettings { queueRetry[queueKey] ?? retry }

    public init() {}

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

    public struct APNsSettings: Sendable, Equatable {
        public init() {}
        public var productionURL = "https://api.push.apple.com:443"
        public var sandboxURL = "https://api.sandbox.push.apple.com:443"
        /// Channel management (broadcast channels) has its own hosts and ports.
        public var channelsProductionURL = ChannelManagement.defaultURL(.production)
        public var channelsSandboxURL = ChannelManagement.defaultURL(.sandbox)

        /// The push host of an environment.
        public func url(_ environment: APNsEnvironment) -> String { environment == .production ? productionURL : sandboxURL }
        /// The channel-management host of an environment.
        public func channelsURL(_ environment: APNsEnvironment) -> String {
            environment == .production ? channelsProductionURL : channelsSandboxURL
        }
        public var connectionsPerPool = 4
        public var requestTimeoutMs = 15000
        public var connectTimeoutMs = 10000
        public var pingIdleSeconds = 3600
        public var pingTimeoutSeconds = 10
        public var caFile: String? = nil
        public var proxy: String? = nil
        /// Requests waiting for a stream, per pool, before the worker is pushed back.
        public var maxQueuedPerPool = 20000
    }

    /// FCM HTTP v1: where messages and token requests go (tests point `url` at the simulator; each service
    /// account's `token_uri` names its token endpoint) and how the connections to it behave.
    public struct FCMSettings: Sendable, Equatable {
        public init() {}
        public var url = "https://fcm.googleapis.com:443"
        /// HTTP/2 connections per project.
        public var connectionsPerPool = 2
        public var requestTimeoutMs = 15000
        public var connectTimeoutMs = 10000
        /// The whole token exchange (connect, TLS, answer), done with libcurl off the event loop.
        public var tokenTimeoutMs = 10000
        /// CA bundle for both the FCM host and the token endpoint; nil uses the system's.
        public var caFile: String? = nil
        /// An HTTP CONNECT proxy for both, `http://host:port`.
        public var proxy: String? = nil
        public var maxQueuedPerPool = 20000
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
        public var token: TokenAuth? = nil
        public var certificate: CertificateAuth? = nil
        /// An app of kind FCM: its service account; it takes FCM jobs only, and needs no bundle ID.
        public var fcm: FCMAuth? = nil

        public init(name: String, bundleID: String, token: TokenAuth? = nil, certificate: CertificateAuth? = nil, fcm: FCMAuth? = nil) {
            self.name = name
            self.bundleID = bundleID
            self.token = token
            self.certificate = certificate
            self.fcm = fcm
        }

        /// The service the app's jobs go to.
        public var platform: Platform { ProviderRegistry.platform(of: self) }

        public struct FCMAuth: Sendable, Equatable {
            /// The service account's JSON key file (`project_id`, `client_email`, `private_key`, `token_uri`).
            public var serviceAccountFile: String
            public init(serviceAccountFile: String) { self.serviceAccountFile = serviceAccountFile }
        }

        public struct TokenAuth: Sendable, Equatable {
            public var teamID: String
            public var keyID: String
            public var keyFile: String
            public var refreshMinutes = 50
        }

        public struct CertificateAuth: Sendable, Equatable {
            public var pemFile: String? = nil
            public var keyFile: String? = nil
            public var pkcs12File: String? = nil
            /// Never logged. `passwordEnv` names an environment variable that holds it instead.
            public var password: String? = nil
            public var passwordEnv: String? = nil

            public var resolvedPassword: String? {
                if let passwordEnv, let value = ProcessInfo.processInfo.environment[passwordEnv] { return value }
                return password
            }
        }
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

/// A problem found while loading or checking the configuration; `check-config` lists them all.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public let problems: [String]
    public init(_ problems: [String]) { self.problems = problems }
    public var description: String { problems.joined(separator: "\n") }
}

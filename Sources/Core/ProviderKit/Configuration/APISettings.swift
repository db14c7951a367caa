extension Configuration {
    /// `herald api`'s settings (docs/api.md): where it listens, its bounds, its keys and its TLS.
    public struct APISettings: Sendable, Equatable {
        public init() {}
        /// Loopback by default: exposing it is a decision (with keys and TLS).
        public var listen = "127.0.0.1:8088"
        public var maxConnections = 1024
        public var maxBodyBytes = 8 * 1024 * 1024
        public var maxHeadBytes = 16 * 1024
        public var maxJobsPerRequest = 1000
        /// gorush's metric families (`gorush_*`) on `/metrics` too, for a gorush dashboard.
        public var gorushMetrics = false
        public var requestTimeoutMs = 10_000
        public var idleTimeoutMs = 60_000
        /// None: every request is served (loopback only, by default). Any: each request needs one of them.
        public var keys: [Key] = []
        public var tlsCertificateFile = ""
        public var tlsKeyFile = ""
        /// Set: clients must present a certificate this CA signed.
        public var tlsClientCAFile = ""

        /// An API key as the configuration holds it: the SHA-256 of the secret, never the secret.
        public struct Key: Sendable, Equatable {
            public var name: String
            /// Lower-case hex SHA-256 of the key's UTF-8 bytes.
            public var sha256: String
            /// Apps its jobs may name; empty: every app.
            public var apps: [String] = []
            /// Configured queue keys it may push to; empty: every queue.
            public var queues: [String] = []
            /// Jobs per second it may submit to one API process; 0: no limit.
            public var ratePerSecond = 0
            /// Jobs it may submit at once before the rate applies; at least one second's worth.
            public var burst = 0

            public init(name: String, sha256: String) {
                self.name = name
                self.sha256 = sha256
            }
        }
    }
}

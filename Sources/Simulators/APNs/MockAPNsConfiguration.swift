/// Everything a `MockAPNsServer` is started with. Defaults imitate production APNs.
public struct MockAPNsConfiguration: Sendable {
    /// Address to listen on (`127.0.0.1`, `::1`, `0.0.0.0`).
    public var host = "127.0.0.1"
    /// 0 picks a free port; read `MockAPNsServer.port`.
    public var port = 0
    /// A second port for channel management only (0 picks a free one; read `MockAPNsServer.managementPort`); the main
    /// port then answers pushes and broadcasts only. nil: the main port answers all three.
    public var managementPort: Int?
    /// Certificate and key to present. nil with `cleartext == false`: pass `MockTLSFiles.generate(in:)`'s result.
    public var tls: MockTLSFiles?
    /// Plain HTTP/2 with prior knowledge instead of TLS (for h2load comparisons; not how APNs works).
    public var cleartext = false
    /// CA that client certificates must chain to; set it to enable certificate-based auth.
    public var clientCAFile: String?
    /// Topics a certificate connection may push to; nil = taken from the certificate (subject UID, else CN after ": ").
    public var certificateTopics: [String]?
    /// Provider keys accepted for token auth.
    public var keys: [MockProviderKey] = []
    /// The environment this server pretends to be; `.sandbox` adds `apns-unique-id` to answers.
    public var environment: MockEnvironment = .production
    /// false = no authorization checks at all (pure HTTP/2 load tests only).
    public var requireAuthentication = true
    /// SETTINGS_MAX_CONCURRENT_STREAMS after a connection's first request with a valid token (1 before).
    public var maxConcurrentStreams: UInt32 = 1000
    /// A token whose `iat` is older than this gets 403 ExpiredProviderToken.
    public var tokenLifetimeSeconds: Int64 = 3600
    /// A connection may adopt a new token at most once per this window (else 429 TooManyProviderTokenUpdates).
    public var tokenUpdateWindowSeconds: Double = 1200
    /// A request without `apns-push-type` gets 400 MissingPushType (APNs requires it for watchOS; Herald always sends it).
    public var requirePushType = true
    /// Device state and faults; replaceable at run time.
    public var faults = MockFaultScript()
    /// Seed used when the fault script has none.
    public var seed: UInt64 = 1
    /// Keep accepted notifications in memory for `acceptedNotifications()` and `GET /_mock/accepted`.
    public var recordAccepted = false
    /// Keep payload text in the accepted log (memory and file).
    public var logPayloads = false
    /// Append each accepted notification as a JSON line to this file.
    public var logFile: String?
    /// Broadcast channels one app may hold in this (simulated) environment; more is CannotCreateChannelConfig.
    public var maxChannels = 10_000
    /// Bundle IDs whose App ID has the broadcast capability; nil = every bundle ID. Others get FeatureNotEnabled.
    public var broadcastBundleIDs: [String]?
    /// Keep every APNs request (headers in order, body) for `recordedRequests()` and `GET /_mock/requests`.
    public var recordRequests = false

    public init() {}
}

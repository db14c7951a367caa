/// What a send-API provider adds to its simulator's configuration (FCM's service accounts, Push Kit's apps), and
/// its fault script's own fields.
public protocol SendAPISettings: Sendable {
    associatedtype Faults: FaultScriptExtras
    init()
}

/// Everything a send-API simulator (FCM, Push Kit: an OAuth token endpoint and a bearer-checked `messages:send`)
/// is started with. Defaults imitate both providers. The provider's own settings are reached as if they were
/// fields here (`configuration.projectID`, `configuration.apps`).
@dynamicMemberLookup
public struct SendAPIConfiguration<Settings: SendAPISettings>: Sendable {
    /// Address to listen on (`127.0.0.1`, `::1`, `0.0.0.0`).
    public var host = "127.0.0.1"
    /// 0 picks a free port; read the server's `port`.
    public var port = 0
    /// Certificate and key to present (both are TLS only): pass `MockTLSFiles.generate(in:)`'s result.
    public var tls: MockTLSFiles?
    /// `expires_in` of the access tokens issued (3600, as both issue them); an older token is refused.
    public var accessTokenLifetimeSeconds = 3600
    /// false = no bearer check on `messages:send` at all (pure load tests only).
    public var requireAuthentication = true
    /// SETTINGS_MAX_CONCURRENT_STREAMS on HTTP/2 connections (Google's front end advertises 100).
    public var maxConcurrentStreams: UInt32 = 100
    /// Device state, faults and quotas; replaceable at run time.
    public var faults = FaultScript<Settings.Faults>(extras: Settings.Faults())
    /// Seed used when the fault script has none.
    public var seed: UInt64 = 1
    /// Keep accepted messages in memory for `acceptedMessages()` and `GET /_mock/accepted`.
    public var recordAccepted = false
    /// Append each accepted message as a JSON line to this file.
    public var logFile: String?
    /// The provider's own settings.
    public var provider = Settings()

    public init() {}

    public subscript<Value>(dynamicMember path: WritableKeyPath<Settings, Value>) -> Value {
        get { provider[keyPath: path] }
        set { provider[keyPath: path] = newValue }
    }
}

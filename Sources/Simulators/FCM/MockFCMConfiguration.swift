/// Everything a `MockFCMServer` is started with. Defaults imitate FCM HTTP v1 and Google's token endpoint.
public struct MockFCMConfiguration: Sendable {
    /// Address to listen on (`127.0.0.1`, `::1`, `0.0.0.0`).
    public var host = "127.0.0.1"
    /// 0 picks a free port; read `MockFCMServer.port`.
    public var port = 0
    /// Certificate and key to present (FCM is TLS only): pass `MockTLSFiles.generate(in:)`'s result.
    public var tls: MockTLSFiles?
    /// Accounts whose assertions the token endpoint accepts. Empty: one is generated for `projectID`.
    public var serviceAccounts: [MockServiceAccount] = []
    /// Project of the generated account (when `serviceAccounts` is empty).
    public var projectID = "herald-mock"
    /// Where the accounts' JSON files are written (`service-account.json`, then `service-account-2.json`, ...),
    /// with `token_uri` pointing at this server. nil: the directory of `tls.caFile`, else a temporary one.
    public var serviceAccountDirectory: String?
    /// `expires_in` of the access tokens issued; a token older than this is refused with 401.
    public var accessTokenLifetimeSeconds = 3600
    /// false = no bearer check on `messages:send` at all (pure load tests only).
    public var requireAuthentication = true
    /// SETTINGS_MAX_CONCURRENT_STREAMS on HTTP/2 connections (Google's front end advertises 100).
    public var maxConcurrentStreams: UInt32 = 100
    /// Device state, faults and quotas; replaceable at run time.
    public var faults = MockFCMFaultScript()
    /// Seed used when the fault script has none.
    public var seed: UInt64 = 1
    /// Keep accepted messages in memory for `acceptedMessages()` and `GET /_mock/accepted`.
    public var recordAccepted = false
    /// Append each accepted message as a JSON line to this file.
    public var logFile: String?

    public init() {}
}

/// Counters of one FCM simulator, as `stats()` and `GET /_mock/stats` report them (control paths are not counted).
public struct MockFCMStats: Sendable, Codable, Equatable, ReportsConnectionCounters {
    /// Complete `messages:send` requests (answered, silenced or dropped).
    public var requests = 0
    /// Sends answered 200 (dry runs included).
    public var accepted = 0
    /// Of those, `validate_only` dry runs.
    public var validateOnly = 0
    /// Send answers by HTTP status ("200", "404", ...).
    public var byStatus: [String: Int] = [:]
    /// Send error answers by FCM errorCode, or by RPC status when there is none ("UNAUTHENTICATED", ...).
    public var byErrorCode: [String: Int] = [:]
    /// Sends refused by the project or device quota (scripted 429s not included).
    public var quotaRejections = 0
    /// `POST /token` requests, access tokens issued, and refusals by OAuth error ("invalid_grant", ...).
    public var tokenRequests = 0
    public var tokensIssued = 0
    public var tokenErrors: [String: Int] = [:]
    /// Requests to the legacy `/fcm/send` (answered 404 HTML).
    public var legacyRequests = 0
    public var connectionsAccepted = 0
    public var connectionsOpen = 0
    /// Connections by protocol negotiated with ALPN.
    public var http2Connections = 0
    public var http1Connections = 0
    /// Connections closed by a `drop` fault.
    public var connectionsDropped = 0
    public var goawaysSent = 0
    /// Sends never answered (silence).
    public var silencedRequests = 0
    public var handshakeFailures = 0

    public init() {}
}

/// One message the simulator accepted, for tests that prove what reached "FCM" and how often.
public struct MockFCMAcceptedMessage: Sendable, Codable, Equatable {
    /// The project of the request path.
    public var project: String
    public var token: String?
    public var topic: String?
    public var condition: String?
    /// The `name` answered: `projects/<project>/messages/<id>`.
    public var name: String
    /// The request's `message` member exactly as received (its bytes, as UTF-8 text).
    public var message: String
    public var validateOnly: Bool
    /// `h2` or `http/1.1`.
    public var transport: String
    public var connection: Int
    public var timeMillis: Int64

    /// The message bytes as received.
    public var messageBytes: [UInt8] { Array(message.utf8) }

    enum CodingKeys: String, CodingKey {
        case project, token, topic, condition, name, message, transport, connection
        case validateOnly = "validate_only", timeMillis = "time_ms"
    }
}

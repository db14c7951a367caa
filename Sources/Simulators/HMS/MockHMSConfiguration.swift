/// An app the simulated OAuth server knows: Huawei's app id (the OAuth client id, digits) and its client secret.
public struct MockHMSApp: Sendable, Equatable, Codable {
    public var appId: String
    public var clientSecret: String

    public init(appId: String, clientSecret: String) {
        self.appId = appId
        self.clientSecret = clientSecret
    }

    enum CodingKeys: String, CodingKey {
        case appId = "app_id", clientSecret = "client_secret"
    }
}

/// Everything a `MockHMSServer` is started with. Defaults imitate Push Kit's v1 API and Huawei's OAuth server.
public struct MockHMSConfiguration: Sendable {
    /// Address to listen on (`127.0.0.1`, `::1`, `0.0.0.0`).
    public var host = "127.0.0.1"
    /// 0 picks a free port; read `MockHMSServer.port`.
    public var port = 0
    /// Certificate and key to present (Push Kit is TLS only): pass `MockTLSFiles.generate(in:)`'s result.
    public var tls: MockTLSFiles?
    /// Apps whose client credentials the token endpoint accepts. Empty: one is generated (`defaultAppID`).
    public var apps: [MockHMSApp] = []
    /// App id of the generated app.
    public var defaultAppID = "10000001"
    /// `expires_in` of the access tokens issued (Huawei's: 3600); an older token is refused with 80200003.
    public var accessTokenLifetimeSeconds = 3600
    /// false = no bearer check on `messages:send` at all (pure load tests only).
    public var requireAuthentication = true
    /// SETTINGS_MAX_CONCURRENT_STREAMS on HTTP/2 connections.
    public var maxConcurrentStreams: UInt32 = 100
    /// Device state, faults and quotas; replaceable at run time.
    public var faults = MockHMSFaultScript()
    /// Seed used when the fault script has none.
    public var seed: UInt64 = 1
    /// Keep every checked send in memory for `acceptedMessages()` and `GET /_mock/accepted`.
    public var recordAccepted = false
    /// Append each checked send as a JSON line to this file.
    public var logFile: String?

    public init() {}
}

/// Counters of one Push Kit simulator, as `stats()` and `GET /_mock/stats` report them (control paths are not counted).
public struct MockHMSStats: Sendable, Codable, Equatable, ReportsConnectionCounters {
    /// Complete `messages:send` requests (answered, silenced or dropped).
    public var requests = 0
    /// Sends answered 80000000 or 80100000 (dry runs included), and of those the `validate_only` ones.
    public var accepted = 0
    public var validateOnly = 0
    /// Tokens of accepted sends that were delivered, and those reported illegal (80100000 and 80300007 alike).
    public var tokensDelivered = 0
    public var tokensIllegal = 0
    /// Send answers by HTTP status ("200", "400", ...) and by Huawei result code ("80000000", ...).
    public var byStatus: [String: Int] = [:]
    public var byCode: [String: Int] = [:]
    /// Sends refused by the per-app quota (scripted flow control not included).
    public var flowControlled = 0
    /// `POST /oauth2/v3/token` requests, access tokens issued, and refusals by "error/sub_error" ("1101/12304").
    public var tokenRequests = 0
    public var tokensIssued = 0
    public var tokenErrors: [String: Int] = [:]
    public var connectionsAccepted = 0
    public var connectionsOpen = 0
    public var http2Connections = 0
    public var http1Connections = 0
    public var connectionsDropped = 0
    public var goawaysSent = 0
    public var silencedRequests = 0
    public var handshakeFailures = 0

    public init() {}
}

/// One send the simulator checked and answered 80000000, 80100000 or 80300007: which tokens it was sent to,
/// which were illegal, and the `message` as received, for tests that prove what reached "Push Kit" and when.
public struct MockHMSAcceptedMessage: Sendable, Codable, Equatable {
    /// The app id of the request path.
    public var app: String
    public var tokens: [String]?
    public var topic: String?
    public var condition: String?
    /// The tokens answered as illegal (not delivered).
    public var illegalTokens: [String]
    /// The result code answered.
    public var code: String
    public var requestId: String
    /// The request's `message` member exactly as received (its bytes, as UTF-8 text).
    public var message: String
    public var validateOnly: Bool
    /// `h2` or `http/1.1`.
    public var transport: String
    public var connection: Int
    public var timeMillis: Int64

    /// The tokens delivered to, in request order.
    public var delivered: [String] { (tokens ?? []).filter { !illegalTokens.contains($0) } }

    enum CodingKeys: String, CodingKey {
        case app, tokens, topic, condition, code, message, transport, connection
        case illegalTokens = "illegal_tokens", requestId = "request_id", validateOnly = "validate_only", timeMillis = "time_ms"
    }
}

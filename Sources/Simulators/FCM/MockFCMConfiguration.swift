/// FCM's part of `MockFCMConfiguration`: the accounts the token endpoint knows, and where their files go.
public struct MockFCMAccounts: SendAPISettings {
    public typealias Faults = MockFCMQuotas
    /// Accounts whose assertions the token endpoint accepts. Empty: one is generated for `projectID`.
    public var serviceAccounts: [MockServiceAccount] = []
    /// Project of the generated account (when `serviceAccounts` is empty).
    public var projectID = "herald-mock"
    /// Where the accounts' JSON files are written (`service-account.json`, then `service-account-2.json`, ...),
    /// with `token_uri` pointing at this server. nil: the directory of `tls.caFile`, else a temporary one.
    public var serviceAccountDirectory: String?

    public init() {}
}

/// Everything a `MockFCMServer` is started with. Defaults imitate FCM HTTP v1 and Google's token endpoint (a
/// token older than `accessTokenLifetimeSeconds` is refused with 401).
public typealias MockFCMConfiguration = SendAPIConfiguration<MockFCMAccounts>

/// FCM's own counters in `MockFCMStats`.
public struct MockFCMCounters: SendAPICounters {
    /// Send error answers by FCM errorCode, or by RPC status when there is none ("UNAUTHENTICATED", ...).
    public var byErrorCode: [String: Int] = [:]
    /// Sends refused by the project or device quota (scripted 429s not included).
    public var quotaRejections = 0
    /// Requests to the legacy `/fcm/send` (answered 404 HTML).
    public var legacyRequests = 0

    public init() {}
}

/// Counters of one FCM simulator, as `stats()` and `GET /_mock/stats` report them (control paths are not counted).
/// Token refusals are by OAuth error ("invalid_grant", ...).
public typealias MockFCMStats = SendAPIStats<MockFCMCounters>

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

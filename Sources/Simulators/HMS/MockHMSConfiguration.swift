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

/// Push Kit's part of `MockHMSConfiguration`: the apps whose client credentials the token endpoint accepts.
public struct MockHMSApps: SendAPISettings {
    public typealias Faults = MockHMSDeviceState
    /// Apps whose client credentials the token endpoint accepts. Empty: one is generated (`defaultAppID`).
    public var apps: [MockHMSApp] = []
    /// App id of the generated app.
    public var defaultAppID = "10000001"

    public init() {}
}

/// Everything a `MockHMSServer` is started with. Defaults imitate Push Kit's v1 API and Huawei's OAuth server (an
/// access token older than `accessTokenLifetimeSeconds`, Huawei's 3600, is refused with 80200003).
public typealias MockHMSConfiguration = SendAPIConfiguration<MockHMSApps>

/// Push Kit's own counters in `MockHMSStats`.
public struct MockHMSCounters: SendAPICounters {
    /// Tokens of accepted sends that were delivered, and those reported illegal (80100000 and 80300007 alike).
    public var tokensDelivered = 0
    public var tokensIllegal = 0
    /// Send answers by Huawei result code ("80000000", ...).
    public var byCode: [String: Int] = [:]
    /// Sends refused by the per-app quota (scripted flow control not included).
    public var flowControlled = 0

    public init() {}
}

/// Counters of one Push Kit simulator, as `stats()` and `GET /_mock/stats` report them (control paths are not
/// counted). Accepted sends are those answered 80000000 or 80100000; token refusals are by "error/sub_error"
/// ("1101/12304").
public typealias MockHMSStats = SendAPIStats<MockHMSCounters>

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

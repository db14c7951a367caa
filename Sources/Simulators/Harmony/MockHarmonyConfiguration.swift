/// Push Kit v3's part of `MockHarmonyConfiguration`: the service accounts whose JWTs it accepts, one per project.
/// The fault script is Push Kit's (`MockHMSFaultScript`'s fields: illegal tokens, rules, per-project flow control),
/// a rule's `app` naming the project id of the request path.
public struct MockHarmonyAccounts: SendAPISettings {
    public typealias Faults = MockHMSDeviceState
    /// Accounts whose JWTs are accepted, each for its `project_id`. Empty: one is generated (`defaultProjectID`).
    public var accounts: [MockHarmonyAccount] = []
    /// Project id of the generated account.
    public var defaultProjectID = "101653523863785276"

    public init() {}
}

/// Everything a `MockHarmonyServer` is started with. Defaults imitate Push Kit v3 (a JWT past its `exp` is refused
/// with 80200003; `accessTokenLifetimeSeconds` is not used: the client picks its JWT's lifetime, up to an hour).
public typealias MockHarmonyConfiguration = SendAPIConfiguration<MockHarmonyAccounts>

/// Counters of one Push Kit v3 simulator (`stats()`, `GET /_mock/stats`): Push Kit's own are v1's (tokens delivered
/// and illegal, answers by result code, sends refused by the quota).
public typealias MockHarmonyStats = SendAPIStats<MockHMSCounters>

/// One send the simulator checked and answered 80000000, 80100000 or 80300007: its project, scenario, tokens (and
/// which were illegal), and its members as received, for tests that prove what reached "Push Kit".
public struct MockHarmonyAcceptedMessage: Sendable, Codable, Equatable {
    /// The project id of the request path.
    public var project: String
    public var pushType: Int
    public var tokens: [String]
    public var illegalTokens: [String]
    public var code: String
    public var requestId: String
    /// `payload` and `pushOptions` exactly as received (their bytes, as UTF-8 text).
    public var payload: String
    public var pushOptions: String?
    public var testMessage: Bool
    /// `h2` or `http/1.1`.
    public var transport: String
    public var connection: Int
    public var timeMillis: Int64

    /// The tokens delivered to, in request order.
    public var delivered: [String] { tokens.filter { !illegalTokens.contains($0) } }

    enum CodingKeys: String, CodingKey {
        case project, tokens, code, payload, transport, connection
        case pushType = "push_type", illegalTokens = "illegal_tokens", requestId = "request_id", pushOptions = "push_options",
             testMessage = "test_message", timeMillis = "time_ms"
    }
}

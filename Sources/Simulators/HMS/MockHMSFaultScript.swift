import Foundation
import Settings

/// Push Kit's own answers to a send a rule matches (a whole request: one answer for all its tokens), beside the
/// fates every send-API simulator has (`SendAPIFate`: accept, error, failFirst, throttle, silence, drop, goaway,
/// delay). Device fates (a token Huawei calls illegal) are `MockHMSFaultScript.invalidTokens`/`invalidTokenPrefixes`,
/// per token. Documented with examples in docs/mock-hms.md.
public enum MockHMSAnswer: String, SendAPIOwnFate {
    /// HTTP 503, Huawei's traffic control (`retryAfterSeconds` adds a Retry-After header; Huawei sends none).
    case flowControl
    /// 401 80200003: the access token expired (a client refreshes it once and resends).
    case tokenExpired
}

/// What happens to a Push Kit send a rule matches: a fate every send-API simulator has, or one of Push Kit's answers.
public typealias MockHMSFate = SendAPIFate<MockHMSAnswer>

extension SendAPIFate where Own == MockHMSAnswer {
    public static var flowControl: Self { .own(.flowControl) }
    public static var tokenExpired: Self { .own(.tokenExpired) }
}

/// One scripted rule: which sends (by app, by a token among the request's, by topic), how often, what happens.
public struct MockHMSRule: Sendable, Equatable, Encodable {
    /// Exact app id of the request path.
    public var app: String?
    /// The request names this token (among its up to 1000).
    public var token: String?
    /// The request names a token with this prefix.
    public var tokenPrefix: String?
    public var topic: String?
    /// Probability 0...1 that a matching request is affected (seeded, so runs repeat). Default 1.
    public var rate: Double?
    public var fate: MockHMSFate
    public var status: Int?
    /// Huawei's result code, as a string ("81000001").
    public var code: String?
    public var message: String?
    public var count: Int?
    public var limit: Int?
    public var windowSeconds: Double?
    public var retryAfterSeconds: Int?
    public var latencyMs: MockLatency?

    public init(fate: MockHMSFate, app: String? = nil, token: String? = nil, tokenPrefix: String? = nil, topic: String? = nil,
                rate: Double? = nil, status: Int? = nil, code: String? = nil, message: String? = nil, count: Int? = nil,
                limit: Int? = nil, windowSeconds: Double? = nil, retryAfterSeconds: Int? = nil, latencyMs: MockLatency? = nil) {
        self.fate = fate
        self.app = app
        self.token = token
        self.tokenPrefix = tokenPrefix
        self.topic = topic
        self.rate = rate
        self.status = status
        self.code = code
        self.message = message
        self.count = count
        self.limit = limit
        self.windowSeconds = windowSeconds
        self.retryAfterSeconds = retryAfterSeconds
        self.latencyMs = latencyMs
    }
}

/// A per-app send quota: at most `limit` sends in each window of `windowSeconds`; past it, 503 flow control.
public struct MockHMSQuota: Sendable, Equatable, Encodable {
    public var limit: Int
    public var windowSeconds: Double
    /// Count tokens (a 1000-token send spends 1000) instead of requests.
    public var perToken: Bool?

    public init(limit: Int, windowSeconds: Double = 1, perToken: Bool? = nil) {
        self.limit = limit
        self.windowSeconds = windowSeconds
        self.perToken = perToken
    }

    /// Its keys; `limit` and `windowSeconds` must be given.
    static var declared: [Setting<MockHMSQuota>] {
        [
            .whole("limit", \.limit, "Sends at most per window."),
            .number("windowSeconds", \.windowSeconds, "The window's length in seconds."),
            .yesNo("perToken", \.perToken, "Count tokens instead of requests."),
        ]
    }
}

/// The keys every send-API rule has, then Push Kit's own: `app` and `code` (Huawei's result code of `error` and
/// `failFirst`).
extension MockHMSRule: DeclaredFaultRule {
    public static let blank = MockHMSRule(fate: .accept)
    public static var declared: [Setting<MockHMSRule>] {
        sendAPIRuleSettings() + [.optionalText("app", \.app, "Exact app id of the request path."), .optionalText("code", \.code, "Huawei's result code.")]
    }
}

/// Push Kit's own fields of its fault script: the device state (tokens it calls illegal) and its flow control.
public struct MockHMSDeviceState: FaultScriptExtras {
    public typealias Rule = MockHMSRule
    /// Tokens Push Kit calls illegal (reported in `illegal_tokens`, or 80300007 when every token of a send is).
    public var invalidTokens: [String]?
    public var invalidTokenPrefixes: [String]?
    /// Per-app flow control; nil: none.
    public var appQuota: MockHMSQuota?
    /// The first N token requests (after a start, a reload or a reset) get 503, as Huawei's OAuth server
    /// answers when its backend fails or limits; later ones are checked as usual.
    public var tokenFailFirst: Int?

    public init() {}

    public static var declared: [Setting<MockHMSDeviceState>] {
        [
            .strings("invalidTokens", \.invalidTokens, "Tokens Push Kit calls illegal."),
            .strings("invalidTokenPrefixes", \.invalidTokenPrefixes, "Token prefixes Push Kit calls illegal."),
            .object("appQuota", \.appQuota, blank: MockHMSQuota(limit: 0), required: ["limit", "windowSeconds"], MockHMSQuota.declared,
                    "Per-app flow control."),
            .whole("tokenFailFirst", \.tokenFailFirst, "The first N token requests get 503."),
        ]
    }

    /// True when Push Kit calls `token` illegal: scripted, or not a token at all (empty, too long, or with a
    /// character no HMS token has, such as the stray space Huawei's FAQ names).
    func isIllegal(_ token: String) -> Bool {
        if token.isEmpty || token.utf8.count > 512 { return true }
        if !token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "\"") }) { return true }
        if invalidTokens?.contains(token) == true { return true }
        return invalidTokenPrefixes?.contains { UTF8Matching.hasPrefix(token, $0) } ?? false
    }
}

/// Device state, faults and quotas of the Push Kit simulator: `--config`, `POST /_mock/config`, or the library.
public typealias MockHMSFaultScript = FaultScript<MockHMSDeviceState>

extension FaultScript where Extras == MockHMSDeviceState {
    public init(seed: UInt64? = nil, latencyMs: MockLatency? = nil, invalidTokens: [String]? = nil, invalidTokenPrefixes: [String]? = nil,
                appQuota: MockHMSQuota? = nil, tokenFailFirst: Int? = nil, rules: [MockHMSRule] = []) {
        var state = MockHMSDeviceState()
        state.tokenFailFirst = tokenFailFirst
        state.invalidTokens = invalidTokens
        state.invalidTokenPrefixes = invalidTokenPrefixes
        state.appQuota = appQuota
        self.init(seed: seed, latencyMs: latencyMs, rules: rules, extras: state)
    }
}

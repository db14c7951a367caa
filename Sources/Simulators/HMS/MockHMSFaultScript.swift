import Foundation

/// What happens to a Push Kit send a rule matches (a whole request: one answer for all its tokens). Device
/// fates (a token Huawei calls illegal) are `MockHMSFaultScript.invalidTokens`/`invalidTokenPrefixes`, per token.
/// Documented with examples in docs/mock-hms.md.
public enum MockHMSFate: String, Codable, Sendable, CaseIterable {
    /// Checked as usual, even if a later rule would match (use it to exempt an app or tokens).
    case accept
    /// Answer `status` (default 500) with `code` (default 81000001, "System internal error") and `message`.
    case error
    /// HTTP 503, Huawei's traffic control (`retryAfterSeconds` adds a Retry-After header; Huawei sends none).
    case flowControl
    /// 401 80200003: the access token expired (a client refreshes it once and resends).
    case tokenExpired
    /// The first `count` attempts of each matching first token get `status`/`code` (default 503 flow control).
    case failFirst
    /// 503 flow control once a first token had `limit` sends within `windowSeconds` (default 1).
    case throttle
    /// Never answer the request.
    case silence
    /// Close the TCP connection abruptly, without answering.
    case drop
    /// HTTP/2: GOAWAY, the request unanswered. HTTP/1.1: close the connection without answering.
    case goaway
    /// Add `latencyMs` and keep evaluating later rules.
    case delay
}

/// One scripted rule: which sends (by app, by a token among the request's, by topic), how often, what happens.
public struct MockHMSRule: Codable, Sendable, Equatable {
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
public struct MockHMSQuota: Codable, Sendable, Equatable {
    public var limit: Int
    public var windowSeconds: Double
    /// Count tokens (a 1000-token send spends 1000) instead of requests.
    public var perToken: Bool?

    public init(limit: Int, windowSeconds: Double = 1, perToken: Bool? = nil) {
        self.limit = limit
        self.windowSeconds = windowSeconds
        self.perToken = perToken
    }
}

/// Device state, faults and quotas of the Push Kit simulator: `--config`, `POST /_mock/config`, or the library.
public struct MockHMSFaultScript: Codable, Sendable, Equatable {
    public var seed: UInt64?
    /// Latency added to every answer.
    public var latencyMs: MockLatency?
    public var goawayAfterRequests: Int?
    public var dropAfterRequests: Int?
    public var silenceAfterRequests: Int?
    /// Tokens Push Kit calls illegal (reported in `illegal_tokens`, or 80300007 when every token of a send is).
    public var invalidTokens: [String]?
    public var invalidTokenPrefixes: [String]?
    /// Per-app flow control; nil: none.
    public var appQuota: MockHMSQuota?
    /// The first N token requests (after a start, a reload or a reset) get 503, as the OAuth server answers
    /// under its own rate limiting; later ones are checked as usual.
    public var tokenFailFirst: Int?
    /// Request rules, first match wins (except `delay`); stored optional so a script may leave `rules` out.
    public var rules: [MockHMSRule] {
        get { ruleList ?? [] }
        set { ruleList = newValue }
    }
    private var ruleList: [MockHMSRule]?

    public init(seed: UInt64? = nil, latencyMs: MockLatency? = nil, invalidTokens: [String]? = nil, invalidTokenPrefixes: [String]? = nil,
                appQuota: MockHMSQuota? = nil, tokenFailFirst: Int? = nil, rules: [MockHMSRule] = []) {
        self.seed = seed
        self.latencyMs = latencyMs
        self.invalidTokens = invalidTokens
        self.invalidTokenPrefixes = invalidTokenPrefixes
        self.appQuota = appQuota
        self.tokenFailFirst = tokenFailFirst
        self.ruleList = rules
    }

    enum CodingKeys: String, CodingKey {
        case seed, latencyMs, goawayAfterRequests, dropAfterRequests, silenceAfterRequests, invalidTokens, invalidTokenPrefixes
        case appQuota, tokenFailFirst, ruleList = "rules"
    }

    var connectionFaults: ConnectionFaults {
        ConnectionFaults(goawayAfterRequests: goawayAfterRequests, dropAfterRequests: dropAfterRequests, silenceAfterRequests: silenceAfterRequests)
    }

    /// True when Push Kit calls `token` illegal: scripted, or not a token at all (empty, too long, or with a
    /// character no HMS token has, such as the stray space Huawei's FAQ names).
    func isIllegal(_ token: String) -> Bool {
        if token.isEmpty || token.utf8.count > 512 { return true }
        if !token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "\"") }) { return true }
        if invalidTokens?.contains(token) == true { return true }
        return invalidTokenPrefixes?.contains { UTF8Matching.hasPrefix(token, $0) } ?? false
    }

    public static func parse(_ data: Data) throws -> MockHMSFaultScript {
        try ConfigDecoding.script(MockHMSFaultScript.self, from: data)
    }

    public static func load(file: String) throws -> MockHMSFaultScript {
        try parse(try ConfigDecoding.read(file))
    }

    func check() throws {
        if let quota = appQuota {
            if quota.limit < 0 { throw SimulatorError.configuration("appQuota.limit must be 0 or more") }
            if !(quota.windowSeconds > 0) { throw SimulatorError.configuration("appQuota.windowSeconds must be above 0") }
        }
        if let count = tokenFailFirst, count < 0 { throw SimulatorError.configuration("tokenFailFirst must be 0 or more") }
        for (index, rule) in rules.enumerated() {
            try ConfigDecoding.checkRule(index, fate: rule.fate.rawValue, rate: rule.rate, count: rule.count, limit: rule.limit, latency: rule.latencyMs)
            if let status = rule.status, !(400...599).contains(status) { throw SimulatorError.configuration("rules[\(index)].status must be 400-599") }
            if let code = rule.code, code.utf8.count != 8 || !code.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
                throw SimulatorError.configuration("rules[\(index)].code must be Huawei's eight digits (81000001)")
            }
        }
    }
}

import Foundation
import Settings

/// What happens to a request a rule matches. Documented with examples in docs/mock-apns.md.
public enum MockFate: String, Codable, Sendable, CaseIterable {
    /// 200, even if a later rule would match (use it to exempt tokens).
    case accept
    /// 410 Unregistered with `timestamp` (the rule's, or the server's start time).
    case unregistered
    /// 410 ExpiredToken with `timestamp`.
    case expiredToken
    /// 400 BadDeviceToken: a token of the other environment.
    case otherEnvironment
    /// 400 DeviceTokenNotForTopic: a token of another app.
    case otherTopic
    /// Answer `status` with `reason` (500 InternalServerError, 503 ServiceUnavailable, anything).
    case error
    /// The first `count` attempts of each matching token get `status`/`reason` (default 503 ServiceUnavailable), then it passes on.
    case failFirst
    /// 429 TooManyRequests once a token had `limit` pushes within `windowSeconds`.
    case throttle
    /// RST_STREAM REFUSED_STREAM instead of an answer.
    case refuseStream
    /// Never answer the request (the stream stays open).
    case silence
    /// Close the TCP connection abruptly, without answering.
    case drop
    /// Answer nothing and send GOAWAY with `reason` (default Shutdown); streams above it are refused.
    case goaway
    /// Add `latencyMs` and keep evaluating later rules.
    case delay
}

/// One scripted rule: which requests (by token and topic), how often (`rate`), and what happens.
public struct MockFaultRule: Sendable, Equatable, Encodable {
    public var token: String?
    public var tokenPrefix: String?
    public var tokenSuffix: String?
    public var topic: String?
    /// Probability 0...1 that a matching request is affected (seeded, so runs repeat). Default 1.
    public var rate: Double?
    public var fate: MockFate
    public var status: Int?
    public var reason: String?
    public var count: Int?
    public var limit: Int?
    public var windowSeconds: Double?
    public var timestamp: Int64?
    public var latencyMs: MockLatency?

    public init(fate: MockFate, token: String? = nil, tokenPrefix: String? = nil, tokenSuffix: String? = nil, topic: String? = nil,
                rate: Double? = nil, status: Int? = nil, reason: String? = nil, count: Int? = nil, limit: Int? = nil,
                windowSeconds: Double? = nil, timestamp: Int64? = nil, latencyMs: MockLatency? = nil) {
        self.fate = fate
        self.token = token
        self.tokenPrefix = tokenPrefix
        self.tokenSuffix = tokenSuffix
        self.topic = topic
        self.rate = rate
        self.status = status
        self.reason = reason
        self.count = count
        self.limit = limit
        self.windowSeconds = windowSeconds
        self.timestamp = timestamp
        self.latencyMs = latencyMs
    }

    /// `candidate` is the lowercased device token; rule tokens compare case-insensitively.
    func matches(token candidate: String, topic candidateTopic: String) -> Bool {
        if let token, token.lowercased() != candidate { return false }
        if let tokenPrefix, !UTF8Matching.hasPrefix(candidate, tokenPrefix.lowercased()) { return false }
        if let tokenSuffix, !UTF8Matching.hasSuffix(candidate, tokenSuffix.lowercased()) { return false }
        if let topic, topic != candidateTopic { return false }
        return true
    }
}

extension MockFaultRule: DeclaredFaultRule {
    public static var blank: MockFaultRule { MockFaultRule(fate: .accept) }

    public static var declared: [Setting<MockFaultRule>] {
        [
            .choice("fate", \.fate, MockFate.allCases, "What happens to a matching request."),
            .optionalText("token", \.token, "Requests to this device token (case-insensitive)."),
            .optionalText("tokenPrefix", \.tokenPrefix, "Requests to a token with this prefix."),
            .optionalText("tokenSuffix", \.tokenSuffix, "Requests to a token with this suffix."),
            .optionalText("topic", \.topic, "Requests with this apns-topic."),
            .number("rate", \.rate, "Probability 0...1 that a matching request is affected (default 1)."),
            .whole("status", \.status, "The HTTP status of error and failFirst."),
            .optionalText("reason", \.reason, "The reason of error and failFirst."),
            .whole("count", \.count, "failFirst: the attempts of each token that fail."),
            .whole("limit", \.limit, "throttle: requests of a token per window."),
            .number("windowSeconds", \.windowSeconds, "throttle: the window."),
            .whole("timestamp", \.timestamp, "unregistered: the timestamp answered (ms)."),
            .latency("latencyMs", \.latencyMs, "delay: the latency added."),
        ]
    }
}

/// APNs' own fields of its fault script, beside the shared ones (`FaultScript`).
public struct MockAPNsFaultFields: FaultScriptExtras {
    public typealias Rule = MockFaultRule
    /// The GOAWAY reason for `goawayAfterRequests` (default "Shutdown").
    public var goawayReason: String?
    /// Close a connection idle (no new request) for this long with GOAWAY `{"reason":"IdleTimeout"}`.
    public var idleTimeoutSeconds: Double?
    /// Drop SETTINGS_MAX_CONCURRENT_STREAMS to 1 after a rejected push, back up after the next accepted one.
    public var dropStreamsAfterRejection: Bool?
    /// Record a push that will be accepted when it arrives, before its latency, as a real provider has processed
    /// a request it received even if the client cancels the stream before the answer (the accepted log then
    /// counts it; without this a push cancelled during its latency is never seen).
    public var recordOnReceipt: Bool?

    public init() {}

    public static var declared: [Setting<MockAPNsFaultFields>] {
        [
            .optionalText("goawayReason", \.goawayReason, "The GOAWAY reason of goawayAfterRequests (default Shutdown)."),
            .number("idleTimeoutSeconds", \.idleTimeoutSeconds, "Close a connection idle this long."),
            .yesNo("dropStreamsAfterRejection", \.dropStreamsAfterRejection, "SETTINGS_MAX_CONCURRENT_STREAMS 1 after a rejected push."),
            .yesNo("recordOnReceipt", \.recordOnReceipt, "Record an accepted push when it arrives."),
        ]
    }
}

/// Device state and faults of the APNs simulator, as loaded from `--config` or `POST /_mock/config`, or set
/// through the library.
public typealias MockFaultScript = FaultScript<MockAPNsFaultFields>

extension FaultScript where Extras == MockAPNsFaultFields {
    public init(seed: UInt64? = nil, latencyMs: MockLatency? = nil, goawayAfterRequests: Int? = nil, goawayReason: String? = nil,
                dropAfterRequests: Int? = nil, silenceAfterRequests: Int? = nil, idleTimeoutSeconds: Double? = nil,
                dropStreamsAfterRejection: Bool? = nil, recordOnReceipt: Bool? = nil,
                rules: [MockFaultRule] = []) {
        var fields = MockAPNsFaultFields()
        fields.goawayReason = goawayReason
        fields.idleTimeoutSeconds = idleTimeoutSeconds
        fields.dropStreamsAfterRejection = dropStreamsAfterRejection
        fields.recordOnReceipt = recordOnReceipt
        self.init(seed: seed, latencyMs: latencyMs, goawayAfterRequests: goawayAfterRequests, dropAfterRequests: dropAfterRequests,
                  silenceAfterRequests: silenceAfterRequests, rules: rules, extras: fields)
    }

    /// Parses the JSON config format; errors name the offending field.
    public static func parse(_ data: Data) throws -> MockFaultScript { try decode(data) }

    public static func load(file: String) throws -> MockFaultScript { try read(file: file) }
}

extension MockAPNsFaultFields: FaultVocabulary {
    static func check(_ script: MockFaultScript) throws {
        if let idle = script.idleTimeoutSeconds, !(idle > 0) { throw SimulatorError.configuration("idleTimeoutSeconds must be above 0") }
        for (index, rule) in script.rules.enumerated() {
            try ConfigDecoding.checkRule(index, fate: rule.fate.rawValue, rate: rule.rate, count: rule.count, limit: rule.limit, latency: rule.latencyMs)
            if rule.fate == .error {
                guard let status = rule.status, (400...599).contains(status), rule.reason != nil else {
                    throw SimulatorError.configuration("rules[\(index)]: fate error needs status (400-599) and reason")
                }
            }
        }
    }
}

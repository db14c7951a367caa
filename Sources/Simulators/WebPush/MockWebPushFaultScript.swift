import Foundation
import Settings

/// The Web Push simulator's own part of its fault script: its rules (by subscription: its id's prefix, as
/// minted), and no fields beyond the shared ones.
public struct MockWebPushFaultFields: FaultScriptExtras {
    public typealias Rule = MockWebPushRule
    public init() {}
}

/// The Web Push simulator's fault rules: the fates a push service answers, or a connection fault. JSON, as
/// `--config` or `MockWebPushServer.replaceFaults` take it.
public typealias MockWebPushFaultScript = FaultScript<MockWebPushFaultFields>

extension FaultScript where Extras == MockWebPushFaultFields {
    public init(rules: [MockWebPushRule] = [], seed: UInt64? = nil, latencyMs: MockLatency? = nil) {
        self.init(seed: seed, latencyMs: latencyMs, rules: rules, extras: MockWebPushFaultFields())
    }

    /// The rules from a `--config` file (JSON, read through the declarations); errors name the offending key and the file.
    public static func load(file: String) throws -> MockWebPushFaultScript { try read(file: file) }
}

extension MockWebPushFaultFields: FaultVocabulary {
    static func check(_ script: MockWebPushFaultScript) throws {
        for (index, rule) in script.rules.enumerated() {
            if let rate = rule.rate, !(0...1).contains(rate) { throw SimulatorError.configuration("rules[\(index)].rate must be 0...1") }
            if rule.fate == .delay && rule.latencyMs == nil { throw SimulatorError.configuration("rules[\(index)]: delay needs latencyMs") }
            if rule.fate == .throttle && rule.limit == nil { throw SimulatorError.configuration("rules[\(index)]: throttle needs limit") }
        }
    }
}

public struct MockWebPushRule: ScriptedRule, DeclaredFaultRule, Encodable, Equatable, Sendable {
    public enum Fate: String, Codable, Sendable, CaseIterable {
        /// 410: the subscription expired or was unsubscribed.
        case gone
        /// 404: the push service does not know the subscription.
        case notFound
        /// 413.
        case tooLarge
        /// 429 with `Retry-After`.
        case throttled
        /// At most `limit` per subscription in `windowSeconds`, 429 past it.
        case throttle
        /// 503 with `Retry-After` when given.
        case unavailable
        case internalError
        /// 403 `BadJwtToken`, as Safari answers a JWT it dislikes.
        case badJwt
        case delay
        case refuseStream, silence, drop, goaway
    }

    /// Matches subscriptions whose id starts with this; nil: every one.
    public var subscriptionPrefix: String?
    public var fate: Fate
    public var rate: Double?
    public var latencyMs: MockLatency?
    /// The first N attempts of each subscription get the fate; later ones go on.
    public var failFirst: Int?
    public var retryAfter: Int?
    public var limit: Int?
    public var windowSeconds: Double?

    public init(subscriptionPrefix: String? = nil, fate: Fate, failFirst: Int? = nil, retryAfter: Int? = nil, rate: Double? = nil) {
        self.subscriptionPrefix = subscriptionPrefix
        self.fate = fate
        self.failFirst = failFirst
        self.retryAfter = retryAfter
        self.rate = rate
    }

    /// Its keys: which pushes (`subscriptionPrefix`, `rate`), its fate, and the fates' own fields.
    public static var declared: [Setting<MockWebPushRule>] {
        [.optionalText("subscriptionPrefix", \.subscriptionPrefix, "Pushes to a subscription whose id starts with this."),
         .number("rate", \.rate, "Probability 0...1 that a matching push is affected (default 1)."),
         .choice("fate", \.fate, Fate.allCases, "What happens to a matching push."),
         .whole("failFirst", \.failFirst, "The first N attempts of each subscription get the fate."),
         .whole("retryAfter", \.retryAfter, "The Retry-After of throttled and unavailable."),
         .latency("latencyMs", \.latencyMs, "delay: the latency added."),
         .whole("limit", \.limit, "throttle: pushes of a subscription per window."),
         .number("windowSeconds", \.windowSeconds, "throttle: the window.")]
    }

    public static let blank = MockWebPushRule(fate: .gone)

    func matches(_ subscription: String) -> Bool { subscriptionPrefix.map(subscription.hasPrefix) ?? true }

    func effect(startMillis: Int64) -> RuleEffect<WebPushAnswer> {
        let answer: FaultVerdict<WebPushAnswer>
        switch fate {
        case .gone: answer = .answer(.reason(410, "Gone"))
        case .notFound: answer = .answer(.reason(404, "NotFound"))
        case .tooLarge: answer = .answer(.reason(413, "PayloadTooLarge"))
        case .throttled: answer = .answer(throttled(retryAfter: retryAfter ?? 1))
        case .throttle: return .throttle(limit: limit ?? 1, windowSeconds: windowSeconds ?? 1)
        case .unavailable:
            answer = .answer(.reason(503, "ServiceUnavailable", extra: retryAfter.map { [("retry-after", String($0))] } ?? []))
        case .internalError: answer = .answer(.reason(500, "InternalServerError"))
        case .badJwt: answer = .answer(.reason(403, "BadJwtToken"))
        case .delay: return .delay
        case .refuseStream: answer = .connection(.refuseStream)
        case .silence: answer = .connection(.silence)
        case .drop: answer = .connection(.drop)
        case .goaway: answer = .connection(.goaway(reason: nil))
        }
        if let failFirst, case .answer(let a) = answer { return .failFirst(count: failFirst, answer: a) }
        return .verdict(answer)
    }

    func throttled(retryAfter: Int) -> WebPushAnswer { .reason(429, "TooManyRequests", extra: [("retry-after", String(retryAfter))]) }
}

/// An answer of the simulated push service.
struct WebPushAnswer {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    /// Apple's shape: `{"reason":...}`.
    static func reason(_ status: Int, _ reason: String, detail: String? = nil, extra: [(String, String)] = []) -> WebPushAnswer {
        var object: [String: String] = ["reason": reason]
        if let detail { object["detail"] = detail }
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map { [UInt8]($0) } ?? []
        return WebPushAnswer(status: status, headers: [("content-type", "application/json")] + extra, body: body)
    }
}

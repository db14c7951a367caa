import Foundation
import Settings

/// A send-API provider's rule as the shared checks, engine and declarations read it: the fields every such rule
/// has, its fate (a shared one or the provider's own), and what the provider answers.
protocol SendAPIRule: ScriptedRule, DeclaredFaultRule where Subject == SendSubject, Answer: Error {
    associatedtype OwnFate: SendAPIOwnFate
    var fate: SendAPIFate<OwnFate> { get set }
    var token: String? { get set }
    var tokenPrefix: String? { get set }
    var topic: String? { get set }
    var rate: Double? { get set }
    var status: Int? { get set }
    var message: String? { get set }
    var count: Int? { get set }
    var limit: Int? { get set }
    var windowSeconds: Double? { get set }
    var retryAfterSeconds: Int? { get set }
    var latencyMs: MockLatency? { get set }
    /// `throttle`'s window when the rule gives none, in seconds (FCM's 60, Push Kit's 1).
    static var defaultThrottleWindow: Double { get }
    /// The provider's error for `status`, as the rule words it: what `error` and `failFirst` answer.
    func scriptedError(status: Int) -> Answer
    /// What one of the provider's own fates answers.
    func answer(_ own: OwnFate) -> Answer
    /// Throws, naming the field, what else the provider refuses in rule `index`.
    func check(_ index: Int) throws
}

extension SendAPIRule {
    /// The shared fates alike for every provider; its own answer as it words it.
    func effect(startMillis: Int64) -> RuleEffect<Answer> {
        switch fate {
        case .accept: return .verdict(.accept)
        case .delay: return .delay
        case .error: return .verdict(.answer(scriptedError(status: status ?? 500)))
        case .failFirst: return .failFirst(count: count ?? 0, answer: scriptedError(status: status ?? 503))
        case .throttle: return .throttle(limit: limit ?? 0, windowSeconds: windowSeconds ?? Self.defaultThrottleWindow)
        case .silence: return .verdict(.connection(.silence))
        case .drop: return .verdict(.connection(.drop))
        case .goaway: return .verdict(.connection(.goaway(reason: nil)))
        case .own(let own): return .verdict(.answer(answer(own)))
        }
    }
}

/// The keys every send-API rule has, for its declarations (`MockFCMRule.declared`), before the provider's own.
func sendAPIRuleSettings<Rule: SendAPIRule>() -> [Setting<Rule>] {
    [
        .choice("fate", \.fate, SendAPIFate<Rule.OwnFate>.allCases, "What happens to a matching send."),
        .optionalText("token", \.token, "Sends to this token."),
        .optionalText("tokenPrefix", \.tokenPrefix, "Sends to a token with this prefix."),
        .optionalText("topic", \.topic, "Sends to this topic."),
        .number("rate", \.rate, "Probability 0...1 that a matching send is affected (default 1)."),
        .whole("status", \.status, "The HTTP status of error and failFirst."),
        .optionalText("message", \.message, "The error's message."),
        .whole("count", \.count, "failFirst: the attempts of each token that fail."),
        .whole("limit", \.limit, "throttle: sends of a token per window."),
        .number("windowSeconds", \.windowSeconds, "throttle: the window."),
        .whole("retryAfterSeconds", \.retryAfterSeconds, "The Retry-After of the answer."),
        .latency("latencyMs", \.latencyMs, "delay: the latency added."),
    ]
}

/// A send-API provider's extras as the shared checks and engine read them: its own checks, and its quota, which
/// the engine asks once the rules let a send pass.
protocol SendAPIFaults: FaultVocabulary where Rule: SendAPIRule {
    associatedtype Quota: SendAPIQuota where Quota.Extras == Self
    /// The first N token requests (after a start, a reload or a reset) get 503, as the provider's OAuth server
    /// answers when its backend fails or limits; later ones are checked as usual.
    var tokenFailFirst: Int? { get }
    /// Throws, naming the field, what the provider's own fields may not say.
    func check() throws
}

/// A provider's quota windows (loop-confined, inside the engine; a new script starts them afresh).
protocol SendAPIQuota {
    associatedtype Extras: SendAPIFaults
    init()
    /// The quota's refusal of `subject` (the send not counted), or nil: it counted and passes.
    mutating func spend(_ subject: SendSubject, _ extras: Extras) -> Extras.Rule.Answer?
}

/// What a send-API rule and quota compare with: the project or app of the path, the request's tokens, its topic.
struct SendSubject {
    var target: String
    var tokens: [String]
    var topic: String?

    /// What `failFirst` and `throttle` count by: the first token, else the topic.
    var key: String { tokens.first ?? topic.map { "/topics/" + $0 } ?? "" }
}

extension FaultScript where Extras: SendAPIFaults {
    /// Parses the JSON config format; errors name the offending field.
    static func parse(_ data: Data) throws -> Self { try decode(data) }

    static func load(file: String) throws -> Self { try read(file: file) }
}

extension SendAPIFaults {
    /// What every send-API script may not say, then the provider's own fields' checks.
    static func check(_ script: FaultScript<Self>) throws {
        try script.extras.check()
        if let count = script.extras.tokenFailFirst, count < 0 { throw SimulatorError.configuration("tokenFailFirst must be 0 or more") }
        for (index, rule) in script.rules.enumerated() {
            try ConfigDecoding.checkRule(index, fate: rule.fate.rawValue, rate: rule.rate, count: rule.count, limit: rule.limit, latency: rule.latencyMs)
            if let status = rule.status, !(400...599).contains(status) { throw SimulatorError.configuration("rules[\(index)].status must be 400-599") }
            try rule.check(index)
        }
    }
}

import Foundation

/// A send-API provider's own fault-script fields (FCM's quotas; Push Kit's illegal tokens and app quota), kept in
/// the script's one JSON object beside the shared ones, and its rule type.
public protocol SendAPIFaultExtras: Codable, Sendable, Equatable {
    associatedtype Rule: Codable & Sendable & Equatable
    init()
}

/// Device state, faults and quotas of a send-API simulator (FCM, Push Kit): `--config`, `POST /_mock/config`, or
/// the library. One JSON object: the fields every such provider reads, below, and the provider's own (`extras`,
/// reached as if they were fields here: `script.deviceQuota`, `script.appQuota`).
@dynamicMemberLookup
public struct SendAPIFaultScript<Extras: SendAPIFaultExtras>: Codable, Sendable, Equatable {
    /// Seed for every random choice (rates, latency ranges); the same seed and request order give the same run.
    public var seed: UInt64?
    /// Latency added to every answer.
    public var latencyMs: MockLatency?
    /// HTTP/2: GOAWAY after this many sends on a connection (the Nth answered). HTTP/1.1: `Connection: close` on the Nth.
    public var goawayAfterRequests: Int?
    /// Close a connection abruptly when send N+1 arrives (N answered).
    public var dropAfterRequests: Int?
    /// Stop reading a connection after N sends: no answers, no PING acks (a dead peer).
    public var silenceAfterRequests: Int?
    /// The first N token requests (after a start, a reload or a reset) get 503, as the provider's OAuth server
    /// answers when its backend fails or limits; later ones are checked as usual.
    public var tokenFailFirst: Int?
    /// Rules, first match wins (except `delay`, which adds latency and goes on); a script may leave them out.
    public var rules: [Extras.Rule]
    /// The provider's own fields.
    public var extras: Extras

    public init(seed: UInt64? = nil, latencyMs: MockLatency? = nil, goawayAfterRequests: Int? = nil, dropAfterRequests: Int? = nil,
                silenceAfterRequests: Int? = nil, tokenFailFirst: Int? = nil, rules: [Extras.Rule] = [], extras: Extras) {
        self.seed = seed
        self.latencyMs = latencyMs
        self.goawayAfterRequests = goawayAfterRequests
        self.dropAfterRequests = dropAfterRequests
        self.silenceAfterRequests = silenceAfterRequests
        self.tokenFailFirst = tokenFailFirst
        self.rules = rules
        self.extras = extras
    }

    public subscript<Value>(dynamicMember path: WritableKeyPath<Extras, Value>) -> Value {
        get { extras[keyPath: path] }
        set { extras[keyPath: path] = newValue }
    }

    enum CodingKeys: String, CodingKey {
        case seed, latencyMs, goawayAfterRequests, dropAfterRequests, silenceAfterRequests, tokenFailFirst, rules
    }

    /// The shared fields and the provider's from the same object (`rules` may be left out).
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        seed = try c.decodeIfPresent(UInt64.self, forKey: .seed)
        latencyMs = try c.decodeIfPresent(MockLatency.self, forKey: .latencyMs)
        goawayAfterRequests = try c.decodeIfPresent(Int.self, forKey: .goawayAfterRequests)
        dropAfterRequests = try c.decodeIfPresent(Int.self, forKey: .dropAfterRequests)
        silenceAfterRequests = try c.decodeIfPresent(Int.self, forKey: .silenceAfterRequests)
        tokenFailFirst = try c.decodeIfPresent(Int.self, forKey: .tokenFailFirst)
        rules = try c.decodeIfPresent([Extras.Rule].self, forKey: .rules) ?? []
        extras = try Extras(from: decoder)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(seed, forKey: .seed)
        try c.encodeIfPresent(latencyMs, forKey: .latencyMs)
        try c.encodeIfPresent(goawayAfterRequests, forKey: .goawayAfterRequests)
        try c.encodeIfPresent(dropAfterRequests, forKey: .dropAfterRequests)
        try c.encodeIfPresent(silenceAfterRequests, forKey: .silenceAfterRequests)
        try c.encodeIfPresent(tokenFailFirst, forKey: .tokenFailFirst)
        try c.encode(rules, forKey: .rules)
        try extras.encode(to: encoder)
    }
}

/// A send-API provider's rule as the shared checks and engine read it.
protocol SendAPIRule: ScriptedRule where Subject == SendSubject, Answer: Error {
    var fateName: String { get }
    var status: Int? { get }
    var count: Int? { get }
    var limit: Int? { get }
    /// Throws, naming the field, what else the provider refuses in rule `index`.
    func check(_ index: Int) throws
}

/// A send-API provider's extras as the shared checks and engine read them: its own checks, and its quota, which
/// the engine asks once the rules let a send pass.
protocol SendAPIFaults: SendAPIFaultExtras where Rule: SendAPIRule {
    associatedtype Quota: SendAPIQuota where Quota.Extras == Self
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

extension SendAPIFaultScript: FaultScript where Extras: SendAPIFaults {
    typealias Rule = Extras.Rule

    var connectionFaults: ConnectionFaults {
        ConnectionFaults(goawayAfterRequests: goawayAfterRequests, dropAfterRequests: dropAfterRequests, silenceAfterRequests: silenceAfterRequests)
    }

    /// Parses the JSON config format; errors name the offending field.
    static func parse(_ data: Data) throws -> Self { try ConfigDecoding.script(Self.self, from: data) }

    static func load(file: String) throws -> Self { try parse(try ConfigDecoding.read(file)) }

    func check() throws {
        try extras.check()
        if let count = tokenFailFirst, count < 0 { throw SimulatorError.configuration("tokenFailFirst must be 0 or more") }
        for (index, rule) in rules.enumerated() {
            try ConfigDecoding.checkRule(index, fate: rule.fateName, rate: rule.rate, count: rule.count, limit: rule.limit, latency: rule.latencyMs)
            if let status = rule.status, !(400...599).contains(status) { throw SimulatorError.configuration("rules[\(index)].status must be 400-599") }
            try rule.check(index)
        }
    }
}

import Basics
import Foundation
import Settings

/// A simulator's own part of its fault script: its rule vocabulary (`Rule`) and its own fields, kept in the
/// script's one JSON object beside the shared ones (APNs' `goawayReason`, FCM's quotas, Push Kit's illegal tokens).
/// A fault file is read through their declarations (`Setting`), as the worker's configuration is.
public protocol FaultScriptExtras: Encodable, Sendable, Equatable {
    /// Its rule; a script read from JSON needs it declared (`DeclaredFaultRule`).
    associatedtype Rule: Encodable & Sendable & Equatable
    init()
    /// Its own keys of the script's object (none by default).
    static var declared: [Setting<Self>] { get }
}

extension FaultScriptExtras {
    public static var declared: [Setting<Self>] { [] }
}

/// Device state and faults of a simulator: `--config`, `POST /_mock/config`, or the library. One JSON object:
/// the fields every simulator reads, below, and the provider's own (`extras`, reached as if they were fields
/// here: `script.goawayReason`, `script.deviceQuota`). One type for all four simulators: a new one brings its
/// rules and its own fields, not a script.
@dynamicMemberLookup
public struct FaultScript<Extras: FaultScriptExtras>: Encodable, Sendable, Equatable {
    /// Seed for every random choice (rates, latency ranges); the same seed and request order give the same run.
    public var seed: UInt64?
    /// Latency added to every answer.
    public var latencyMs: MockLatency?
    /// HTTP/2: GOAWAY after this many requests on a connection (the Nth answered). HTTP/1.1: `Connection: close` on the Nth.
    public var goawayAfterRequests: Int?
    /// Close a connection abruptly when request N+1 arrives (N answered).
    public var dropAfterRequests: Int?
    /// Stop reading a connection after N requests: no answers, no PING acks (a dead peer).
    public var silenceAfterRequests: Int?
    /// Rules, first match wins (except `delay`, which adds latency and goes on); a script may leave them out.
    public var rules: [Extras.Rule]
    /// The provider's own fields.
    public var extras: Extras

    public init(seed: UInt64? = nil, latencyMs: MockLatency? = nil, goawayAfterRequests: Int? = nil, dropAfterRequests: Int? = nil,
                silenceAfterRequests: Int? = nil, rules: [Extras.Rule] = [], extras: Extras) {
        self.seed = seed
        self.latencyMs = latencyMs
        self.goawayAfterRequests = goawayAfterRequests
        self.dropAfterRequests = dropAfterRequests
        self.silenceAfterRequests = silenceAfterRequests
        self.rules = rules
        self.extras = extras
    }

    public subscript<Value>(dynamicMember path: WritableKeyPath<Extras, Value>) -> Value {
        get { extras[keyPath: path] }
        set { extras[keyPath: path] = newValue }
    }

    enum CodingKeys: String, CodingKey {
        case seed, latencyMs, goawayAfterRequests, dropAfterRequests, silenceAfterRequests, rules
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(seed, forKey: .seed)
        try c.encodeIfPresent(latencyMs, forKey: .latencyMs)
        try c.encodeIfPresent(goawayAfterRequests, forKey: .goawayAfterRequests)
        try c.encodeIfPresent(dropAfterRequests, forKey: .dropAfterRequests)
        try c.encodeIfPresent(silenceAfterRequests, forKey: .silenceAfterRequests)
        try c.encode(rules, forKey: .rules)
        try extras.encode(to: encoder)
    }
}

/// A simulator's fault vocabulary as the engine (`ScriptedFaults`) and the connections read it: rules it can
/// evaluate, and what its scripts may not say.
protocol FaultVocabulary: FaultScriptExtras where Rule: ScriptedRule {
    /// Throws, naming the field, what a decoded script may not say (a rate above 1, a fate without its field, ...).
    static func check(_ script: FaultScript<Self>) throws
    /// Close a connection idle this long (APNs'); nil: never.
    var idleTimeoutSeconds: Double? { get }
}

extension FaultVocabulary {
    var idleTimeoutSeconds: Double? { nil }
}

extension FaultScript where Extras: FaultVocabulary {
    /// What connections count (GOAWAY, drop, silence after N requests; idle timeout).
    var connectionFaults: ConnectionFaults {
        ConnectionFaults(goawayAfterRequests: goawayAfterRequests, dropAfterRequests: dropAfterRequests,
                         silenceAfterRequests: silenceAfterRequests, idleTimeoutSeconds: extras.idleTimeoutSeconds)
    }

    /// Throws, naming the field, what the script may not say (the provider's vocabulary decides).
    func check() throws { try Extras.check(self) }
}

extension FaultScript where Extras: FaultVocabulary, Extras.Rule: DeclaredFaultRule {
    /// Its keys: the shared ones, then the provider's from the same object (`rules` may be left out). A key no
    /// declaration names is refused, with the closest known one.
    static var declared: [Setting<FaultScript>] {
        [
            .whole("seed", \.seed, "Seed for every random choice (rates, latency ranges)."),
            .latency("latencyMs", \.latencyMs, "Latency added to every answer."),
            .whole("goawayAfterRequests", \.goawayAfterRequests, "GOAWAY (HTTP/1.1: Connection: close) after this many requests on a connection."),
            .whole("dropAfterRequests", \.dropAfterRequests, "Close a connection abruptly when request N+1 arrives."),
            .whole("silenceAfterRequests", \.silenceAfterRequests, "Stop reading a connection after N requests."),
            .rules("rules", \.rules, "Rules, first match wins (except delay)."),
        ] + Extras.declared.map { $0.lifted(\.extras, prefix: "") }
    }

    /// Parses the JSON config format through the declarations, checked; errors name the offending key, every
    /// problem of the reading at once, and `file` when it came from one. (Each simulator's script type offers it as
    /// `parse` and `load`.)
    static func decode(_ data: Data, file: String? = nil) throws -> Self {
        let lead = file.map { "\($0): " } ?? ""
        let object: Any
        do { object = try JSONSerialization.jsonObject(with: data) } catch {
            throw SimulatorError.configuration("\(lead)not valid JSON (\(error.localizedDescription))")
        }
        guard let root = object as? [String: Any] else { throw SimulatorError.configuration("\(lead)the top level must be a JSON object") }
        var script = Self(extras: Extras())
        let problems = SettingsReader.apply(declared, object: root, to: &script, at: "")
        if !problems.isEmpty { throw SimulatorError.configuration(lead + problems.joined(separator: "; ")) }
        do { try script.check() } catch SimulatorError.configuration(let text) { throw SimulatorError.configuration(lead + text) }
        return script
    }

    static func read(file: String) throws -> Self { try decode(try ConfigDecoding.read(file), file: file) }
}

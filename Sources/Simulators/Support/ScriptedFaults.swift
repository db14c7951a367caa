import Reactor

/// SplitMix64: tiny, fast and seedable, so a seeded run repeats exactly.
struct SeededRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
    mutating func between(_ low: Int, _ high: Int) -> Int {
        high <= low ? low : low + Int(next() % UInt64(high - low + 1))
    }

    /// Seeded once from the system generator: for generated ids (getrandom per request showed in profiles).
    static func fromSystem() -> SeededRandom {
        var system = SystemRandomNumberGenerator()
        return SeededRandom(seed: system.next())
    }
}

/// What a fault script does with a request that passed the provider's own checks.
enum FaultVerdict<Answer> {
    case accept
    /// Answer this (an error, as the provider words it) instead.
    case answer(Answer)
    /// Act on the connection instead of answering.
    case connection(MockServerConnection.Fault)
}

/// What one matching rule does, in the engine's terms (the engine keeps the counters).
enum RuleEffect<Answer> {
    /// First match wins: this is the verdict.
    case verdict(FaultVerdict<Answer>)
    /// Add the rule's `latencyMs` and go on with the later rules.
    case delay
    /// The first `count` attempts of each key get `answer`; later ones go on with the later rules.
    case failFirst(count: Int, answer: Answer)
    /// At most `limit` requests per key within `windowSeconds`; over it, the rule's `throttled(retryAfter:)`.
    case throttle(limit: Int, windowSeconds: Double)
}

/// A provider's fault rule, as `ScriptedFaults` evaluates it.
protocol ScriptedRule {
    /// The provider's error answer.
    associatedtype Answer
    /// What the rule's selectors (token, topic, project, ...) compare with.
    associatedtype Subject
    /// Probability 0...1 that a matching request is affected; nil: always.
    var rate: Double? { get }
    var latencyMs: MockLatency? { get }
    func matches(_ subject: Subject) -> Bool
    /// What the rule does. `startMillis`: when the engine started (a default timestamp).
    func effect(startMillis: Int64) -> RuleEffect<Answer>
    /// The answer of a `throttle` rule over its limit; `retryAfter`: whole seconds until its window ends.
    func throttled(retryAfter: Int) -> Answer
}

/// A fixed counting window: `count` requests since `start` (monotonic nanoseconds).
struct CountingWindow {
    var start: UInt64
    var count: Int

    /// Counts one request in `window` (restarting it once `length` has passed). Returns the whole seconds until
    /// it ends when the request is over `limit` (a refused request is not counted), else nil.
    static func spend(_ window: inout CountingWindow?, limit: Int, length: UInt64, now: UInt64) -> Int? {
        var current = window ?? CountingWindow(start: now, count: 0)
        if now &- current.start >= length { current = CountingWindow(start: now, count: 0) }
        if current.count >= limit {
            window = current
            let remaining = length - (now &- current.start)
            return max(1, Int((remaining + 999_999_999) / 1_000_000_000))
        }
        current.count += 1
        window = current
        return nil
    }
}

/// The fault engine every simulator shares: applies a provider's `FaultScript` to requests (latency, rules in
/// order, seeded rates) and keeps the per-key counters of `failFirst` and `throttle` rules.
/// Confined to the server's loop thread: no locks on the request path.
final class ScriptedFaults<Vocabulary: FaultVocabulary> {
    typealias Script = FaultScript<Vocabulary>
    private(set) var script: Script
    private var random: SeededRandom
    private let startMillis: Int64
    private var attempts: [Int: [String: Int]] = [:]
    private var windows: [Int: [String: CountingWindow]] = [:]

    init(script: Script, defaultSeed: UInt64) {
        self.script = script
        self.random = SeededRandom(seed: script.seed ?? defaultSeed)
        self.startMillis = wallClockMillis()
    }

    /// A new script; the counters and the random sequence start afresh.
    func replace(_ newScript: Script, defaultSeed: UInt64) {
        script = newScript
        random = SeededRandom(seed: newScript.seed ?? defaultSeed)
        attempts.removeAll()
        windows.removeAll()
    }

    func latency(_ range: MockLatency) -> Int {
        random.between(range.minMilliseconds, range.maxMilliseconds)
    }

    /// Evaluates the script for one request: `key` is what `failFirst` and `throttle` count by. Returns the
    /// verdict (nil when no rule decided: the provider's default) and the latency to add before answering.
    func evaluate(key: String, _ subject: Vocabulary.Rule.Subject) -> (FaultVerdict<Vocabulary.Rule.Answer>?, Int) {
        var delay = script.latencyMs.map(latency) ?? 0
        for (index, rule) in script.rules.enumerated() {
            guard rule.matches(subject) else { continue }
            if let rate = rule.rate, rate < 1, random.unit() >= rate { continue }
            switch rule.effect(startMillis: startMillis) {
            case .verdict(let verdict):
                return (verdict, delay)
            case .delay:
                delay += rule.latencyMs.map(latency) ?? 0
            case .failFirst(let count, let answer):
                let seen = (attempts[index]?[key] ?? 0) + 1
                attempts[index, default: [:]][key] = seen
                if seen <= count { return (.answer(answer), delay) }
            case .throttle(let limit, let windowSeconds):
                var window = windows[index]?[key]
                let over = CountingWindow.spend(&window, limit: limit, length: UInt64(max(0, windowSeconds * 1e9)), now: monotonicNanos())
                windows[index, default: [:]][key] = window
                if let over { return (.answer(rule.throttled(retryAfter: over)), delay) }
            }
        }
        return (nil, delay)
    }
}

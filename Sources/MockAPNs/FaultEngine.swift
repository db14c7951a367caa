import Reactor

/// What the simulator does with a request that passed validation and authentication.
enum FaultVerdict {
    case accept
    case reject(status: Int, reason: String, timestamp: Int64?)
    case refuseStream
    case silence
    case drop
    case goaway(reason: String)
}

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
}

/// Applies a `MockFaultScript` to requests, keeping per-token counters (failFirst, throttle).
/// Confined to the server's loop thread: no locks on the request path.
final class FaultEngine {
    private(set) var script: MockFaultScript
    private var random: SeededRandom
    private let startMillis: Int64
    private var attempts: [Int: [String: Int]] = [:]
    private var windows: [Int: [String: (start: UInt64, count: Int)]] = [:]

    init(script: MockFaultScript, defaultSeed: UInt64) {
        self.script = script
        self.random = SeededRandom(seed: script.seed ?? defaultSeed)
        self.startMillis = wallClockMillis()
    }

    func replace(_ newScript: MockFaultScript, defaultSeed: UInt64) {
        script = newScript
        random = SeededRandom(seed: newScript.seed ?? defaultSeed)
        attempts.removeAll()
        windows.removeAll()
    }

    func latency(_ range: MockLatency) -> Int {
        random.between(range.minMilliseconds, range.maxMilliseconds)
    }

    /// Evaluates the rules for one request. Returns the verdict and the latency to add before answering.
    func decide(token: String, topic: String) -> (FaultVerdict, Int) {
        var delay = script.latencyMs.map(latency) ?? 0
        if script.rules.isEmpty { return (.accept, delay) }
        let token = token.lowercased()
        for (index, rule) in script.rules.enumerated() {
            guard rule.matches(token: token, topic: topic) else { continue }
            if let rate = rule.rate, rate < 1, random.unit() >= rate { continue }
            switch rule.fate {
            case .accept:
                return (.accept, delay)
            case .delay:
                delay += rule.latencyMs.map(latency) ?? 0
            case .unregistered:
                return (.reject(status: 410, reason: rule.reason ?? "Unregistered", timestamp: rule.timestamp ?? startMillis), delay)
            case .expiredToken:
                return (.reject(status: 410, reason: rule.reason ?? "ExpiredToken", timestamp: rule.timestamp ?? startMillis), delay)
            case .otherEnvironment:
                return (.reject(status: 400, reason: "BadDeviceToken", timestamp: nil), delay)
            case .otherTopic:
                return (.reject(status: 400, reason: "DeviceTokenNotForTopic", timestamp: nil), delay)
            case .error:
                return (.reject(status: rule.status ?? 500, reason: rule.reason ?? "InternalServerError", timestamp: nil), delay)
            case .failFirst:
                let seen = (attempts[index]?[token] ?? 0) + 1
                attempts[index, default: [:]][token] = seen
                if seen <= (rule.count ?? 0) {
                    return (.reject(status: rule.status ?? 503, reason: rule.reason ?? "ServiceUnavailable", timestamp: nil), delay)
                }
            case .throttle:
                let now = monotonicNanos()
                let window = UInt64(max(0, (rule.windowSeconds ?? 60) * 1e9))
                var entry = windows[index]?[token] ?? (start: now, count: 0)
                if now &- entry.start >= window { entry = (start: now, count: 0) }
                entry.count += 1
                windows[index, default: [:]][token] = entry
                if entry.count > (rule.limit ?? 0) {
                    return (.reject(status: 429, reason: rule.reason ?? "TooManyRequests", timestamp: nil), delay)
                }
            case .refuseStream:
                return (.refuseStream, delay)
            case .silence:
                return (.silence, delay)
            case .drop:
                return (.drop, delay)
            case .goaway:
                return (.goaway(reason: rule.reason ?? "Shutdown"), delay)
            }
        }
        return (.accept, delay)
    }
}

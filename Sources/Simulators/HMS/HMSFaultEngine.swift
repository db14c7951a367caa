import Reactor

/// What a Push Kit rule compares with: the app of the path, the request's tokens, its topic.
struct HMSSubject {
    var app: String
    var tokens: [String]
    var topic: String?
}

extension MockHMSFaultScript: FaultScript {}

extension MockHMSRule: ScriptedRule {
    func matches(_ subject: HMSSubject) -> Bool {
        if let app, app != subject.app { return false }
        if let token, !subject.tokens.contains(token) { return false }
        if let tokenPrefix, !subject.tokens.contains(where: { UTF8Matching.hasPrefix($0, tokenPrefix) }) { return false }
        if let topic, topic != subject.topic { return false }
        return true
    }

    func effect(startMillis: Int64) -> RuleEffect<HMSResult> {
        switch fate {
        case .accept: return .verdict(.accept)
        case .delay: return .delay
        case .error: return .verdict(.answer(.scripted(status: status, code: code, message: message, retryAfter: retryAfterSeconds)))
        case .flowControl: return .verdict(.answer(.flowControl(retryAfter: retryAfterSeconds)))
        case .tokenExpired: return .verdict(.answer(.tokenExpired))
        case .failFirst:
            return .failFirst(count: count ?? 0, answer: .scripted(status: status ?? 503, code: code, message: message, retryAfter: retryAfterSeconds))
        case .throttle: return .throttle(limit: limit ?? 0, windowSeconds: windowSeconds ?? 1)
        case .silence: return .verdict(.connection(.silence))
        case .drop: return .verdict(.connection(.drop))
        case .goaway: return .verdict(.connection(.goaway(reason: nil)))
        }
    }

    func throttled(retryAfter: Int) -> HMSResult { .flowControl(retryAfter: retryAfterSeconds) }
}

/// The Push Kit simulator's fault engine: the shared one over `MockHMSFaultScript`, then the per-app quota.
/// Loop-confined.
final class HMSFaultEngine {
    private let rules: ScriptedFaults<MockHMSFaultScript>
    private var appWindows: [String: CountingWindow] = [:]
    private var tokenRequests = 0

    var script: MockHMSFaultScript { rules.script }

    init(script: MockHMSFaultScript, defaultSeed: UInt64) {
        rules = ScriptedFaults(script: script, defaultSeed: defaultSeed)
    }

    func replace(_ newScript: MockHMSFaultScript, defaultSeed: UInt64) {
        rules.replace(newScript, defaultSeed: defaultSeed)
        appWindows.removeAll()
        tokenRequests = 0
    }

    /// The rules, then the app's quota, for one send. Returns the verdict (`overQuota` when the quota refused
    /// it) and the latency to add.
    func decide(_ subject: HMSSubject) -> (verdict: FaultVerdict<HMSResult>, overQuota: Bool, delay: Int) {
        let key = subject.tokens.first ?? subject.topic.map { "/topics/" + $0 } ?? ""
        let (verdict, delay) = rules.evaluate(key: key, subject)
        if let verdict, !isAccept(verdict) { return (verdict, false, delay) }
        guard let quota = script.appQuota else { return (.accept, false, delay) }
        // A send spends its cost whole or not at all (a refused send is not counted).
        let cost = quota.perToken == true ? max(1, subject.tokens.count) : 1
        let now = monotonicNanos(), length = UInt64(quota.windowSeconds * 1e9)
        var window = appWindows[subject.app] ?? CountingWindow(start: now, count: 0)
        if now &- window.start >= length { window = CountingWindow(start: now, count: 0) }
        if window.count + cost > quota.limit {
            appWindows[subject.app] = window
            return (.answer(.flowControl()), true, delay)  // no Retry-After: Huawei sends none
        }
        window.count += cost
        appWindows[subject.app] = window
        return (.accept, false, delay)
    }

    private func isAccept(_ verdict: FaultVerdict<HMSResult>) -> Bool {
        if case .accept = verdict { return true }
        return false
    }

    /// True when this token request is one of the script's `tokenFailFirst`.
    func tokenRequestFails() -> Bool {
        tokenRequests += 1
        return tokenRequests <= (script.tokenFailFirst ?? 0)
    }
}

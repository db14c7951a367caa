import Reactor

extension MockHMSRule: SendAPIRule {
    static var defaultThrottleWindow: Double { 1 }

    func matches(_ subject: SendSubject) -> Bool {
        if let app, app != subject.target { return false }
        if let token, !subject.tokens.contains(token) { return false }
        if let tokenPrefix, !subject.tokens.contains(where: { UTF8Matching.hasPrefix($0, tokenPrefix) }) { return false }
        if let topic, topic != subject.topic { return false }
        return true
    }

    /// `status` with the rule's `code` and `message` (else Huawei's for the status).
    func scriptedError(status: Int) -> HMSResult { .scripted(status: status, code: code, message: message, retryAfter: retryAfterSeconds) }

    func answer(_ own: MockHMSAnswer) -> HMSResult {
        switch own {
        case .flowControl: .flowControl(retryAfter: retryAfterSeconds)
        case .tokenExpired: .tokenExpired
        }
    }

    func throttled(retryAfter: Int) -> HMSResult { .flowControl(retryAfter: retryAfterSeconds) }

    func check(_ index: Int) throws {
        if let code, code.utf8.count != 8 || !code.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            throw SimulatorError.configuration("rules[\(index)].code must be Huawei's eight digits (81000001)")
        }
    }
}

extension MockHMSDeviceState: SendAPIFaults {
    typealias Quota = HMSQuota

    func check() throws {
        if let quota = appQuota {
            if quota.limit < 0 { throw SimulatorError.configuration("appQuota.limit must be 0 or more") }
            if !(quota.windowSeconds > 0) { throw SimulatorError.configuration("appQuota.windowSeconds must be above 0") }
        }
    }
}

/// Push Kit's per-app flow control. Loop-confined, inside the fault engine.
struct HMSQuota: SendAPIQuota {
    private var appWindows: [String: CountingWindow] = [:]

    /// A send spends its cost whole or not at all (a refused send is not counted).
    mutating func spend(_ subject: SendSubject, _ state: MockHMSDeviceState) -> HMSResult? {
        guard let quota = state.appQuota else { return nil }
        let cost = quota.perToken == true ? max(1, subject.tokens.count) : 1
        let now = monotonicNanos(), length = UInt64(quota.windowSeconds * 1e9)
        var window = appWindows[subject.target] ?? CountingWindow(start: now, count: 0)
        if now &- window.start >= length { window = CountingWindow(start: now, count: 0) }
        if window.count + cost > quota.limit {
            appWindows[subject.target] = window
            return .flowControl()  // no Retry-After: Huawei sends none
        }
        window.count += cost
        appWindows[subject.target] = window
        return nil
    }
}

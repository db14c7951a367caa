import Reactor

extension MockFCMRule: SendAPIRule {
    static var defaultThrottleWindow: Double { 60 }

    /// FCM tokens are case-sensitive, so they compare exactly (unlike APNs' hexadecimal ones).
    func matches(_ subject: SendSubject) -> Bool {
        if let token, token != subject.tokens.first { return false }
        if let tokenPrefix, !(subject.tokens.first.map { UTF8Matching.hasPrefix($0, tokenPrefix) } ?? false) { return false }
        if let tokenSuffix, !(subject.tokens.first.map { UTF8Matching.hasSuffix($0, tokenSuffix) } ?? false) { return false }
        if let topic, topic != subject.topic { return false }
        if let project, project != subject.target { return false }
        return true
    }

    func answer(_ own: MockFCMAnswer) -> FCMError {
        switch own {
        case .unregistered: .fcm(404, "UNREGISTERED", message: message)
        case .invalidToken: .invalidToken
        case .senderIdMismatch: .fcm(403, "SENDER_ID_MISMATCH", message: message)
        case .thirdPartyAuth: .fcm(401, "THIRD_PARTY_AUTH_ERROR", message: message)
        case .unauthenticated: .unauthenticated(message)
        case .quotaExceeded: .fcm(429, "QUOTA_EXCEEDED", message: message, retryAfter: retryAfterSeconds ?? 60)
        }
    }

    func throttled(retryAfter: Int) -> FCMError {
        .fcm(429, "QUOTA_EXCEEDED", message: message, retryAfter: retryAfterSeconds ?? retryAfter)
    }

    func check(_ index: Int) throws {
        if let seconds = retryAfterSeconds, seconds < 0 { throw SimulatorError.configuration("rules[\(index)].retryAfterSeconds must be 0 or more") }
    }

    /// `status` with the rule's `errorCode` (else the one FCM pairs with the status).
    func scriptedError(status: Int) -> FCMError {
        .fcm(status, errorCode ?? FCMError.errorCode(for: status), message: message, retryAfter: retryAfterSeconds)
    }
}

extension MockFCMQuotas: SendAPIFaults {
    typealias Quota = FCMQuota

    func check() throws {
        for (name, value) in [("projectQuotaPerMinute", projectQuotaPerMinute), ("deviceQuotaPerMinute", deviceQuotaPerMinute),
                              ("deviceQuotaPerHour", deviceQuotaPerHour)] {
            if let value, value < 0 { throw SimulatorError.configuration("\(name) must be 0 or more") }
        }
        for (name, value) in [("quotaMinuteMs", quotaMinuteMs), ("quotaHourMs", quotaHourMs)] {
            if let value, value < 1 { throw SimulatorError.configuration("\(name) must be 1 or more") }
        }
    }
}

/// FCM's quotas: per project per minute (always), per device per minute and per hour (when `deviceQuota`).
/// Loop-confined, inside the fault engine.
struct FCMQuota: SendAPIQuota {
    private var projectWindows: [String: CountingWindow] = [:]
    private var deviceMinute: [String: CountingWindow] = [:]
    private var deviceHour: [String: CountingWindow] = [:]

    mutating func spend(_ subject: SendSubject, _ quotas: MockFCMQuotas) -> FCMError? {
        let project = subject.target, token = subject.tokens.first
        let now = monotonicNanos()
        let projectLimit = quotas.projectQuotaPerMinute ?? MockFCMQuotas.defaultProjectQuotaPerMinute
        let minuteLength = UInt64(quotas.quotaMinuteMs ?? 60_000) * 1_000_000
        let hourLength = UInt64(quotas.quotaHourMs ?? 3_600_000) * 1_000_000
        if projectLimit > 0 {
            var window = projectWindows[project]
            let over = CountingWindow.spend(&window, limit: projectLimit, length: minuteLength, now: now)
            projectWindows[project] = window
            if let over {
                return .fcm(429, "QUOTA_EXCEEDED", message: "Quota exceeded for quota metric 'Send requests' and limit 'Send requests per minute' of service 'fcm.googleapis.com' for consumer 'project_number:\(project)'.", retryAfter: over)
            }
        }
        if quotas.deviceQuota == true, let token {
            var minute = deviceMinute[token]
            var hour = deviceHour[token]
            let overMinute = CountingWindow.spend(&minute, limit: quotas.deviceQuotaPerMinute ?? MockFCMQuotas.defaultDeviceQuotaPerMinute,
                                                  length: minuteLength, now: now)
            let overHour = CountingWindow.spend(&hour, limit: quotas.deviceQuotaPerHour ?? MockFCMQuotas.defaultDeviceQuotaPerHour,
                                                length: hourLength, now: now)
            let refused = overMinute != nil || overHour != nil
            if refused {
                // A refused send counts in neither window: take it back from the one that did count it.
                if overMinute == nil { minute?.count -= 1 }
                if overHour == nil { hour?.count -= 1 }
            }
            deviceMinute[token] = minute
            deviceHour[token] = hour
            if refused {
                return .fcm(429, "QUOTA_EXCEEDED", message: "Device message rate exceeded.", retryAfter: max(overMinute ?? 0, overHour ?? 0))
            }
        }
        return nil
    }
}

import Reactor

/// An FCM error a fault rule or a quota answers; `overQuota`: refused by the project or device quota (not a
/// scripted 429), counted apart in the stats.
struct FCMRejection {
    var error: FCMError
    var overQuota = false
}

/// What the FCM simulator does with a send that passed authentication and validation.
typealias FCMVerdict = FaultVerdict<FCMRejection>

extension MockFCMFaultScript: FaultScript {}

extension MockFCMRule: ScriptedRule {
    func matches(_ subject: (token: String?, topic: String?, project: String)) -> Bool {
        matches(token: subject.token, topic: subject.topic, project: subject.project)
    }

    func effect(startMillis: Int64) -> RuleEffect<FCMRejection> {
        func answer(_ error: FCMError) -> RuleEffect<FCMRejection> { .verdict(.answer(FCMRejection(error: error))) }
        switch fate {
        case .accept: return .verdict(.accept)
        case .delay: return .delay
        case .unregistered: return answer(.fcm(404, "UNREGISTERED", message: message))
        case .invalidToken: return answer(.invalidToken)
        case .senderIdMismatch: return answer(.fcm(403, "SENDER_ID_MISMATCH", message: message))
        case .thirdPartyAuth: return answer(.fcm(401, "THIRD_PARTY_AUTH_ERROR", message: message))
        case .unauthenticated: return answer(.unauthenticated(message))
        case .quotaExceeded: return answer(.fcm(429, "QUOTA_EXCEEDED", message: message, retryAfter: retryAfterSeconds ?? 60))
        case .error: return answer(scriptedError(status: status ?? 500))
        case .failFirst: return .failFirst(count: count ?? 0, answer: FCMRejection(error: scriptedError(status: status ?? 503)))
        case .throttle: return .throttle(limit: limit ?? 0, windowSeconds: windowSeconds ?? 60)
        case .silence: return .verdict(.connection(.silence))
        case .drop: return .verdict(.connection(.drop))
        case .goaway: return .verdict(.connection(.goaway(reason: nil)))
        }
    }

    func throttled(retryAfter: Int) -> FCMRejection {
        FCMRejection(error: .fcm(429, "QUOTA_EXCEEDED", message: message, retryAfter: retryAfterSeconds ?? retryAfter))
    }

    /// `status` with the rule's `errorCode` (else the one FCM pairs with the status).
    private func scriptedError(status: Int) -> FCMError {
        .fcm(status, errorCode ?? FCMError.errorCode(for: status), message: message, retryAfter: retryAfterSeconds)
    }
}

/// The FCM simulator's fault engine: the shared one over `MockFCMFaultScript`, then FCM's quotas (per project,
/// and per device when the script asks). Confined to the server's loop thread: no locks on the request path.
final class FCMFaultEngine {
    private let rules: ScriptedFaults<MockFCMFaultScript>
    private var projectWindows: [String: CountingWindow] = [:]
    private var deviceMinute: [String: CountingWindow] = [:]
    private var deviceHour: [String: CountingWindow] = [:]
    private var tokenRequests = 0

    var script: MockFCMFaultScript { rules.script }

    init(script: MockFCMFaultScript, defaultSeed: UInt64) {
        rules = ScriptedFaults(script: script, defaultSeed: defaultSeed)
    }

    func replace(_ newScript: MockFCMFaultScript, defaultSeed: UInt64) {
        rules.replace(newScript, defaultSeed: defaultSeed)
        projectWindows.removeAll()
        deviceMinute.removeAll()
        deviceHour.removeAll()
        tokenRequests = 0
    }

    /// Evaluates the rules, then the quotas, for one send. Returns the verdict and the latency to add before answering.
    func decide(token: String?, topic: String?, project: String) -> (FCMVerdict, Int) {
        let key = token ?? topic.map { "/topics/" + $0 } ?? ""
        let (verdict, delay) = rules.evaluate(key: key, (token: token, topic: topic, project: project))
        switch verdict {
        case nil, .accept?: return (quota(token: token, project: project), delay)
        case let decided?: return (decided, delay)
        }
    }

    /// True when this token request is one of the script's `tokenFailFirst`.
    func tokenRequestFails() -> Bool {
        tokenRequests += 1
        return tokenRequests <= (script.tokenFailFirst ?? 0)
    }

    /// FCM's quotas: per project per minute (always), per device per minute and per hour (when `deviceQuota`).
    private func quota(token: String?, project: String) -> FCMVerdict {
        let script = script
        let now = monotonicNanos()
        let projectLimit = script.projectQuotaPerMinute ?? MockFCMFaultScript.defaultProjectQuotaPerMinute
        let minuteLength = UInt64(script.quotaMinuteMs ?? 60_000) * 1_000_000
        let hourLength = UInt64(script.quotaHourMs ?? 3_600_000) * 1_000_000
        if projectLimit > 0 {
            var window = projectWindows[project]
            let over = CountingWindow.spend(&window, limit: projectLimit, length: minuteLength, now: now)
            projectWindows[project] = window
            if let over {
                return .answer(FCMRejection(error: .fcm(429, "QUOTA_EXCEEDED", message: "Quota exceeded for quota metric 'Send requests' and limit 'Send requests per minute' of service 'fcm.googleapis.com' for consumer 'project_number:\(project)'.", retryAfter: over), overQuota: true))
            }
        }
        if script.deviceQuota == true, let token {
            var minute = deviceMinute[token]
            var hour = deviceHour[token]
            let overMinute = CountingWindow.spend(&minute, limit: script.deviceQuotaPerMinute ?? MockFCMFaultScript.defaultDeviceQuotaPerMinute,
                                                  length: minuteLength, now: now)
            let overHour = CountingWindow.spend(&hour, limit: script.deviceQuotaPerHour ?? MockFCMFaultScript.defaultDeviceQuotaPerHour,
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
                return .answer(FCMRejection(error: .fcm(429, "QUOTA_EXCEEDED", message: "Device message rate exceeded.", retryAfter: max(overMinute ?? 0, overHour ?? 0)), overQuota: true))
            }
        }
        return .accept
    }
}

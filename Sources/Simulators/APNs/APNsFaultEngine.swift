/// An APNs error answer a fault rule gives: status, reason and (for 410) the timestamp.
struct ScriptedRejection {
    let status: Int
    let reason: String
    let timestamp: Int64?
}

/// The APNs simulator's fault engine: the shared one, over `MockFaultScript`.
typealias APNsFaultEngine = ScriptedFaults<MockAPNsFaultFields>

extension ScriptedFaults where Vocabulary == MockAPNsFaultFields {
    /// The script's verdict for a request that passed Apple's checks (`token`: the device token or channel ID)
    /// and the latency to add before answering.
    func decide(token: String, topic: String) -> (FaultVerdict<ScriptedRejection>, Int) {
        if script.rules.isEmpty { return (.accept, script.latencyMs.map(latency) ?? 0) }
        let token = token.lowercased()
        let (verdict, delay) = evaluate(key: token, (token: token, topic: topic))
        return (verdict ?? .accept, delay)
    }
}

extension MockFaultRule: ScriptedRule {
    func matches(_ subject: (token: String, topic: String)) -> Bool { matches(token: subject.token, topic: subject.topic) }

    func effect(startMillis: Int64) -> RuleEffect<ScriptedRejection> {
        func answer(_ status: Int, _ reason: String, _ timestamp: Int64? = nil) -> RuleEffect<ScriptedRejection> {
            .verdict(.answer(ScriptedRejection(status: status, reason: reason, timestamp: timestamp)))
        }
        switch fate {
        case .accept: return .verdict(.accept)
        case .delay: return .delay
        case .unregistered: return answer(410, reason ?? "Unregistered", timestamp ?? startMillis)
        case .expiredToken: return answer(410, reason ?? "ExpiredToken", timestamp ?? startMillis)
        case .otherEnvironment: return answer(400, "BadDeviceToken")
        case .otherTopic: return answer(400, "DeviceTokenNotForTopic")
        case .error: return answer(status ?? 500, reason ?? "InternalServerError")
        case .failFirst:
            return .failFirst(count: count ?? 0, answer: ScriptedRejection(status: status ?? 503, reason: reason ?? "ServiceUnavailable", timestamp: nil))
        case .throttle: return .throttle(limit: limit ?? 0, windowSeconds: windowSeconds ?? 60)
        case .refuseStream: return .verdict(.connection(.refuseStream))
        case .silence: return .verdict(.connection(.silence))
        case .drop: return .verdict(.connection(.drop))
        case .goaway: return .verdict(.connection(.goaway(reason: reason ?? "Shutdown")))
        }
    }

    func throttled(retryAfter: Int) -> ScriptedRejection {
        ScriptedRejection(status: 429, reason: reason ?? "TooManyRequests", timestamp: nil)
    }
}

import PushCore

/// What Herald does with a job after one provider answer, as a provider's table test names it: the rows of
/// `everyHMSAnswerLandsInItsClass` and `everyHarmonyAnswerLandsInItsClass` (one shape, so the two tables read alike).
public enum OutcomeClass: Equatable, Sendable {
    case delivered, drop(String), retry(ms: Int64, reason: String), slowed(ms: Int64, reason: String), resendWithNewToken, park(String), fail(String)

    /// The class of `decision`, made by `policy` from `result`; nil for a decision no such table names.
    public static func of(_ decision: Decision, _ result: DeliveryResult, policy: OutcomePolicy) -> OutcomeClass? {
        switch decision {
        case .delivered: .delivered
        case .dropToken(_, let r): .drop(r)
        case .retry(let ms, let r): policy.slowDownMilliseconds(result) != nil ? .slowed(ms: ms, reason: r) : .retry(ms: ms, reason: r)
        case .resendNow(false, true): .resendWithNewToken
        case .deferForConfiguration(let r): .park(r)
        case .fail(let r): .fail(r)
        default: nil
        }
    }
}

import PushCore

/// The echo service's answers in the classes every provider's fall in: 200 delivered, 410 token dropped, 429
/// throttled, 5xx retried, anything else (400) failed.
extension EchoResponse: ProviderAnswer {
    public var reasonName: String { grantRefused.map { "KeyRefused: " + $0 } ?? "HTTP \(status)" }

    public var answerClass: AnswerClass {
        if grantRefused != nil { return .deferForConfiguration(reason: reasonName) }
        switch status {
        case 200: return .delivered
        case 410: return .dropToken(invalidSince: nil, reason: reasonName)
        case 429: return .throttled(reason: reasonName, retryAfterMilliseconds: 1000, slowsDestination: false)
        case 500...599: return .serverError(reason: reasonName, retryAfterMilliseconds: 0)
        default: return .fail(reason: reasonName)
        }
    }

    public var connectionAdvice: ConnectionAdvice { .keep }
    public var metricsReason: String { status == 200 ? "" : reasonName }
    public var resultFields: AnswerFields { AnswerFields() }
}

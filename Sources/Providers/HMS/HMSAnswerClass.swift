import PushCore

/// Push Kit's answers in the classes every provider's fall in (docs/hms.md has the table):
/// - 200 `80000000`: delivered. `80100000` (partial success): delivered, unless the job's token is the one that
///   failed (no success counted, or illegal tokens named without counts): drop the token. A many-token job reads
///   the illegal tokens per token (`resultFields.goneTokens`, `CompletionBuilder`).
/// - `80300007` (all tokens invalid): drop the token.
/// - 401, `80200001`/`80200003` (access token refused or expired): resend once with a fresh token; a 401 on a token
///   fetched after a 401 parks the app. A refused client-credentials grant (no request sent) parks it too.
/// - 503 (Push Kit's flow control) and 429: throttled, and the whole app slowed down.
/// - 5xx, `81000001` (internal error), `80600003` (Push Kit could not reach its OAuth service): retry with back-off.
/// - Anything else (`80100001` parameters, `80100003` structure, `80300008` size...): fail with `<code> <msg>`.
extension HMSResponse: ProviderAnswer {
    public var answerClass: AnswerClass {
        if let refusal = grantRefused { return .deferForConfiguration(reason: "TokenRefused: " + refusal) }
        // The common answer, before `reasonName` is joined for the others.
        if status == 200 && code == "80000000" { return .delivered }
        let name = reasonName
        if refusesAccessToken {
            return afterTokenRefresh ? .deferForConfiguration(reason: name + ": access token refused after a refresh")
                                     : .resendNow(freshConnection: false, refreshToken: true)
        }
        // Flow control is the status's, whatever code the body carries.
        if status == 503 || status == 429 { return .throttled(reason: name, retryAfterMilliseconds: 0, slowsDestination: true) }
        switch code {
        case "80100000"? where status == 200:
            return successCount == 0 || (successCount == nil && !illegalTokens.isEmpty) ? .dropToken(invalidSince: nil, reason: name) : .delivered
        case "80300007"?:
            return .dropToken(invalidSince: nil, reason: name)
        case "81000001"?, "80600003"?:
            return .serverError(reason: name, retryAfterMilliseconds: 0)
        default:
            if status >= 500 { return .serverError(reason: name, retryAfterMilliseconds: 0) }
            return .fail(reason: name)
        }
    }

    /// The access token went stale or was refused: the sender drops it so the resend fetches another.
    public var refusesAccessToken: Bool { status == 401 || code == "80200001" || code == "80200003" }

    /// Push Kit binds nothing to a connection.
    public var connectionAdvice: ConnectionAdvice { .keep }

    /// Push Kit's result code as the `reason` label (HTTP status for a body without one); "" on success.
    public var metricsReason: String {
        if status == 200 && code == "80000000" { return "" }
        return code ?? "HTTP \(status)"
    }

    /// The result codes Push Kit documents for `messages:send`, and the statuses it answers without one: the
    /// `reason` label values besides `other`.
    public static let metricsReasons = ["80100000", "80100001", "80100002", "80100003", "80100004", "80100017", "80200001",
                                        "80200003", "80300002", "80300007", "80300008", "80300010", "80600003", "81000001",
                                        "HTTP 401", "HTTP 429", "HTTP 500", "HTTP 502", "HTTP 503"]

    /// Push Kit's `requestId`, in the delivered entry's `fcm_name` as Web Push's message id is: what Huawei's
    /// support asks for about one send. A partial success's illegal tokens: a many-token job drops those.
    public var resultFields: AnswerFields { AnswerFields(messageName: requestID, goneTokens: illegalTokens) }
}

extension DeliveryResult {
    /// A Push Kit answer (tests and tools build results this way).
    public static func hms(_ response: HMSResponse) -> DeliveryResult { .answer(response) }

    /// The Push Kit answer, nil for a transport failure or another provider's answer.
    public var hms: HMSResponse? { answer(as: HMSResponse.self) }
}

import PushCore

/// FCM HTTP v1's answers in the same classes as Apple's (docs/results.md has the table):
/// - 5xx (INTERNAL, UNAVAILABLE): retry with the 5xx back-off, or `Retry-After` when longer.
/// - 429 (QUOTA_EXCEEDED / RESOURCE_EXHAUSTED): retry after `Retry-After` or the 429 back-off, whichever is
///   longer; the core also slows the whole project down.
/// - UNREGISTERED, SENDER_ID_MISMATCH, and INVALID_ARGUMENT naming the token: drop the token.
/// - THIRD_PARTY_AUTH_ERROR (the APNs key or web-push key in Firebase): a configuration error, park the app.
/// - 401 without an FCM code: the access token was refused. Resend once with a fresh token; a 401 on a token
///   fetched after a 401 parks the app.
/// - A refused OAuth grant (no request sent): park the app like a broken APNs key.
/// - Anything else: fail with FCM's error code (else the RPC status, else `HTTP <status>`).
extension FCMResponse: ProviderAnswer {
    public var answerClass: AnswerClass {
        if let refusal = grantRefused { return .deferForConfiguration(reason: "TokenRefused: " + refusal) }
        if status == 200 { return .delivered }
        let name = reasonName
        let retryAfter = (retryAfterSeconds ?? 0) * 1000
        switch errorCode {
        case "UNREGISTERED"?, "SENDER_ID_MISMATCH"?:
            return .dropToken(invalidSince: nil, reason: name)
        case "INVALID_ARGUMENT"? where isTokenViolation, nil where status == 400 && isTokenViolation:
            return .dropToken(invalidSince: nil, reason: "INVALID_ARGUMENT")
        case "THIRD_PARTY_AUTH_ERROR"?:
            return .deferForConfiguration(reason: name)
        case "QUOTA_EXCEEDED"?:
            return .throttled(reason: name, retryAfterMilliseconds: retryAfter, slowsDestination: true)
        case "UNAVAILABLE"?, "INTERNAL"?:
            return .serverError(reason: name, retryAfterMilliseconds: retryAfter)
        default:
            if status == 401 && errorCode == nil {
                return afterTokenRefresh ? .deferForConfiguration(reason: "UNAUTHENTICATED: access token refused after a refresh")
                                         : .resendNow(freshConnection: false, refreshToken: true)
            }
            if status == 429 { return .throttled(reason: name, retryAfterMilliseconds: retryAfter, slowsDestination: true) }
            if status >= 500 { return .serverError(reason: name, retryAfterMilliseconds: retryAfter) }
            return .fail(reason: name)
        }
    }

    /// FCM answers INVALID_ARGUMENT for a bad payload too: only a violation of `message.token` (or FCM's
    /// "not a valid FCM registration token" text) says the token is at fault.
    private var isTokenViolation: Bool {
        if fieldViolations.contains("message.token") { return true }
        return fieldViolations.isEmpty && (message ?? "").contains("registration token")
    }

    /// FCM binds nothing to a connection.
    public var connectionAdvice: ConnectionAdvice { .keep }

    /// FCM's error code (else the RPC status) as the `reason` label; one outside `metricsReasons` counts as `other`.
    public var metricsReason: String { status == 200 ? "" : errorCode ?? rpcStatus ?? "other" }

    /// The reasons FCM documents (its v1 `ErrorCode`s, then the RPC statuses it answers without one): the
    /// `reason` label values its answers can have besides `other`.
    public static let metricsReasons = ["UNSPECIFIED_ERROR", "INVALID_ARGUMENT", "UNREGISTERED", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED",
                                        "UNAVAILABLE", "INTERNAL", "THIRD_PARTY_AUTH_ERROR", "UNAUTHENTICATED", "PERMISSION_DENIED",
                                        "NOT_FOUND", "RESOURCE_EXHAUSTED"]

    public var resultFields: AnswerFields { AnswerFields(messageName: name) }
}

extension DeliveryResult {
    /// An FCM answer (tests and tools build results this way).
    public static func fcm(_ response: FCMResponse) -> DeliveryResult { .answer(response) }

    /// The FCM answer, nil for a transport failure or another provider's answer.
    public var fcm: FCMResponse? { answer(as: FCMResponse.self) }
}

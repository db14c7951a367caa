import PushCore

/// Expo's tickets in the classes every provider's answers fall in (docs/expo.md has the table):
/// - 200, ticket `ok`: taken; the job waits for its receipt (`awaitReceipt`, the ticket id as the message id).
/// - ticket `DeviceNotRegistered`: drop the token. `MessageRateExceeded`: throttled, this token only.
/// - any other ticket error (`MessageTooBig`, `InvalidCredentials`, `MismatchSenderId`...): failed with its code.
/// - 429: throttled, and the whole app slowed down. 5xx, or a 200 without this message's ticket: retry.
/// - 401/403 (the access token refused): resend once; refused again parks the app (the file is read again when the
///   pause ends).
/// - any other status (a 400 with the request's `errors`): failed with Expo's code.
extension ExpoResponse: ProviderAnswer {
    public var answerClass: AnswerClass {
        if status == 200, ticketStatus == "ok", let ticketID {
            return .awaitReceipt(ticket: ticketID, afterMilliseconds: receiptDelayMilliseconds)
        }
        let name = reasonName
        if refusesAccessToken {
            return afterTokenRefresh ? .deferForConfiguration(reason: name + ": access token refused twice")
                                     : .resendNow(freshConnection: false, refreshToken: true)
        }
        if status == 429 { return .throttled(reason: name, retryAfterMilliseconds: 0, slowsDestination: true) }
        if status >= 500 { return .serverError(reason: name, retryAfterMilliseconds: 0) }
        if status == 200 {
            switch (ticketStatus, error) {
            case ("error"?, "DeviceNotRegistered"?): return .dropToken(invalidSince: nil, reason: name)
            case ("error"?, "MessageRateExceeded"?): return .throttled(reason: name, retryAfterMilliseconds: 0, slowsDestination: false)
            case ("error"?, _): return .fail(reason: name)
            default: return .serverError(reason: "NoTicket: the answer held no ticket for this message", retryAfterMilliseconds: 0)
            }
        }
        return .fail(reason: name)
    }

    /// The access token was refused: the sender drops it, so the resend is marked as after a refusal.
    public var refusesAccessToken: Bool { status == 401 || status == 403 }

    /// Expo binds nothing to a connection.
    public var connectionAdvice: ConnectionAdvice { .keep }

    /// Expo's error code (the ticket's, else the request's), else `HTTP <status>`.
    public var reasonName: String { error.map { $0.isEmpty ? "HTTP \(status)" : $0 } ?? "HTTP \(status)" }

    /// "" for an `ok` ticket; else the reason's code.
    public var metricsReason: String { status == 200 && ticketStatus == "ok" ? "" : reasonName }

    /// The ticket errors and statuses Expo documents: the `reason` label values besides `other`.
    public static let metricsReasons = ["DeviceNotRegistered", "MessageTooBig", "MessageRateExceeded", "MismatchSenderId", "InvalidCredentials",
                                        "PUSH_TOO_MANY_EXPERIENCE_IDS", "PUSH_TOO_MANY_NOTIFICATIONS", "PUSH_TOO_MANY_RECEIPTS", "VALIDATION_ERROR",
                                        "HTTP 400", "HTTP 401", "HTTP 403", "HTTP 429", "HTTP 500", "HTTP 502", "HTTP 503"]

    /// The ticket id, in the neutral `message_id` (and `fcm_name` on delivery, which never comes from a ticket).
    public var resultFields: AnswerFields { AnswerFields(messageName: ticketID) }
}

extension DeliveryResult {
    /// An Expo answer (tests and tools build results this way).
    public static func expo(_ response: ExpoResponse) -> DeliveryResult { .answer(response) }

    /// The Expo answer, nil for a transport failure or another provider's answer.
    public var expo: ExpoResponse? { answer(as: ExpoResponse.self) }
}

import PushCore

/// Web Push answers in the classes every provider shares (docs/results.md has the table):
/// - 201 Created: delivered; the message's `Location` is recorded.
/// - 404 and 410: the subscription is gone (expired or unsubscribed): drop it.
/// - 413: the payload is too large for this service: fail (it will not shrink on a retry).
/// - 429: throttled, after `Retry-After` or the 429 back-off; only this message waits, since one app sends to
///   many push services and one's limit must not hold the others.
/// - 5xx: retry with the 5xx back-off, or `Retry-After` when longer.
/// - A refused VAPID credential (any 401; a 400 or 403 naming the JWT or the key): park the app like a
///   broken APNs key, until its key is read again.
/// - Anything else: fail with the service's reason.
extension WebPushResponse: ProviderAnswer {
    public var answerClass: AnswerClass {
        let retryAfter = (retryAfterSeconds ?? 0) * 1000
        switch status {
        case 200, 201, 202: return .delivered
        case 404, 410: return .dropToken(invalidSince: nil, reason: status == 410 ? "Gone" : "NotFound")
        case 413: return .fail(reason: "PayloadTooLarge")
        case 429: return .throttled(reason: reasonName, retryAfterMilliseconds: retryAfter, slowsDestination: false)
        case 500...599: return .serverError(reason: reasonName, retryAfterMilliseconds: retryAfter)
        default:
            if refusesVAPID { return .deferForConfiguration(reason: "VAPIDRefused: " + reasonName) }
            return .fail(reason: reasonName)
        }
    }

    /// A push service binds nothing to a connection.
    public var connectionAdvice: ConnectionAdvice { .keep }

    /// The services' reasons are not APNs reasons: counted by status, under the catch-all reason.
    public var metricsReason: String { (200...299).contains(status) ? "" : "other" }

    /// The message id (from `Location`) in the result's message field.
    public var resultFields: AnswerFields { AnswerFields(messageName: messageID) }
}

extension DeliveryResult {
    /// The Web Push answer, nil for a transport failure or another provider's answer.
    public var webPush: WebPushResponse? { answer(as: WebPushResponse.self) }
}

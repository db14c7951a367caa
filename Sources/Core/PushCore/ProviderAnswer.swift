/// One provider's HTTP answer, as the neutral core reads it. Each provider's response type conforms in its own
/// module and holds its table from answers to `AnswerClass` (APNs: `APNsResponse`, FCM: `FCMResponse`); the core
/// turns a class into a `Decision` with the shared back-offs, attempt limits and expiry (`OutcomePolicy`).
public protocol ProviderAnswer: Sendable {
    /// The HTTP status; 0 when no request went out (a refused OAuth grant).
    var status: Int { get }
    /// The most specific name of the answer for results and logs: the provider's reason or error code, else
    /// `HTTP <status>`.
    var reasonName: String { get }
    /// The provider's table: which outcome class this answer falls in.
    var answerClass: AnswerClass { get }
    /// What the connection that carried it should do (retire it after APNs' ExpiredProviderToken...).
    var connectionAdvice: ConnectionAdvice { get }
    /// The label of `herald_push_responses_total`'s `reason`: "" for none; an unknown one counts as `other`.
    var metricsReason: String { get }
    /// What the result entry carries from the answer (the provider's ids).
    var resultFields: AnswerFields { get }
    func isEqual(to other: any ProviderAnswer) -> Bool
}

extension ProviderAnswer where Self: Equatable {
    public func isEqual(to other: any ProviderAnswer) -> Bool { (other as? Self) == self }
}

/// The classes every provider's answers fall into (docs/results.md has each provider's table). Delays that
/// depend on the attempt are the core's (`OutcomePolicy`), so every provider backs off alike.
public enum AnswerClass: Sendable, Equatable {
    case delivered
    /// The token is gone (`invalidSince`: ms since 1970, when the provider says).
    case dropToken(invalidSince: Int64?, reason: String)
    case dropChannel(reason: String)
    /// Send again at once (counts as an attempt): on a new connection, with a new credential token.
    case resendNow(freshConnection: Bool, refreshToken: Bool)
    /// The credential or the app's configuration is at fault: park the destination's jobs.
    case deferForConfiguration(reason: String)
    /// Throttled: retry after the 429 back-off or `retryAfterMilliseconds`, whichever is longer; with
    /// `slowsDestination` the whole destination is held back too (FCM's per-project quota).
    case throttled(reason: String, retryAfterMilliseconds: Int64, slowsDestination: Bool)
    /// The server failed: retry after the 5xx back-off or `retryAfterMilliseconds`, whichever is longer.
    case serverError(reason: String, retryAfterMilliseconds: Int64)
    case fail(reason: String)
    /// Taken, not yet delivered: the provider answered a ticket (`ticket`, its id) whose receipt, asked for
    /// `afterMilliseconds` later, decides the outcome (a provider with a second phase, `ReceiptPhase`).
    case awaitReceipt(ticket: String, afterMilliseconds: Int64)
}

/// The fields of a result entry that come from the provider's answer.
public struct AnswerFields: Sendable, Equatable {
    /// APNs' `apns-id` and `apns-unique-id`.
    public var apnsID: String?
    public var apnsUniqueID: String?
    /// The message's id from any other provider: FCM's message name, Web Push's `Location` id, Push Kit's
    /// `requestId` (on delivery also in the deprecated `fcm_name`).
    public var messageName: String?
    /// A many-token send's tokens the provider named as gone (Push Kit's `illegal_tokens`): dropped, the others
    /// delivered.
    public var goneTokens: [String]
    /// A many-token send's tokens the provider refused for a reason that is not the token's (Push Kit v3's
    /// `noPushTypeRight`...): failed with the answer's reason, kept, the others as the answer says.
    public var failedTokens: [String]

    /// The provider's id of the message, whichever provider answered: the result entry's `message_id`.
    @inline(__always)
    public var messageID: String? { apnsID ?? messageName }

    public init(apnsID: String? = nil, apnsUniqueID: String? = nil, messageName: String? = nil, goneTokens: [String] = [], failedTokens: [String] = []) {
        self.apnsID = apnsID
        self.apnsUniqueID = apnsUniqueID
        self.messageName = messageName
        self.goneTokens = goneTokens
        self.failedTokens = failedTokens
    }
}

/// A send that ended without an HTTP answer.
public enum TransportFailure: Sendable, Equatable {
    /// Certainly not processed by APNs: REFUSED_STREAM, a stream id above a GOAWAY's last-stream-id,
    /// or never written. Safe to resend.
    case notProcessed
    /// The connection was lost while the stream was open: APNs may or may not have delivered it.
    case outcomeUnknown
    /// No answer within the request deadline (also uncertain).
    case timedOut
    /// No connection could be made (DNS, TCP, TLS); nothing was sent.
    case connectionFailed(String)
}

/// What one attempt produced: a provider's HTTP answer, or no answer at all. The core reads an answer only
/// through `ProviderAnswer` (its class, status and names), so a new provider adds a type, not a case here.
public enum DeliveryResult: Sendable, Equatable {
    case answer(any ProviderAnswer)
    case transport(TransportFailure)

    /// The server answered (any status): proof that the destination is reachable.
    public var isAnswer: Bool {
        switch self {
        case .answer: true
        case .transport: false
        }
    }

    /// The provider's answer as its own type (`APNsResponse`, `FCMResponse`), nil for another or none.
    public func answer<Answer: ProviderAnswer>(as type: Answer.Type) -> Answer? {
        if case .answer(let a) = self { return a as? Answer }
        return nil
    }

    public static func == (a: DeliveryResult, b: DeliveryResult) -> Bool {
        switch (a, b) {
        case (.answer(let x), .answer(let y)): x.isEqual(to: y)
        case (.transport(let x), .transport(let y)): x == y
        default: false
        }
    }
}

/// What the worker does next with the job.
public enum Decision: Equatable, Sendable {
    case delivered
    /// Put the job in the retry schedule, due after the delay.
    case retry(afterMilliseconds: Int64, reason: String)
    /// Tell the producer to delete the token (`invalidSince`: 410's timestamp in ms); the job is finished.
    case dropToken(invalidSince: Int64?, reason: String)
    /// Tell the producer the broadcast channel is gone (ChannelNotRegistered: deleted, or never created in this
    /// environment); the job is finished.
    case dropChannel(reason: String)
    /// Send again at once (counts as an attempt): on a new connection when `freshConnection`, with a
    /// new provider token when `refreshToken` (ask the token cache via `serverSaidExpired` first).
    case resendNow(freshConnection: Bool, refreshToken: Bool)
    /// APNs certainly did not process it (refused stream, above a GOAWAY's last-stream-id, never written): send
    /// again at once on another connection, without counting an attempt.
    case resendUnprocessed
    /// Nothing was sent because the destination cannot be reached (DNS, TCP, TLS): not the job's fault. Keep it
    /// without counting an attempt and pause sending to that destination (back-off, one probe at a time).
    case unavailable(reason: String)
    /// The app's credentials or configuration are at fault, not the job: keep it, pause the app for
    /// `configurationPauseSeconds`, do not count an attempt.
    case deferForConfiguration(reason: String)
    /// Finished without delivery; `reason` is Apple's reason string, `Expired`, or `MaxAttempts:<last reason>`.
    case fail(reason: String)
    /// The provider gave a ticket: the job leaves the worker and waits in the receipts set for its receipt, which
    /// writes its terminal outcome (`ReceiptPhase`).
    case awaitReceipt(ticket: String, afterMilliseconds: Int64)

    /// Terminal decisions end the job.
    public var isTerminal: Bool {
        switch self {
        case .delivered, .dropToken, .dropChannel, .fail, .awaitReceipt: true
        case .retry, .resendNow, .resendUnprocessed, .unavailable, .deferForConfiguration: false
        }
    }
}

/// What the connection that carried the attempt should do, independent of the job.
public enum ConnectionAdvice: Sendable, Equatable {
    case keep
    /// Stop opening streams on it, let open ones finish, and open a replacement (Shutdown, IdleTimeout,
    /// ExpiredProviderToken, UnrelatedKeyIdInToken).
    case replace
}

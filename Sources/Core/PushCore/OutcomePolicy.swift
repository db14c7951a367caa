/// Turns one attempt's result into the next step for the job. Pure: time and randomness are passed in,
/// so every rule is testable.
///
/// The neutral part: transport failures, attempts, expiry, give-up and the back-offs. Each provider's table
/// from its answers to an `AnswerClass` sits with its response type (`APNsResponse`, `FCMResponse`).
///
/// Choices beyond the providers' tables (see docs/job-format.md):
/// - Resends count as attempts, so a job that keeps meeting dying connections ends after `maxAttempts`
///   (`MaxAttempts:<reason>`) instead of looping.
/// - `timedOut` is treated like a connection lost with the stream open: resent on a fresh connection.
///   It may duplicate a notification; losing one silently is judged worse, and a producer that cares sets
///   `collapse_id`, which makes the device show only one.
/// - Outages are never the job's fault: `connectionFailed` (nothing sent) is `unavailable` and a certainly
///   unprocessed send (`notProcessed`) is resent without counting an attempt, so a firewall change or a server
///   that processes nothing never turns good jobs into failures (the worker pauses the destination instead).
/// - A retry or resend whose due time is past a nonzero `apns-expiration` fails with `Expired`; 0 means
///   "send once, do not store" at Apple, not "expired", so it does not block retries.
public struct OutcomePolicy: Sendable {
    public let settings: RetrySettings
    private let random: @Sendable () -> Double

    /// - Parameter random: uniform in 0..<1, injectable for tests.
    public init(settings: RetrySettings = RetrySettings(), random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.settings = settings
        self.random = random
    }

    public func decide(_ result: DeliveryResult, attempt: Int, expiration: Int64?, nowSeconds: Int64) -> Decision {
        let raw = rawDecision(result, attempt: attempt)
        switch raw {
        case .delivered, .dropToken, .dropChannel, .fail, .awaitReceipt:
            return raw
        case .retry(let ms, let reason):
            if isExpired(expiration, at: nowSeconds * 1000 + ms) { return .fail(reason: "Expired") }
            if attempt >= settings.maxAttempts { return .fail(reason: "MaxAttempts:" + reason) }
            return raw
        case .resendNow:
            if isExpired(expiration, at: nowSeconds * 1000) { return .fail(reason: "Expired") }
            if attempt >= settings.maxAttempts { return .fail(reason: "MaxAttempts:" + reasonText(result)) }
            return raw
        case .deferForConfiguration:
            if isExpired(expiration, at: nowSeconds * 1000 + settings.configurationPauseSeconds * 1000) {
                return .fail(reason: "Expired")
            }
            return raw
        case .resendUnprocessed, .unavailable:
            if isExpired(expiration, at: nowSeconds * 1000) { return .fail(reason: "Expired") }
            return raw
        }
    }

    /// `decide`, then the queue's give-up limit (`giveUpAfterSeconds`): a retry or resend that would happen later
    /// than that after the job's first attempt (`firstAttemptAtMilliseconds`, ms since the epoch) fails with
    /// `GaveUp:<reason>` instead. Pauses (outage, credentials) are not the job's fault and never give up. Both
    /// times are milliseconds: a now in whole seconds would give up to a second late.
    public func decide(_ result: DeliveryResult, attempt: Int, expiration: Int64?, nowMilliseconds: Int64,
                       firstAttemptAtMilliseconds: Int64?) -> Decision {
        let decision = decide(result, attempt: attempt, expiration: expiration, nowSeconds: nowMilliseconds / 1000)
        guard settings.giveUpAfterSeconds > 0, let first = firstAttemptAtMilliseconds else { return decision }
        let limit = first + settings.giveUpAfterSeconds * 1000
        switch decision {
        case .retry(let ms, let reason) where nowMilliseconds + ms > limit:
            return .fail(reason: "GaveUp:" + reason)
        case .resendNow where nowMilliseconds > limit:
            return .fail(reason: "GaveUp:" + reasonText(result))
        default:
            return decision
        }
    }

    /// True when a nonzero `apns-expiration` (seconds) lies before `milliseconds` since the epoch: sending then
    /// is pointless. 0 means "send once, do not store" at Apple, never "expired".
    public func wouldExpire(_ expiration: Int64?, atMilliseconds milliseconds: Int64) -> Bool {
        isExpired(expiration, at: milliseconds)
    }

    /// True when the answer says the credential (key, token or certificate) is at fault, whatever the job's
    /// attempt or expiration: an expired job that met such an answer proves nothing about the key.
    public func refusesCredential(_ result: DeliveryResult) -> Bool {
        if case .deferForConfiguration = rawDecision(result, attempt: 1) { return true }
        return false
    }

    /// Whether the connection should be replaced after this result (the provider's word).
    public func connectionAdvice(_ result: DeliveryResult) -> ConnectionAdvice {
        guard case .answer(let answer) = result else { return .keep }
        return answer.connectionAdvice
    }

    /// 5xx delay for a 1-based attempt before jitter: base * 2^(attempt-1), capped.
    public func serverErrorDelaySeconds(attempt: Int) -> Int64 {
        doubling(settings.serverErrorBaseSeconds, cap: settings.serverErrorCapSeconds, attempt: attempt)
    }

    /// The pause of a destination after its `consecutive`-th (1-based) outage pause in a row, no jitter.
    public func outagePauseSeconds(consecutive: Int) -> Int64 {
        doubling(settings.outagePauseSeconds, cap: settings.outagePauseCapSeconds, attempt: consecutive)
    }

    /// 429 TooManyRequests delay for a 1-based attempt before jitter.
    public func throttleDelaySeconds(attempt: Int) -> Int64 {
        doubling(settings.throttleBaseSeconds, cap: settings.throttleCapSeconds, attempt: attempt)
    }

    private func rawDecision(_ result: DeliveryResult, attempt: Int) -> Decision {
        switch result {
        case .transport(.notProcessed):
            return .resendUnprocessed
        case .transport(.outcomeUnknown), .transport(.timedOut):
            return .resendNow(freshConnection: true, refreshToken: false)
        case .transport(.connectionFailed(let detail)):
            return .unavailable(reason: "ConnectionFailed: " + detail)
        case .answer(let answer):
            return decision(answer.answerClass, attempt: attempt)
        }
    }

    /// A provider's class of answer as the next step, with the shared back-offs (a `Retry-After` longer than
    /// the back-off wins).
    private func decision(_ answerClass: AnswerClass, attempt: Int) -> Decision {
        switch answerClass {
        case .delivered: .delivered
        case .dropToken(let invalidSince, let reason): .dropToken(invalidSince: invalidSince, reason: reason)
        case .dropChannel(let reason): .dropChannel(reason: reason)
        case .resendNow(let fresh, let refresh): .resendNow(freshConnection: fresh, refreshToken: refresh)
        case .deferForConfiguration(let reason): .deferForConfiguration(reason: reason)
        case .throttled(let reason, let retryAfter, _):
            .retry(afterMilliseconds: max(min(retryAfter, settings.throttleCapSeconds * 1000), jittered(throttleDelaySeconds(attempt: attempt))),
                   reason: reason)
        case .serverError(let reason, let retryAfter):
            .retry(afterMilliseconds: max(min(retryAfter, settings.serverErrorCapSeconds * 1000), jittered(serverErrorDelaySeconds(attempt: attempt))),
                   reason: reason)
        case .fail(let reason): .fail(reason: reason)
        case .awaitReceipt(let ticket, let ms): .awaitReceipt(ticket: ticket, afterMilliseconds: ms)
        }
    }

    /// How long to hold back the whole destination after this answer (FCM's 429: slow the project down rather
    /// than let every waiting job meet the same quota); nil for every answer whose class does not slow it.
    public func slowDownMilliseconds(_ result: DeliveryResult) -> Int64? {
        guard case .answer(let answer) = result, case .throttled(_, let retryAfter, true) = answer.answerClass else { return nil }
        return max(min(retryAfter, settings.throttleCapSeconds * 1000), settings.throttleBaseSeconds * 1000)
    }

    /// A provider's `Retry-After` beyond its class's cap (`throttle_cap_seconds` for a throttle,
    /// `server_error_cap_seconds` for a server error), in milliseconds as it asked, with the cap the policy
    /// holds it to; nil when it asked for no more. One absurd header (`Retry-After: 999999999`) must not park a
    /// job, or a whole app, for decades: it waits the cap and is tried again.
    public func cappedRetryAfter(_ result: DeliveryResult) -> (asked: Int64, cap: Int64)? {
        guard case .answer(let answer) = result else { return nil }
        switch answer.answerClass {
        case .throttled(_, let retryAfter, _) where retryAfter > settings.throttleCapSeconds * 1000:
            return (retryAfter, settings.throttleCapSeconds * 1000)
        case .serverError(_, let retryAfter) where retryAfter > settings.serverErrorCapSeconds * 1000:
            return (retryAfter, settings.serverErrorCapSeconds * 1000)
        default:
            return nil
        }
    }

    /// The short name of a result, as reasons name it (`TimedOut`, `NotProcessed`, `BadDeviceToken`, ...).
    public func reasonText(_ result: DeliveryResult) -> String {
        switch result {
        case .transport(.notProcessed): "NotProcessed"
        case .transport(.outcomeUnknown): "ConnectionLost"
        case .transport(.timedOut): "TimedOut"
        case .transport(.connectionFailed(let d)): "ConnectionFailed: " + d
        case .answer(let answer): answer.reasonName
        }
    }

    private func isExpired(_ expiration: Int64?, at milliseconds: Int64) -> Bool {
        guard let expiration, expiration != 0 else { return false }
        // A date too far ahead to count in milliseconds is simply not expired (wrapping made it look past).
        let (ms, overflow) = expiration.multipliedReportingOverflow(by: 1000)
        if overflow { return expiration < 0 }
        return ms < milliseconds
    }

    private func doubling(_ base: Int64, cap: Int64, attempt: Int) -> Int64 {
        let shift = max(0, attempt - 1)
        guard shift < 62 else { return cap }
        let (v, overflow) = base.multipliedReportingOverflow(by: Int64(1) << shift)
        return overflow ? cap : min(v, cap)
    }

    /// delay*(1-j) + delay*2j*u, in milliseconds.
    private func jittered(_ seconds: Int64) -> Int64 {
        let j = settings.jitterFraction
        let u = min(max(random(), 0), 1)
        let factor = 1 - j + 2 * j * u
        return Int64((Double(seconds) * 1000 * factor).rounded())
    }
}

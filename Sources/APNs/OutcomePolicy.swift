/// Turns one attempt's result into the next step for the job. Pure: time and randomness are passed in,
/// so every rule is testable.
///
/// Choices beyond Apple's table (see docs/job-format.md):
/// - Resends count as attempts, so a job that keeps meeting dying connections ends after `maxAttempts`
///   (`MaxAttempts:<reason>`) instead of looping.
/// - `timedOut` is treated like a connection lost with the stream open: resent on a fresh connection.
///   It may duplicate a notification; losing one silently is judged worse, and a producer that cares sets
///   `collapse_id`, which makes the device show only one.
/// - TooManyProviderTokenUpdates defers (no new token, no attempt counted), as issue 2 lists it with the
///   credential errors; `ProviderTokenCache` already refuses to refresh within 20 minutes.
/// - Outages are never the job's fault: `connectionFailed` (nothing sent) is `unavailable` and a certainly
///   unprocessed send (`notProcessed`) is resent without counting an attempt, so a firewall change or a server
///   that processes nothing never turns good jobs into failures (the worker pauses the destination instead).
/// - Broadcasts: ChannelNotRegistered drops the channel (like a dropped token, on its own stream).
///   FeatureNotEnabled and CannotCreateChannelConfig are the app's configuration, yet they fail the job rather than
///   pause the destination: a pause would hold the app's device pushes too, which Apple still accepts, and the fix
///   (enable broadcast for the App ID, delete unused channels) is a person's, not a retry's.
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
        case .delivered, .dropToken, .dropChannel, .fail:
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

    /// Whether the connection should be replaced after this result.
    public func connectionAdvice(_ result: DeliveryResult) -> ConnectionAdvice {
        guard case .response(let r) = result, let reason = r.reason else { return .keep }
        switch reason {
        case .shutdown, .idleTimeout, .expiredProviderToken, .unrelatedKeyIdInToken: return .replace
        default: return .keep
        }
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
        case .fcm(let r):
            return fcmDecision(r, attempt: attempt)
        case .response(let r):
            if r.status == 200 { return .delivered }
            let name = r.reason?.rawValue ?? "HTTP \(r.status)"
            switch r.reason {
            case .badDeviceToken?:
                return .dropToken(invalidSince: nil, reason: name)
            case .unregistered?, .expiredToken?:
                return .dropToken(invalidSince: r.timestamp, reason: name)
            case .channelNotRegistered?:
                return .dropChannel(reason: name)
            case .expiredProviderToken?:
                return .resendNow(freshConnection: true, refreshToken: true)
            case .unrelatedKeyIdInToken?, .idleTimeout?:
                return .resendNow(freshConnection: true, refreshToken: false)
            case .invalidProviderToken?, .missingProviderToken?, .badCertificate?, .badCertificateEnvironment?,
                .badEnvironmentKeyIdInToken?, .topicMismatch?, .tooManyProviderTokenUpdates?:
                return .deferForConfiguration(reason: name)
            case .tooManyRequests?:
                return .retry(afterMilliseconds: jittered(throttleDelaySeconds(attempt: attempt)), reason: name)
            default:
                if r.status == 410 { return .dropToken(invalidSince: r.timestamp, reason: name) }
                if r.status >= 500 {
                    return .retry(afterMilliseconds: jittered(serverErrorDelaySeconds(attempt: attempt)), reason: name)
                }
                if r.status == 429 {
                    return .retry(afterMilliseconds: jittered(throttleDelaySeconds(attempt: attempt)), reason: name)
                }
                return .fail(reason: name)
            }
        }
    }

    /// FCM HTTP v1's answers in the same classes as Apple's (docs/results.md has the table):
    /// - 5xx (INTERNAL, UNAVAILABLE): retry with the APNs 5xx back-off, or `Retry-After` when longer.
    /// - 429 (QUOTA_EXCEEDED / RESOURCE_EXHAUSTED): retry after `Retry-After` or the 429 back-off, whichever is
    ///   longer; the core also slows the whole project down (`slowDownMilliseconds`).
    /// - UNREGISTERED, SENDER_ID_MISMATCH, and INVALID_ARGUMENT naming the token: drop the token.
    /// - THIRD_PARTY_AUTH_ERROR (the APNs key or web-push key in Firebase): a configuration error, park the app.
    /// - 401 without an FCM code: the access token was refused. Resend once with a fresh token; a 401 on a token
    ///   fetched after a 401 parks the app.
    /// - A refused OAuth grant (no request sent): park the app like a broken APNs key.
    /// - Anything else: fail with FCM's error code (else the RPC status, else `HTTP <status>`).
    private func fcmDecision(_ r: FCMResponse, attempt: Int) -> Decision {
        if let refusal = r.grantRefused { return .deferForConfiguration(reason: "TokenRefused: " + refusal) }
        if r.status == 200 { return .delivered }
        let name = r.reasonName
        let retryAfter = (r.retryAfterSeconds ?? 0) * 1000
        switch r.errorCode {
        case "UNREGISTERED"?, "SENDER_ID_MISMATCH"?:
            return .dropToken(invalidSince: nil, reason: name)
        case "INVALID_ARGUMENT"? where isTokenViolation(r), nil where r.status == 400 && isTokenViolation(r):
            return .dropToken(invalidSince: nil, reason: "INVALID_ARGUMENT")
        case "THIRD_PARTY_AUTH_ERROR"?:
            return .deferForConfiguration(reason: name)
        case "QUOTA_EXCEEDED"?:
            return .retry(afterMilliseconds: max(retryAfter, jittered(throttleDelaySeconds(attempt: attempt))), reason: name)
        case "UNAVAILABLE"?, "INTERNAL"?:
            return .retry(afterMilliseconds: max(retryAfter, jittered(serverErrorDelaySeconds(attempt: attempt))), reason: name)
        default:
            if r.status == 401 && r.errorCode == nil {
                return r.afterTokenRefresh ? .deferForConfiguration(reason: "UNAUTHENTICATED: access token refused after a refresh")
                                           : .resendNow(freshConnection: false, refreshToken: true)
            }
            if r.status == 429 {
                return .retry(afterMilliseconds: max(retryAfter, jittered(throttleDelaySeconds(attempt: attempt))), reason: name)
            }
            if r.status >= 500 {
                return .retry(afterMilliseconds: max(retryAfter, jittered(serverErrorDelaySeconds(attempt: attempt))), reason: name)
            }
            return .fail(reason: name)
        }
    }

    /// FCM answers INVALID_ARGUMENT for a bad payload too: only a violation of `message.token` (or FCM's
    /// "not a valid FCM registration token" text) says the token is at fault.
    private func isTokenViolation(_ r: FCMResponse) -> Bool {
        if r.fieldViolations.contains("message.token") { return true }
        return r.fieldViolations.isEmpty && (r.message ?? "").contains("registration token")
    }

    /// How long to hold back the whole destination after this answer (FCM's 429: slow the project down rather
    /// than let every waiting job meet the same quota); nil for every other answer.
    public func slowDownMilliseconds(_ result: DeliveryResult) -> Int64? {
        guard case .fcm(let r) = result, r.status == 429 || r.errorCode == "QUOTA_EXCEEDED" else { return nil }
        return max((r.retryAfterSeconds ?? 0) * 1000, settings.throttleBaseSeconds * 1000)
    }

    /// The short name of a result, as reasons name it (`TimedOut`, `NotProcessed`, `BadDeviceToken`, ...).
    public func reasonText(_ result: DeliveryResult) -> String {
        switch result {
        case .transport(.notProcessed): "NotProcessed"
        case .transport(.outcomeUnknown): "ConnectionLost"
        case .transport(.timedOut): "TimedOut"
        case .transport(.connectionFailed(let d)): "ConnectionFailed: " + d
        case .response(let r): r.reason?.rawValue ?? "HTTP \(r.status)"
        case .fcm(let r): r.reasonName
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

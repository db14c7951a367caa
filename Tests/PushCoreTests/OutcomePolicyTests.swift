import APNs
import PushCore
import Testing

private let now: Int64 = 1_800_000_000
/// random() = 0.5 puts jitter exactly in the middle: delays come out unjittered.
private let policy = OutcomePolicy(random: { 0.5 })

private func response(_ status: Int, _ reason: String?, timestamp: Int64? = nil) -> DeliveryResult {
    .response(APNsResponse(status: status, reason: reason.map(APNsReason.init), timestamp: timestamp))
}

enum Expect: Equatable {
    case delivered, retryServer, retryThrottle, drop, dropChannel, resend(fresh: Bool, refresh: Bool), configure, fail
}

private func matches(_ d: Decision, _ e: Expect, attempt: Int = 1) -> Bool {
    switch (d, e) {
    case (.delivered, .delivered): return true
    case (.retry(let ms, _), .retryServer): return ms == 900_000 << (attempt - 1)
    case (.retry(let ms, _), .retryThrottle): return ms == 10_000 << (attempt - 1)
    case (.dropToken, .drop): return true
    case (.dropChannel, .dropChannel): return true
    case (.resendNow(let f, let r), .resend(let ef, let er)): return f == ef && r == er
    case (.deferForConfiguration, .configure): return true
    case (.fail, .fail): return true
    default: return false
    }
}

@Suite struct OutcomePolicyTests {
    /// Every row of the reference's response table.
    static let table: [(Int, String?, Expect)] = [
        (200, nil, .delivered),
        (400, "BadCollapseId", .fail), (400, "BadExpirationDate", .fail), (400, "BadMessageId", .fail),
        (400, "BadPriority", .fail), (400, "BadTopic", .fail), (400, "DuplicateHeaders", .fail),
        (400, "InvalidPushType", .fail), (400, "MissingDeviceToken", .fail), (400, "MissingTopic", .fail),
        (400, "PayloadEmpty", .fail), (400, "TopicDisallowed", .fail), (400, "BadRequestParams", .fail),
        (400, "BadRequestPayload", .fail), (400, "MissingPushType", .fail),
        (400, "BadDeviceToken", .drop),
        (400, "DeviceTokenNotForTopic", .fail),
        (400, "IdleTimeout", .resend(fresh: true, refresh: false)),
        (403, "ExpiredProviderToken", .resend(fresh: true, refresh: true)),
        (403, "UnrelatedKeyIdInToken", .resend(fresh: true, refresh: false)),
        (403, "InvalidProviderToken", .configure), (403, "MissingProviderToken", .configure),
        (403, "BadCertificate", .configure), (403, "BadCertificateEnvironment", .configure),
        (403, "BadEnvironmentKeyIdInToken", .configure), (403, "BadEnvironmentKeyInToken", .configure),
        (403, "TopicMismatch", .configure),
        (403, "Forbidden", .fail),
        (404, "BadPath", .fail), (405, "MethodNotAllowed", .fail),
        (410, "Unregistered", .drop), (410, "ExpiredToken", .drop),
        (413, "PayloadTooLarge", .fail),
        (429, "TooManyRequests", .retryThrottle),
        (429, "TooManyProviderTokenUpdates", .configure),
        (500, "InternalServerError", .retryServer), (503, "ServiceUnavailable", .retryServer),
        (503, "Shutdown", .retryServer),
        // broadcast (the seed's table): a gone channel is dropped; the app's broadcast configuration fails the job
        // without pausing the app's device pushes
        (400, "ChannelNotRegistered", .dropChannel), (400, "FeatureNotEnabled", .fail),
        (400, "CannotCreateChannelConfig", .fail), (400, "MissingChannelId", .fail), (400, "BadChannelId", .fail),
        // beyond the table
        (500, nil, .retryServer), (502, "SomethingNew", .retryServer), (400, nil, .fail), (403, "NewThing", .fail),
        (410, nil, .drop), (429, nil, .retryThrottle), (418, "Teapot", .fail),
    ]

    @Test func everyReasonInTheReference() {
        for (status, reason, expected) in Self.table {
            let d = policy.decide(response(status, reason), attempt: 1, expiration: nil, nowSeconds: now)
            #expect(matches(d, expected), "\(status) \(reason ?? "-") gave \(d)")
        }
    }

    @Test func reasonsAreCarried() {
        #expect(policy.decide(response(400, "BadTopic"), attempt: 1, expiration: nil, nowSeconds: now) == .fail(reason: "BadTopic"))
        #expect(policy.decide(response(400, nil), attempt: 1, expiration: nil, nowSeconds: now) == .fail(reason: "HTTP 400"))
        #expect(policy.decide(response(403, "BadEnvironmentKeyInToken"), attempt: 1, expiration: nil, nowSeconds: now)
            == .deferForConfiguration(reason: "BadEnvironmentKeyInToken"))
        #expect(policy.decide(response(410, "Unregistered", timestamp: 1_700_000_000_123), attempt: 1, expiration: nil, nowSeconds: now)
            == .dropToken(invalidSince: 1_700_000_000_123, reason: "Unregistered"))
        #expect(policy.decide(response(400, "BadDeviceToken"), attempt: 1, expiration: nil, nowSeconds: now)
            == .dropToken(invalidSince: nil, reason: "BadDeviceToken"))
        #expect(policy.decide(response(400, "ChannelNotRegistered"), attempt: 3, expiration: 0, nowSeconds: now)
            == .dropChannel(reason: "ChannelNotRegistered"))
        #expect(policy.decide(response(400, "FeatureNotEnabled"), attempt: 1, expiration: nil, nowSeconds: now)
            == .fail(reason: "FeatureNotEnabled"))
        #expect(!policy.refusesCredential(response(400, "FeatureNotEnabled")))
    }

    @Test func transportFailures() {
        for failure in [TransportFailure.outcomeUnknown, .timedOut] {
            #expect(policy.decide(.transport(failure), attempt: 1, expiration: nil, nowSeconds: now)
                == .resendNow(freshConnection: true, refreshToken: false))
        }
        // Nothing processed or nothing sent: never an attempt, whatever the count so far.
        #expect(policy.decide(.transport(.notProcessed), attempt: 99, expiration: nil, nowSeconds: now) == .resendUnprocessed)
        #expect(policy.decide(.transport(.connectionFailed("refused")), attempt: 99, expiration: nil, nowSeconds: now)
            == .unavailable(reason: "ConnectionFailed: refused"))
    }

    @Test func serverErrorScheduleDoublesAndCaps() {
        let expected: [Int64] = [900, 1800, 3600, 7200, 14400, 14400, 14400]
        for (i, seconds) in expected.enumerated() {
            #expect(policy.serverErrorDelaySeconds(attempt: i + 1) == seconds)
            let d = policy.decide(response(503, "ServiceUnavailable"), attempt: i + 1, expiration: nil, nowSeconds: now)
            #expect(d == .retry(afterMilliseconds: seconds * 1000, reason: "ServiceUnavailable"))
        }
        #expect(policy.serverErrorDelaySeconds(attempt: 1000) == 14400)
        #expect(policy.serverErrorDelaySeconds(attempt: 0) == 900)
    }

    @Test func throttleScheduleDoublesAndCaps() {
        let expected: [Int64] = [10, 20, 40, 80, 160, 320, 600]
        for (i, seconds) in expected.enumerated() { #expect(policy.throttleDelaySeconds(attempt: i + 1) == seconds) }
    }

    @Test(arguments: [0.0, 0.25, 0.5, 0.999999, 1.0])
    func jitterStaysInRange(u: Double) {
        let p = OutcomePolicy(random: { u })
        for attempt in 1...7 {
            let base = p.serverErrorDelaySeconds(attempt: attempt) * 1000
            guard case .retry(let ms, _) = p.decide(response(500, "InternalServerError"), attempt: attempt, expiration: nil, nowSeconds: now) else {
                Issue.record("expected a retry"); continue
            }
            #expect(ms >= base * 9 / 10 && ms <= base * 11 / 10, "attempt \(attempt) u \(u): \(ms)")
            #expect(ms == Int64((Double(base) * (0.9 + 0.2 * u)).rounded()))
        }
    }

    @Test func jitterActuallyVaries() {
        let p = OutcomePolicy()
        var seen: Set<Int64> = []
        for _ in 0..<50 {
            if case .retry(let ms, _) = p.decide(response(500, nil), attempt: 1, expiration: nil, nowSeconds: now) {
                #expect(ms >= 810_000 && ms <= 990_000)
                seen.insert(ms)
            }
        }
        #expect(seen.count > 1)
    }

    @Test func maxAttemptsTurnsRetriesAndResendsIntoFailures() {
        #expect(policy.decide(response(500, "InternalServerError"), attempt: 7, expiration: nil, nowSeconds: now)
            == .retry(afterMilliseconds: 14_400_000, reason: "InternalServerError"))
        #expect(policy.decide(response(500, "InternalServerError"), attempt: 8, expiration: nil, nowSeconds: now)
            == .fail(reason: "MaxAttempts:InternalServerError"))
        #expect(policy.decide(response(429, "TooManyRequests"), attempt: 8, expiration: nil, nowSeconds: now)
            == .fail(reason: "MaxAttempts:TooManyRequests"))
        #expect(policy.decide(.transport(.outcomeUnknown), attempt: 8, expiration: nil, nowSeconds: now)
            == .fail(reason: "MaxAttempts:ConnectionLost"))
        #expect(policy.decide(response(403, "ExpiredProviderToken"), attempt: 9, expiration: nil, nowSeconds: now)
            == .fail(reason: "MaxAttempts:ExpiredProviderToken"))
        // configuration trouble is not the job's fault: no attempt limit
        #expect(policy.decide(response(403, "InvalidProviderToken"), attempt: 50, expiration: nil, nowSeconds: now)
            == .deferForConfiguration(reason: "InvalidProviderToken"))
        // terminal answers stay what they are
        #expect(policy.decide(response(200, nil), attempt: 99, expiration: nil, nowSeconds: now) == .delivered)
        var settings = RetrySettings()
        settings.maxAttempts = 1
        #expect(OutcomePolicy(settings: settings).decide(.transport(.outcomeUnknown), attempt: 1, expiration: nil, nowSeconds: now)
            == .fail(reason: "MaxAttempts:ConnectionLost"))
        #expect(OutcomePolicy(settings: settings).decide(.transport(.notProcessed), attempt: 1, expiration: nil, nowSeconds: now)
            == .resendUnprocessed)
    }

    /// Found by fuzzing: the seconds-to-milliseconds product wrapped, so a date far ahead counted as long past.
    @Test func anExpirationTooFarAheadToCountInMillisecondsIsNotExpired() {
        #expect(!policy.wouldExpire(Int64.max / 10, atMilliseconds: now * 1000))
        #expect(!policy.wouldExpire(9_300_000_000_000_000, atMilliseconds: now * 1000))
        #expect(policy.wouldExpire(-9_300_000_000_000_000, atMilliseconds: now * 1000))
        #expect(policy.decide(response(500, nil), attempt: 1, expiration: Int64.max / 10, nowSeconds: now)
            == .retry(afterMilliseconds: 900_000, reason: "HTTP 500"))
    }

    @Test func expiredNotificationsAreNotRetried() {
        let past = now - 1
        for result in [response(500, "InternalServerError"), response(429, "TooManyRequests"), response(403, "ExpiredProviderToken"),
            response(403, "InvalidProviderToken"), .transport(.outcomeUnknown), .transport(.connectionFailed("x"))]
        {
            #expect(policy.decide(result, attempt: 1, expiration: past, nowSeconds: now) == .fail(reason: "Expired"), "\(result)")
        }
        // a retry due after the expiration is pointless too
        #expect(policy.decide(response(500, nil), attempt: 1, expiration: now + 899, nowSeconds: now) == .fail(reason: "Expired"))
        #expect(policy.decide(response(500, nil), attempt: 1, expiration: now + 900, nowSeconds: now)
            == .retry(afterMilliseconds: 900_000, reason: "HTTP 500"))
        // 0 means "do not store" at Apple, not "expired"; terminal outcomes are unaffected
        #expect(policy.decide(.transport(.notProcessed), attempt: 1, expiration: 0, nowSeconds: now) == .resendUnprocessed)
        #expect(policy.decide(response(200, nil), attempt: 1, expiration: past, nowSeconds: now) == .delivered)
        #expect(policy.decide(response(410, "Unregistered"), attempt: 1, expiration: past, nowSeconds: now)
            == .dropToken(invalidSince: nil, reason: "Unregistered"))
    }

    @Test func connectionAdvice() {
        for reason in ["Shutdown", "IdleTimeout", "ExpiredProviderToken", "UnrelatedKeyIdInToken"] {
            #expect(policy.connectionAdvice(response(reason == "Shutdown" ? 503 : 403, reason)) == .replace)
        }
        #expect(policy.connectionAdvice(response(500, "InternalServerError")) == .keep)
        #expect(policy.connectionAdvice(response(200, nil)) == .keep)
        #expect(policy.connectionAdvice(.transport(.timedOut)) == .keep)
    }

    /// The bounds are checked where the settings are declared (WorkerTests' `ConfigurationBoundsTests`).
    @Test func settingsDefaults() throws {
        let d = RetrySettings()
        #expect(d.serverErrorBaseSeconds == 900 && d.serverErrorCapSeconds == 14400 && d.maxAttempts == 8)
        #expect(d.throttleBaseSeconds == 10 && d.throttleCapSeconds == 600 && d.jitterFraction == 0.1)
        #expect(d.configurationPauseSeconds == 60)
    }

    @Test func decisionsKnowWhetherTheyAreTerminal() {
        #expect(Decision.delivered.isTerminal)
        #expect(Decision.fail(reason: "x").isTerminal)
        #expect(Decision.dropToken(invalidSince: nil, reason: "x").isTerminal)
        #expect(Decision.dropChannel(reason: "x").isTerminal)
        #expect(!Decision.retry(afterMilliseconds: 1, reason: "x").isTerminal)
        #expect(!Decision.resendNow(freshConnection: true, refreshToken: false).isTerminal)
        #expect(!Decision.deferForConfiguration(reason: "x").isTerminal)
    }
}

import APNs
import FCM
import Foundation
import PushCore
import Worker

/// Computes what the worker derives from a configuration's numbers, through the worker's own code: the core's
/// share of `max_in_flight`, the idempotency window, every retry policy's back-off, give-up and expiry
/// arithmetic at every attempt up to `max_attempts`, the outage pauses, the FCM slow-down, the budgets' spacing and
/// the shutdown deadline. A value the bounds let through that overflows traps here (the `ConfigurationBoundsTests` and the
/// `FuzzConfigurationBounds` target call it), as it would in the worker at the first 503 or SIGTERM.
public enum DerivedValues {
    public static func compute(_ c: Configuration) -> Int64 {
        var sum: Int64 = 0
        for loops in Set([1, c.worker.eventLoops]) {
            let settings = DeliverySettings(configuration: c, workerID: "w", loops: loops)
            sum &+= Int64(settings.maxInFlight &+ settings.claimBatch) &+ settings.idempotencyWindowMilliseconds
            let core = DeliveryCore(settings: settings, apps: c.apps, clock: SystemDeliveryClock())
            core.shutdown(deadlineSeconds: c.worker.shutdownDeadlineSeconds)
        }
        let now = Int64(Date().timeIntervalSince1970)
        let answers: [DeliveryResult] = [
            .response(APNsResponse(status: 503, reason: .serviceUnavailable)), .response(APNsResponse(status: 429, reason: .tooManyRequests)),
            .response(APNsResponse(status: 500)), .response(APNsResponse(status: 403, reason: .invalidProviderToken)),
            .fcm(FCMResponse(status: 429, errorCode: "QUOTA_EXCEEDED")), .fcm(FCMResponse(status: 503, errorCode: "UNAVAILABLE")),
            .transport(.timedOut), .transport(.notProcessed), .transport(.connectionFailed("refused")),
        ]
        for retry in [c.retry] + c.queueRetry.values.sorted(by: { $0.maxAttempts < $1.maxAttempts }) {
            for random in [0.0, 0.999_999] {
                let policy = OutcomePolicy(settings: retry, random: { random })
                let attempts = Set([1, 2, 62, 63, 64, max(1, retry.maxAttempts - 1), retry.maxAttempts, retry.maxAttempts + 1])
                for attempt in attempts.sorted() {
                    sum &+= policy.serverErrorDelaySeconds(attempt: attempt) &+ policy.throttleDelaySeconds(attempt: attempt)
                    sum &+= policy.outagePauseSeconds(consecutive: attempt)
                    for answer in answers {
                        for expiration: Int64? in [nil, now + 86_400] {
                            let first = (now - retry.giveUpAfterSeconds) * 1000
                            if case .retry(let ms, _) = policy.decide(answer, attempt: attempt, expiration: expiration, nowMilliseconds: now * 1000,
                                                                      firstAttemptAtMilliseconds: first) {
                                sum &+= ms &+ now * 1000 + ms
                            }
                        }
                        sum &+= policy.slowDownMilliseconds(answer) ?? 0
                    }
                }
            }
        }
        // Budgets: every one's spacing, alone and shared among the shards (issue 54: the budget arithmetic is
        // fuzzed as the other bounds are).
        for interval in c.budgets.intervalsMicros(shards: c.redis.shards) { sum &+= interval }
        return sum
    }
}

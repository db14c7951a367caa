import APNs
import Reactor
import RedisQueue

/// One claimed job while it is in the pipeline: its lease, what was parsed from it, and its attempt count.
/// A class because the send completion and resends refer to the same job. Loop-confined.
final class JobAttempt {
    let lease: Lease
    let id: String
    let appIndex: Int
    let notification: PushNotification
    /// 1-based; immediate resends count (they are attempts at APNs).
    var attempt: Int
    /// Resend only on a connection newer than this id (after ExpiredProviderToken and the like).
    var afterConnection = 0
    let claimedAt: UInt64

    init(lease: Lease, id: String, appIndex: Int, notification: PushNotification, claimedAt: UInt64) {
        self.lease = lease
        self.id = id
        self.appIndex = appIndex
        self.notification = notification
        self.attempt = lease.attempt
        self.claimedAt = claimedAt
    }

    var latencyMilliseconds: Int { Int((monotonicNanos() &- claimedAt) / 1_000_000) }
}

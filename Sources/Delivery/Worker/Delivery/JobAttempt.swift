import ProviderKit
import PushCore
import RedisQueue

/// One claimed job while it is in the pipeline: its lease, what was parsed from it, where it goes and its
/// attempt count. A class because a send's completion and the resends refer to the same job. Loop-confined.
public final class JobAttempt {
    public let lease: Lease
    public let id: String
    /// Where it goes, what is sent and how its tokens go, as its provider admitted it: kept whole, so intake moves
    /// the admission in without copying the notification.
    private var admitted: AdmittedJob
    /// Changes only when environment fallback sends the job to the other environment.
    public var destination: Destination { _read { yield admitted.destination } }
    public let appName: String
    /// Yielded, not returned: a copy per read retained every string of it, and the core reads it several times a job.
    public var notification: PushNotification { _read { yield admitted.notification } }
    /// The environment first tried, once environment fallback has moved the job to the other one.
    public private(set) var fallbackFrom: ServiceEnvironment?
    /// 1-based; resends after an answer that may have been processed count (they are attempts at the provider);
    /// resends after a refused credential do not (`refreshResends`).
    public internal(set) var attempt: Int
    /// Resends in a row that APNs certainly did not process (refused stream, GOAWAY, never written), with no
    /// answer from the destination to any job in between: not attempts, but a sign the server processes
    /// nothing (an outage). A refusal while other jobs are answered is bad luck, and starts the count again.
    var unprocessedResends = 0
    /// Resends after the provider refused the credential before processing (an expired token, refreshed): not
    /// attempts, since nothing was sent to the device; `DeliveryCore.Settings.refreshResendsBeforePause` bounds them.
    var refreshResends = 0
    /// The destination's `processedAnswers` at this job's last unprocessed send.
    var processedAnswersAtLastUnprocessed: UInt64 = 0
    /// Why the job is being sent again (`TimedOut`, `NotProcessed`, ...), until it goes out: the reason of its
    /// `retrying` entry if a pause parks it first.
    var resendCause: String?
    /// Resend only on a connection newer than this id (after ExpiredProviderToken and the like).
    public internal(set) var afterConnection = 0
    /// Monotonic nanoseconds of the latest send, for the request-latency histogram.
    var sentAt: UInt64 = 0
    /// The push service the job goes to, the `platform` label of its metrics.
    var platform: Platform { destination.platform }
    /// Monotonic nanoseconds at claim, for `latency_ms`.
    let claimedAt: UInt64
    /// `deliver_at` (ms since the epoch): the job waits in the retry set until then.
    let deliverAt: Int64?
    /// A multicast job (`tokens`): fanned out into one job per token instead of being sent.
    var multicast: Multicast? { _read { yield admitted.multicast } }
    /// A many-token send (Push Kit's `token` list): every token the one request carries, each once; each gets
    /// its own result entry. Empty for a job with one destination.
    var batchTokens: [String] { _read { yield admitted.batchTokens } }
    /// The `id` came from the producer (idempotency applies only to such ids).
    let hasProducerID: Bool
    /// The producer's W3C `traceparent`, carried into every result entry and log line of the job.
    var traceparent: String?
    /// Idempotency: what this job's `<p>:once:<id>` key holds for it, once it took part (nil: it does not).
    var onceExpect: OnceUpdate.Expect?

    /// A multicast job's tokens and its bytes around the `tokens` member, as its provider admitted it.
    typealias Multicast = JobMulticast
    /// When its first attempt was made (ms since the epoch): from the retry envelope, else set when the core
    /// first dispatches it. Travels in the retry envelope for the queue's give-up limit.
    var firstAttemptAt: Int64?

    init(lease: Lease, id: String, appName: String, admitted: AdmittedJob, claimedAt: UInt64, deliverAt: Int64? = nil,
         hasProducerID: Bool = false) {
        self.lease = lease
        self.id = id
        self.admitted = admitted
        // A "many-token" send of one token is a plain send.
        if self.admitted.batchTokens.count == 1 { self.admitted.batchTokens = [] }
        self.appName = appName
        self.attempt = lease.attempt
        self.claimedAt = claimedAt
        self.deliverAt = deliverAt
        self.hasProducerID = hasProducerID
        self.firstAttemptAt = lease.firstAttemptAt
    }

    /// Environment fallback: the same job, once, to `environment` of the same app (its provider's choice).
    func fallBack(to environment: ServiceEnvironment) {
        fallbackFrom = destination.environment
        admitted.destination = Destination(app: destination.app, environment: environment, platform: destination.platform, route: destination.route)
        admitted.notification.environment = environment
    }

    /// `validate_only`: checked (and for FCM dry-run) instead of delivered.
    func markValidateOnly() { admitted.notification.validateOnly = true }
    var validateOnly: Bool { notification.validateOnly }

    func latencyMilliseconds(now: UInt64) -> Int { Int((now &- claimedAt) / 1_000_000) }
}

import PushCore
import RedisQueue

/// The worker's own intake (`JobIntake`) for callers outside the delivery loop (`herald api`): the verdict a
/// worker would reach on a freshly queued job, without sending anything, so a front door refuses exactly what a
/// worker would reject, with the reason text its `rejected` result would carry.
public struct JobCheck: Sendable {
    private let intake: JobIntake

    public init(configuration: Configuration) {
        intake = JobIntake(directory: AppDirectory(configuration.apps), providers: configuration.providers,
                           maxScheduleMilliseconds: Int64(configuration.worker.maxScheduleDays) * 86_400_000)
    }

    public struct Verdict: Sendable, Equatable {
        /// Why a worker would reject the job; nil when it would send it.
        public var refusal: String?
        /// The producer's `id`, when the job names one.
        public var producerID: String?
        /// The configured app the job was matched to (nil when no app matched).
        public var app: String?
        /// The sends it makes: one per token of a multicast or a many-token send, else one.
        public var sends = 1
    }

    /// `wallMillis`: now, for the `deliver_at` horizon.
    public func check(_ job: [UInt8], wallMillis: Int64) -> Verdict {
        let lease = Lease(id: "check", queueKey: "", raw: job)
        switch intake.admit(lease, claimedAt: 0, wallMillis: wallMillis, makeID: { "" }) {
        case .rejected(_, let reason, let spec, _, let app):
            return Verdict(refusal: reason, producerID: spec?.id, app: app)
        case .accepted(let attempt):
            return Verdict(refusal: nil, producerID: attempt.hasProducerID ? attempt.id : nil, app: attempt.appName,
                           sends: attempt.multicast?.tokens.count ?? max(1, attempt.batchTokens.count))
        }
    }
}

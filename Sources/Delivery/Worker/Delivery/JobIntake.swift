import PushCore
import RedisQueue

/// Turns a claimed lease into a job ready to send, or the reason it is rejected: parse, find the app, check it is
/// of the job's platform, then the app's provider applies its own rules (`PushProvider.admit`: Apple's, FCM's
/// message rules) locally so a malformed job never reaches the provider, and its admission becomes the attempt. Pure.
struct JobIntake {
    let directory: AppDirectory
    /// The configuration's providers, in `Platform.allCases` order.
    let providers: [any PushProvider.Type]
    /// `deliver_at` further ahead than this is refused: a producer who sent µs or ns would otherwise wait for ever.
    var maxScheduleMilliseconds: Int64 = 365 * 86_400_000

    enum Verdict {
        case accepted(JobAttempt)
        case rejected(id: String, reason: String, spec: JobSpec?, app: String?)
    }

    func admit(_ lease: Lease, claimedAt: UInt64, wallMillis: Int64, makeID: () -> String) -> Verdict {
        let spec: JobSpec
        do {
            spec = try JobParser.parse(lease.job)
        } catch {
            // The producer's id whenever it can be read, so the rejection can be matched to its job.
            let id = lease.jobID ?? JobParser.readableID(lease.job) ?? makeID()
            return .rejected(id: id, reason: "\(error.code): \(error.description)", spec: nil, app: nil)
        }
        let verdict = admit(spec, lease, claimedAt: claimedAt, wallMillis: wallMillis, makeID: makeID)
        // Only a job with a trace pays for the look at the verdict.
        if let trace = spec.traceparent, case .accepted(let job) = verdict { job.traceparent = trace }
        if spec.validateOnly, case .accepted(let job) = verdict { job.markValidateOnly() }
        return verdict
    }

    private func admit(_ spec: JobSpec, _ lease: Lease, claimedAt: UInt64, wallMillis: Int64, makeID: () -> String) -> Verdict {
        let id = spec.id ?? lease.jobID ?? makeID()
        if let at = spec.deliverAt, at - wallMillis > maxScheduleMilliseconds {
            let days = (at - wallMillis) / 86_400_000
            return .rejected(id: id, reason: "bad_deliver_at: \"deliver_at\" lies \(days) days ahead, beyond worker.max_schedule_days "
                             + "(\(maxScheduleMilliseconds / 86_400_000)); it takes milliseconds since the epoch (not microseconds or nanoseconds)",
                             spec: spec, app: spec.app)
        }
        let index: Int
        do {
            index = try directory.index(app: spec.app, topic: spec.topic, platform: spec.platform)
        } catch {
            return .rejected(id: id, reason: "UnknownApp: \(error.description)", spec: spec, app: spec.app)
        }
        let app = directory.apps[index]
        let platform = directory.platforms[index]
        let provider = providers.provider(for: platform)
        guard platform == spec.platform else {
            return .rejected(id: id, reason: "WrongPlatform: app '\(app.name)' is an \(platform.displayName) app; "
                             + provider.wrongPlatformDetail(job: spec.platform, given: spec.platformGiven),
                             spec: spec, app: app.name)
        }
        do {
            let admitted = try provider.admit(job: lease.job, spec: spec, app: app, index: index)
            return .accepted(JobAttempt(lease: lease, id: id, appName: app.name, admitted: admitted, claimedAt: claimedAt,
                                        deliverAt: spec.deliverAt, hasProducerID: spec.id != nil))
        } catch {
            return .rejected(id: id, reason: error.reason, spec: spec, app: app.name)
        }
    }
}

import PushCore
import RedisQueue

/// Turns a claimed lease into a job ready to send, or the reason it is rejected: parse, find the app, check it is
/// of the job's platform, then the app's provider applies its own rules (`PushProvider.admit`: Apple's, FCM's
/// message rules) locally so a malformed job never reaches the provider, and its admission becomes the attempt. Pure.
struct JobIntake {
    let directory: AppDirectory
    /// The configuration's providers, in `Platform.allCases` order.
    let providers: [any PushProvider.Type]
    /// Their job members, for the parser.
    let members: JobMemberTable
    /// `deliver_at` further ahead than this is refused: a producer who sent µs or ns would otherwise wait for ever.
    var maxScheduleMilliseconds: Int64

    init(directory: AppDirectory, providers: [any PushProvider.Type], maxScheduleMilliseconds: Int64 = 365 * 86_400_000) {
        self.directory = directory
        self.providers = providers
        self.members = providers.jobMembers
        self.maxScheduleMilliseconds = maxScheduleMilliseconds
    }

    enum Verdict {
        case accepted(JobAttempt)
        /// `spec` and `fields`: what was read of it, nil when it could not be read.
        case rejected(id: String, reason: String, spec: JobSpec?, fields: RejectedJobFields?, app: String?)
    }

    func admit(_ lease: Lease, claimedAt: UInt64, wallMillis: Int64, makeID: () -> String) -> Verdict {
        let spec: JobSpec
        do {
            spec = try JobParser.parse(lease.job, members: members)
        } catch {
            return unreadable(lease, error, makeID: makeID)
        }
        let verdict = admit(spec, lease, claimedAt: claimedAt, wallMillis: wallMillis, makeID: makeID)
        // Only a job with a trace pays for the look at the verdict.
        if let trace = spec.traceparent, case .accepted(let job) = verdict { job.traceparent = trace }
        if spec.validateOnly, case .accepted(let job) = verdict { job.markValidateOnly() }
        return verdict
    }

    /// A job the parser or its provider could not read.
    private func unreadable(_ lease: Lease, _ error: JobError, makeID: () -> String) -> Verdict {
        // The producer's id whenever it can be read, so the rejection can be matched to its job.
        let id = lease.jobID ?? JobParser.readableID(lease.job) ?? makeID()
        return .rejected(id: id, reason: "\(error.code): \(error.description)", spec: nil, fields: nil, app: nil)
    }

    /// The job's provider reads it (`PushProvider.intake`), `match` applies the checks every job gets and finds its
    /// app, and the provider admits it.
    private func admit(_ spec: JobSpec, _ lease: Lease, claimedAt: UInt64, wallMillis: Int64, makeID: () -> String) -> Verdict {
        let outcome = providers.provider(for: spec.platform).intake(job: lease.job, spec: spec, apps: directory.apps) { spec in
            if let at = spec.deliverAt, at - wallMillis > maxScheduleMilliseconds {
                let days = (at - wallMillis) / 86_400_000
                return .refused(reason: "bad_deliver_at: \"deliver_at\" lies \(days) days ahead, beyond worker.max_schedule_days "
                                + "(\(maxScheduleMilliseconds / 86_400_000)); it takes milliseconds since the epoch (not microseconds or nanoseconds)",
                                app: spec.app)
            }
            let index: Int
            do throws(AppDirectory.LookupError) {
                index = try directory.index(app: spec.app, topic: spec.topic, platform: spec.platform)
            } catch {
                return .refused(reason: "UnknownApp: \(error.description)", app: spec.app)
            }
            let app = directory.apps[index]
            let platform = directory.platforms[index]
            guard platform == spec.platform else {
                return .refused(reason: "WrongPlatform: app '\(app.name)' is an \(platform.displayName) app; "
                                + providers.provider(for: platform).wrongPlatformDetail(job: spec.platform, given: spec.platformGiven), app: app.name)
            }
            return .matched(index: index)
        }
        switch outcome {
        case .unreadable(let error):
            return unreadable(lease, error, makeID: makeID)
        case .refused(let reason, let app, let fields):
            return .rejected(id: spec.id ?? lease.jobID ?? makeID(), reason: reason, spec: spec, fields: fields, app: app)
        case .admitted(let admitted):
            return .accepted(JobAttempt(lease: lease, id: spec.id ?? lease.jobID ?? makeID(), appName: directory.apps[admitted.destination.app].name,
                                        admitted: admitted,
                                        claimedAt: claimedAt, deliverAt: spec.deliverAt, hasProducerID: spec.id != nil))
        }
    }
}

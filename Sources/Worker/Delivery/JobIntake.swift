import APNs
import FCM
import PushCore
import WebPush
import RedisQueue

/// Turns a claimed lease into a job ready to send, or the reason it is rejected: parse, find the app, pick
/// the environment and topic, and apply Apple's rules locally so a malformed job never reaches APNs. Pure.
struct JobIntake {
    let directory: AppDirectory
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
        guard app.platform == spec.platform else {
            return .rejected(id: id, reason: "WrongPlatform: app '\(app.name)' is an \(app.platform.displayName) app; "
                             + ProviderRegistry.wrongPlatformDetail(app: app.platform, job: spec.platform, given: spec.platformGiven),
                             spec: spec, app: app.name)
        }
        if spec.platform.carriesMessage { return admitFCM(lease, id: id, spec: spec, index: index, claimedAt: claimedAt) }
        if spec.platform.carriesSubscription { return admitWebPush(lease, id: id, spec: spec, index: index, claimedAt: claimedAt) }
        let environment = spec.environment ?? APNsEnvironment(rawValue: app.defaultEnvironment) ?? .production
        guard app.environments.contains(environment.rawValue) else {
            return .rejected(id: id, reason: "BadEnvironment: app '\(app.name)' is not configured for \(environment.rawValue)", spec: spec, app: app.name)
        }
        let topic: String
        if spec.channel != nil {
            // A broadcast carries no apns-topic: the bundle ID goes into its path.
            topic = app.bundleID
        } else if let given = spec.topic {
            topic = given
        } else if let derived = spec.pushType.topic(forBundleID: app.bundleID) {
            topic = derived
        } else {
            return .rejected(id: id, reason: "MissingTopic: push type \(spec.pushType.rawValue) needs an explicit topic", spec: spec, app: app.name)
        }
        var notification = spec.notification(topic: topic, environment: environment, bundleID: app.bundleID)
        let multicast = spec.uniqueTokens.flatMap { tokens in
            spec.tokenJobParts(of: lease.job).map { JobAttempt.Multicast(tokens: tokens, jobPrefix: $0.prefix, jobSuffix: $0.suffix) }
        }
        // A multicast job is checked once, with its first token (every token's format was checked when parsed).
        if let multicast { notification.deviceToken = multicast.tokens[0] }
        if let failure = NotificationValidator.validate(notification, bundleID: spec.pushType == .mdm ? nil : app.bundleID) {
            return .rejected(id: id, reason: "\(failure.reason.rawValue): \(failure.message)", spec: spec, app: app.name)
        }
        let destination = Destination(app: index, environment: environment)
        return .accepted(JobAttempt(lease: lease, id: id, destination: destination, appName: app.name, notification: notification,
                                    claimedAt: claimedAt, deliverAt: spec.deliverAt, multicast: multicast, hasProducerID: spec.id != nil))
    }

    /// A Web Push job for a Web Push app: the subscription, payload size, headers and endpoint checked here.
    private func admitWebPush(_ lease: Lease, id: String, spec: JobSpec, index: Int, claimedAt: UInt64) -> Verdict {
        let app = directory.apps[index]
        let policy = app.webpush?.policy ?? PushServicePolicy()
        var multicast: JobAttempt.Multicast?
        var single = spec
        if let subscriptions = spec.uniqueSubscriptions, let parts = spec.subscriptionJobParts(of: lease.job) {
            // A multicast is checked whole, every subscription, before it fans out (as `tokens` is).
            for subscription in subscriptions.dropFirst() {
                single.subscription = Array(subscription.utf8)
                if case .failure(let failure) = WebPushJob.message(single, policy: policy) {
                    return .rejected(id: id, reason: failure.description, spec: spec, app: app.name)
                }
            }
            single.subscription = Array(subscriptions[0].utf8)
            multicast = JobAttempt.Multicast(tokens: subscriptions, jobPrefix: parts.prefix, jobSuffix: parts.suffix)
        }
        let message: WebPushMessage
        switch WebPushJob.message(single, policy: policy) {
        case .success(let m): message = m
        case .failure(let failure): return .rejected(id: id, reason: failure.description, spec: spec, app: app.name)
        }
        let destination = Destination(app: index, environment: .production, platform: .webpush)
        return .accepted(JobAttempt(lease: lease, id: id, destination: destination, appName: app.name,
                                    notification: single.webPushNotification(message), claimedAt: claimedAt, deliverAt: spec.deliverAt,
                                    multicast: multicast, hasProducerID: spec.id != nil))
    }

    /// An FCM job for an FCM app (the only platform whose jobs carry a message object).
    private func admitFCM(_ lease: Lease, id: String, spec: JobSpec, index: Int, claimedAt: UInt64) -> Verdict {
        let app = directory.apps[index]
        let target: FCMTarget
        switch FCMMessageValidator.validate(spec.message) {
        case .success(let t): target = t
        case .failure(let failure): return .rejected(id: id, reason: failure.description, spec: spec, app: app.name)
        }
        let destination = Destination(app: index, environment: .production, platform: .fcm)
        return .accepted(JobAttempt(lease: lease, id: id, destination: destination, appName: app.name,
                                    notification: spec.fcmNotification(target: target), claimedAt: claimedAt, deliverAt: spec.deliverAt,
                                    hasProducerID: spec.id != nil))
    }
}

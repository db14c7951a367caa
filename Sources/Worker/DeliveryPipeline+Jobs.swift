import APNs
import APNsHTTP2
import Foundation
import HTTP2
import Reactor
import RedisQueue

/// Per job: parse and validate, send over the app's pool (one probe while a credential is unproven), decide,
/// and the pauses that credential errors cause.
extension DeliveryPipeline {
    func process(_ lease: Lease, claimedAt: UInt64) {
        let spec: JobSpec
        do {
            spec = try JobParser.parse(lease.job)
        } catch {
            reject(lease, id: lease.jobID ?? nextJobID(), reason: "\(error.code): \(error.description)", spec: nil, app: nil)
            return
        }
        let id = spec.id ?? lease.jobID ?? nextJobID()
        let index: Int
        do {
            index = try directory.index(app: spec.app, topic: spec.topic)
        } catch {
            reject(lease, id: id, reason: "UnknownApp: \(error.description)", spec: spec, app: spec.app)
            return
        }
        let slot = slots[index]
        let app = slot.settings
        let environment = spec.environment ?? APNsEnvironment(rawValue: app.defaultEnvironment) ?? .production
        guard app.environments.contains(environment.rawValue) else {
            reject(lease, id: id, reason: "BadEnvironment: app '\(app.name)' is not configured for \(environment.rawValue)", spec: spec, app: app.name)
            return
        }
        let topic: String
        if let given = spec.topic {
            topic = given
        } else if let derived = spec.pushType.topic(forBundleID: app.bundleID) {
            topic = derived
        } else {
            reject(lease, id: id, reason: "MissingTopic: push type \(spec.pushType.rawValue) needs an explicit topic", spec: spec, app: app.name)
            return
        }
        let notification = spec.notification(topic: topic, environment: environment)
        if let failure = NotificationValidator.validate(notification, bundleID: spec.pushType == .mdm ? nil : app.bundleID) {
            reject(lease, id: id, reason: "\(failure.reason.rawValue): \(failure.message)", spec: spec, app: app.name)
            return
        }
        let job = JobAttempt(lease: lease, id: id, appIndex: index, notification: notification, claimedAt: claimedAt)
        send(job)
    }

    func send(_ job: JobAttempt, gated: Bool = true) {
        // Once shutdown has returned the leases, another worker owns these jobs: send nothing more.
        guard phase != .stopped else { return }
        let slot = slots[job.appIndex]
        if slot.isPaused {
            deferJob(job, reason: slot.pauseReason, until: slot.pausedUntil)
            return
        }
        if gated, !slot.credentialProven, let probe = slot.probe, probe !== job {
            slot.waitingForProbe.append(job)
            return
        }
        let client: APNsClient
        do {
            client = try slot.client(for: job.notification.environment, loop: loop, apns: configuration.apns) { [weak self] event in
                self?.logPoolEvent(event, app: slot.settings.name)
            }
        } catch {
            pauseApp(slot, reason: "connection set-up failed: \(error)", credential: false)
            deferJob(job, reason: slot.pauseReason, until: slot.pausedUntil)
            return
        }
        if gated, !slot.credentialProven, slot.probe == nil { slot.probe = job }
        let accepted = client.send(job.notification, afterConnection: job.afterConnection) { [weak self] outcome in
            self?.handle(job, outcome: outcome, client: client)
        }
        if !accepted {
            if slot.probe === job { slot.probe = nil }
            backlog.append(job)
        }
    }

    /// The probe's answer decides for the jobs that waited on it: sent (credential works), deferred (the app
    /// is now paused), or the next one becomes the probe (no answer from APNs).
    func releaseWaiting(_ slot: AppSlot, gated: Bool) {
        let jobs = slot.waitingForProbe
        slot.waitingForProbe.removeAll()
        for job in jobs { send(job, gated: gated) }
    }

    func handle(_ job: JobAttempt, outcome: APNsClient.Outcome, client: APNsClient) {
        client.handleConnectionAdvice(outcome, advice: policy.connectionAdvice(outcome.result))
        let now = wallClockMillis()
        let decision = policy.decide(outcome.result, attempt: job.attempt, expiration: job.notification.expiration, nowSeconds: now / 1000)
        let slot = slots[job.appIndex]
        var answeredProbe: Bool? = nil
        if slot.probe === job {
            slot.probe = nil
            if case .response = outcome.result {
                answeredProbe = true
                // From the answer itself, not the final decision: an expired job turns a credential error
                // into `fail(Expired)`, which must not count as proof that the key works.
                let raw = policy.decide(outcome.result, attempt: 1, expiration: nil, nowSeconds: 0)
                if case .deferForConfiguration = raw {} else { slot.credentialProven = true }
            } else {
                answeredProbe = false
            }
        }
        defer {
            // After the decision (a credential error has paused the app by now). Without an answer the probe
            // proved nothing: the waiting jobs then go on their own rather than queue behind each other's
            // connection failures.
            if let answeredProbe, slot.probe == nil, !slot.waitingForProbe.isEmpty { releaseWaiting(slot, gated: answeredProbe) }
        }
        var status = 0
        var apnsID: String? = nil
        var uniqueID: String? = nil
        if case .response(let response) = outcome.result {
            status = response.status
            apnsID = response.apnsID
            uniqueID = response.apnsUniqueID
        }
        var entry = ResultEntry(
            id: job.id, outcome: .delivered, status: status, token: job.notification.deviceToken, topic: job.notification.topic,
            environment: job.notification.environment.rawValue, app: slots[job.appIndex].settings.name, apnsID: apnsID,
            apnsUniqueID: uniqueID, attempt: job.attempt, latencyMilliseconds: job.latencyMilliseconds, worker: workerID)
        var completion = JobCompletion(lease: job.lease)
        switch decision {
        case .delivered:
            counters.delivered += 1
        case .dropToken(let invalidSince, let reason):
            entry.outcome = .tokenDropped
            entry.reason = reason
            entry.invalidSince = invalidSince
            completion.droppedToken = DroppedToken(
                token: job.notification.deviceToken, topic: job.notification.topic,
                environment: job.notification.environment.rawValue, reason: reason, invalidSince: invalidSince)
            counters.tokensDropped += 1
        case .fail(let reason):
            entry.outcome = .failed
            entry.reason = reason
            counters.failed += 1
        case .retry(let ms, let reason):
            entry.outcome = .retrying
            entry.reason = reason
            entry.retryAt = now + ms
            completion.retry = (now + ms, JobEnvelope.wrap(job: job.lease.job, attempt: job.attempt + 1, id: job.id, queue: job.lease.queueKey))
            counters.retrying += 1
        case .resendNow(let fresh, _):
            counters.resent += 1
            job.attempt += 1
            if fresh { job.afterConnection = max(job.afterConnection, outcome.connectionID) }
            send(job)
            return
        case .deferForConfiguration(let reason):
            let slot = slots[job.appIndex]
            pauseApp(slot, reason: reason)
            deferJob(job, reason: reason, until: slot.pausedUntil)
            return
        }
        if case .response(let response) = outcome.result, decision != .delivered, entry.reason == nil {
            entry.reason = response.reason?.rawValue
        }
        record(completion, entry: entry)
    }

    /// Keeps the job for later without spending an attempt: the job is not at fault.
    func deferJob(_ job: JobAttempt, reason: String, until monotonicDeadline: UInt64) {
        let now = wallClockMillis()
        let waitMs = Int64(max(0, Int64(bitPattern: monotonicDeadline &- monotonicNanos()) / 1_000_000))
        let due = now + max(waitMs, 1000)
        var entry = ResultEntry(
            id: job.id, outcome: .retrying, status: 0, reason: "AppPaused: " + reason, token: job.notification.deviceToken,
            topic: job.notification.topic, environment: job.notification.environment.rawValue,
            app: slots[job.appIndex].settings.name, attempt: job.attempt, retryAt: due,
            latencyMilliseconds: job.latencyMilliseconds, worker: workerID)
        entry.status = 0
        var completion = JobCompletion(lease: job.lease)
        completion.retry = (due, JobEnvelope.wrap(job: job.lease.job, attempt: job.attempt, id: job.id, queue: job.lease.queueKey))
        counters.retrying += 1
        record(completion, entry: entry)
    }

    /// `credential`: APNs refused the credential (false: the connection could not even be set up).
    func pauseApp(_ slot: AppSlot, reason: String, credential: Bool = true) {
        if slot.isPaused { return }
        let seconds = max(1, Int(configuration.retry.configurationPauseSeconds))
        slot.pausedUntil = monotonicNanos() &+ UInt64(seconds) * 1_000_000_000
        slot.pauseReason = reason
        slot.pauseGeneration += 1
        let generation = slot.pauseGeneration
        logger.error(credential ? "app paused: credential rejected" : "app paused: connection set-up failed", [
            "app": .string(slot.settings.name), "reason": .string(reason), "pause_s": .int(seconds),
            "hint": .string(credential
                ? "check key_id, team_id, key_file, bundle_id and environment (herald check-config)"
                : "check apns.ca_file, the certificate files and apns.proxy (herald check-config)"),
        ])
        loop.schedule(afterMilliseconds: seconds * 1000) { [weak self, weak slot] in
            // Only the pause that scheduled this timer ends here; a later pause has its own.
            guard let self, let slot, self.phase == .running, slot.pauseGeneration == generation else { return }
            do {
                try slot.reloadCredentials(apns: self.configuration.apns)
                slot.pausedUntil = 0
                self.logger.info("app resumed", ["app": .string(slot.settings.name)])
            } catch {
                slot.pausedUntil = 0
                self.pauseApp(slot, reason: "credential reload failed: \(error)")
            }
        }
    }

    func reject(_ lease: Lease, id: String, reason: String, spec: JobSpec?, app: String?) {
        var completion = JobCompletion(lease: lease)
        completion.deadLetter(reason: reason, at: wallClockMillis())
        let entry = ResultEntry(
            id: id, outcome: .rejected, status: 0, reason: reason, token: spec?.token, topic: spec?.topic,
            environment: spec?.environment?.rawValue, app: app, attempt: lease.attempt, latencyMilliseconds: 0, worker: workerID)
        counters.rejected += 1
        logger.info("job rejected", ["id": .string(id), "reason": .string(reason)])
        record(completion, entry: entry)
    }
}

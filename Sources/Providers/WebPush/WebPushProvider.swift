import Foundation
import ProviderKit
import PushCore
import Reactor

/// Web Push (RFC 8030/8291/8292) for the worker: apps with a `webpush` VAPID key, `WebPushSender` (a pool per
/// push-service origin), and the subscription, payload size, headers and endpoint policy checked before anything
/// is sent.
public enum WebPushProvider: PushProvider {
    public static var platform: Platform { WebPushAuth.platform }
    public static var section: WritableKeyPath<Configuration, WebPushSettings> { \.webPush }
    public static let credentialBlocks: [Setting<Configuration.AppSettings>] = [credentialBlock(\.webpush, blank: .blank, WebPushAuth.declared)]

    /// The `web_push.*` settings are bounded where they are declared; nothing here spans them.
    public static func problems(_ configuration: Configuration) -> [String] { [] }

    public static func problems(_ app: Configuration.AppSettings, label: String) -> [String] {
        guard let webpush = app.webpush else { return ["\(label): webpush (vapid_key or vapid_key_file, subject) is required"] }
        var problems: [String] = []
        if webpush.vapidKey.isEmpty && webpush.vapidKeyFile == nil { problems.append("\(label): webpush.vapid_key or webpush.vapid_key_file is required") }
        if webpush.subject.isEmpty { problems.append("\(label): webpush.subject is required (mailto:<address> or an https: URL)") }
        if webpush.policy.hosts.isEmpty { problems.append("\(label): webpush.push_service_hosts must not be empty") }
        return problems
    }

    /// Reads the key and its public point, then signs a test VAPID token: a key that cannot sign fails here, at
    /// `check-config` and at the worker's start alike.
    public static func loadCredential(_ app: Configuration.AppSettings, configuration: Configuration) throws -> any Sendable {
        guard let webpush = app.webpush else { throw ConfigurationError(["app '\(app.name)' has no webpush VAPID key"]) }
        let credential = try webpush.load()
        _ = try credential.tokens.signer.token(audience: "https://check-config.invalid", expiresAt: Int64(Date().timeIntervalSince1970) + 60)
        return credential
    }

    public static func credentialFiles(_ app: Configuration.AppSettings) -> [String] { app.webpush?.vapidKeyFile.map { [$0] } ?? [] }

    public static func warnings(_ app: Configuration.AppSettings) -> [String] { app.webpush?.policy.warnings(label: "app '\(app.name)'") ?? [] }

    public static func checkedLine(_ app: Configuration.AppSettings, credential: any Sendable) -> String {
        guard let webpush = credential as? WebPushCredential else { return "(webpush)" }
        let signer = webpush.tokens.signer
        return "(webpush, \(signer.subject)): signed a test VAPID token; applicationServerKey \(signer.key.applicationServerKey)"
    }

    public static func makeSender(credentials: [AppCredentials], loop: EventLoop, configuration: Configuration, logger: Logger) -> PushSender {
        WebPushSender(apps: apps(credentials) { $0.webpush }, loop: loop, settings: configuration.webPush, logger: logger)
    }

    public static var jobMembers: [JobMember] { WebPushJobMembers.members }

    public static func readJob(_ job: [UInt8], spec: JobSpec) throws(JobError) -> WebPushJobMembers { try WebPushJobMembers.read(job, spec: spec) }

    public static func admit(job: [UInt8], spec: JobSpec, read: WebPushJobMembers, app: Configuration.AppSettings, index: Int) throws(AdmissionRefusal) -> AdmittedJob {
        let policy = app.webpush?.policy ?? PushServicePolicy()
        var multicast: JobMulticast?
        var single = read
        if let subscriptions = read.uniqueSubscriptions, let parts = read.subscriptionJobParts(of: job) {
            // A multicast is checked whole, every subscription, before it fans out (as `tokens` is).
            for subscription in subscriptions.dropFirst() {
                single.subscription = Array(subscription.utf8)
                if case .failure(let failure) = WebPushJob.message(single, topic: spec.topic, policy: policy) {
                    throw AdmissionRefusal(failure.description)
                }
            }
            single.subscription = Array(subscriptions[0].utf8)
            multicast = JobMulticast(tokens: subscriptions, jobPrefix: parts.prefix, jobSuffix: parts.suffix)
        }
        let message: WebPushMessage
        switch WebPushJob.message(single, topic: spec.topic, policy: policy) {
        case .success(let m): message = m
        case .failure(let failure): throw AdmissionRefusal(failure.description)
        }
        // Per push service: one unreachable or refusing origin pauses its own jobs, never the app's others.
        let destination = Destination(app: index, environment: .production, platform: .webpush, route: message.subscription.endpoint.origin)
        return AdmittedJob(destination: destination, notification: single.notification(message, expiration: spec.expiration), multicast: multicast)
    }

    public static func credentialHint(reason: String) -> String { WebPushSender.credentialHint(reason) }

    /// Push services answer with a status and free text, not a documented code: the label is "" or `other`.
    public static let metricsReasons: [String] = []

    public static func wrongPlatformDetail(job: Platform, given: Bool) -> String {
        given ? "the job says platform \(job.rawValue)" : "the job has no \"subscription\" (the browser's PushSubscription)"
    }
}

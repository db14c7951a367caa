import FCM
import PushCore
import Reactor
import RedisQueue

/// FCM HTTP v1 for the worker: apps with an `fcm` service account, `FCMSender`, and the message object's rules
/// (`FCMMessageValidator`) applied before anything is sent.
enum FCMProvider: PushProvider {
    static var section: WritableKeyPath<Configuration, FCMSettings> { \.fcm }
    static let credentialBlocks: [Setting<Configuration.AppSettings>] = [credentialBlock(FCMAuth.key, \.fcm, blank: .blank, FCMAuth.declared)]

    static func owns(_ app: Configuration.AppSettings) -> Bool { app.fcm != nil }

    static func problems(_ configuration: Configuration) -> [String] {
        HTTPSURL(configuration.fcm.url) == nil ? ["fcm.url must look like https://host[:port], got '\(configuration.fcm.url)'"] : []
    }

    static func problems(_ app: Configuration.AppSettings, label: String) -> [String] {
        var problems: [String] = []
        if app.fcm?.serviceAccountFile.isEmpty ?? true { problems.append("\(label): fcm.service_account_file is required") }
        if app.environmentFallback { problems.append("\(label): environment_fallback is for APNs apps") }
        return problems
    }

    static func loadCredential(_ app: Configuration.AppSettings, configuration: Configuration) throws -> any Sendable {
        guard let fcm = app.fcm else { throw ConfigurationError(["app '\(app.name)' has no fcm service account"]) }
        return try fcm.load()
    }

    static func credentialFiles(_ app: Configuration.AppSettings) -> [String] { app.fcm.map { [$0.serviceAccountFile] } ?? [] }

    static func checkedLine(_ app: Configuration.AppSettings, credential: any Sendable) -> String {
        guard let account = credential as? ServiceAccount else { return "(fcm)" }
        // Loading signed an RS256 assertion with the key; the key itself is never printed.
        return "(fcm, project \(account.projectID)): signed a test assertion as \(account.clientEmail)"
    }

    static func makeSender(credentials: [AppCredentials], loop: EventLoop, configuration: Configuration, logger: Logger) -> PushSender {
        FCMSender(apps: apps(credentials) { $0.fcm }, loop: loop, fcm: configuration.fcm, logger: logger)
    }

    static func admit(_ lease: Lease, id: String, spec: JobSpec, app: Configuration.AppSettings, index: Int,
                      claimedAt: UInt64) -> JobIntake.Verdict {
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

    static func credentialHint(reason: String) -> String { FCMSender.credentialHint(reason) }

    static var metricsReasons: [String] { FCMResponse.metricsReasons }

    static func wrongPlatformDetail(job: Platform, given: Bool) -> String {
        given ? "the job says platform \(job.rawValue)" : "the job has no \"message\" (the FCM v1 message object)"
    }
}

import ProviderKit
import PushCore
import Reactor

/// FCM HTTP v1 for the worker: apps with an `fcm` service account, `FCMSender`, and the message object's rules
/// (`FCMMessageValidator`) applied before anything is sent.
public enum FCMProvider: PushProvider {
    public static var platform: Platform { FCMAuth.platform }
    public static var section: WritableKeyPath<Configuration, FCMSettings> { \.fcm }
    public static let credentialBlocks: [Setting<Configuration.AppSettings>] = [credentialBlock(\.fcm, blank: .blank, FCMAuth.declared)]

    public static func problems(_ configuration: Configuration) -> [String] {
        HTTPSURL(configuration.fcm.url) == nil ? ["fcm.url must look like https://host[:port], got '\(configuration.fcm.url)'"] : []
    }

    public static func problems(_ app: Configuration.AppSettings, label: String) -> [String] {
        var problems: [String] = []
        if app.fcm?.serviceAccountFile.isEmpty ?? true { problems.append("\(label): fcm.service_account_file is required") }
        if app.environmentFallback { problems.append("\(label): environment_fallback is for APNs apps") }
        return problems
    }

    public static func loadCredential(_ app: Configuration.AppSettings, configuration: Configuration) throws -> any Sendable {
        guard let fcm = app.fcm else { throw ConfigurationError(["app '\(app.name)' has no fcm service account"]) }
        return try fcm.load()
    }

    public static func credentialFiles(_ app: Configuration.AppSettings) -> [String] { app.fcm.map { [$0.serviceAccountFile] } ?? [] }

    public static func checkedLine(_ app: Configuration.AppSettings, credential: any Sendable) -> String {
        guard let account = credential as? ServiceAccount else { return "(fcm)" }
        // Loading signed an RS256 assertion with the key; the key itself is never printed.
        return "(fcm, project \(account.projectID)): signed a test assertion as \(account.clientEmail)"
    }

    public static func makeSender(credentials: [AppCredentials], loop: EventLoop, configuration: Configuration, logger: Logger) -> PushSender {
        FCMSender(apps: apps(credentials) { $0.fcm }, loop: loop, fcm: configuration.fcm, logger: logger)
    }

    /// `message`: its own message object, which names its targets (without a payload, the shape of an FCM job).
    public static let jobMembers = [JobMember("message", shape: .impliesPlatform(withoutPayload: true))]

    public static func readJob(_ job: [UInt8], spec: JobSpec) throws(JobError) -> [UInt8] { try spec.readMessage(of: platform, in: job) }

    public static func admit(job: [UInt8], spec: JobSpec, read message: [UInt8], app: Configuration.AppSettings, index: Int) throws(AdmissionRefusal) -> AdmittedJob {
        let target: FCMTarget
        switch FCMMessageValidator.validate(message) {
        case .success(let t): target = t
        case .failure(let failure): throw AdmissionRefusal(failure.description)
        }
        let destination = Destination(app: index, environment: .production, platform: .fcm)
        return AdmittedJob(destination: destination, notification: spec.fcmNotification(message: message, target: target))
    }

    public static func credentialHint(reason: String) -> String { FCMSender.credentialHint(reason) }

    public static var metricsReasons: [String] { FCMResponse.metricsReasons }

    public static func wrongPlatformDetail(job: Platform, given: Bool) -> String {
        given ? "the job says platform \(job.rawValue)" : "the job has no \"message\" (the FCM v1 message object)"
    }
}

import ProviderKit
import PushCore
import Reactor

/// Expo's push service for the worker: apps with an `expo` access token file, `ExpoSender` (tickets, batched), the
/// message rules (`ExpoMessageRules`, `ExpoPushToken`) applied before anything is sent, and its second phase: the
/// receipts (`ReceiptPhase`, `ExpoReceipts`) that decide each ticket's outcome.
public enum ExpoProvider: PushProvider, ReceiptPhase {
    public static var platform: Platform { ExpoAuth.platform }
    public static var section: WritableKeyPath<Configuration, ExpoSettings> { \.expo }
    public static let credentialBlocks: [Setting<Configuration.AppSettings>] = [credentialBlock(\.expo, blank: .blank, ExpoAuth.declared)]

    /// A bound shorter than the delay is allowed (every value within its range is): the first ask is then the last.
    public static func problems(_ configuration: Configuration) -> [String] {
        HTTPSURL(configuration.expo.pool.url) == nil ? ["expo.url must look like https://host[:port], got '\(configuration.expo.pool.url)'"] : []
    }

    public static func problems(_ app: Configuration.AppSettings, label: String) -> [String] {
        var problems: [String] = []
        if app.expo?.accessTokenFile.isEmpty ?? true { problems.append("\(label): expo.access_token_file is required") }
        if app.environmentFallback { problems.append("\(label): environment_fallback is for APNs apps") }
        return problems
    }

    public static func loadCredential(_ app: Configuration.AppSettings, configuration: Configuration) throws -> any Sendable {
        guard let expo = app.expo else { throw ConfigurationError(["app '\(app.name)' has no expo credential"]) }
        return try expo.load()
    }

    public static func credentialFiles(_ app: Configuration.AppSettings) -> [String] { app.expo.map { [$0.accessTokenFile] } ?? [] }

    public static func checkedLine(_ app: Configuration.AppSettings, credential: any Sendable) -> String { "(expo): access token read" }

    public static func makeSender(credentials: [AppCredentials], loop: EventLoop, configuration: Configuration, logger: Logger) -> PushSender {
        ExpoSender(apps: apps(credentials) { $0.expo }, loop: loop, expo: configuration.expo, logger: logger)
    }

    public static var jobMembers: [JobMember] { ExpoJob.members }

    public static func readJob(_ job: [UInt8], spec: JobSpec) throws(JobError) -> ExpoJob { try ExpoJob.read(job, spec: spec) }

    public static func admit(job: [UInt8], spec: JobSpec, read: ExpoJob, app: Configuration.AppSettings, index: Int) throws(AdmissionRefusal) -> AdmittedJob {
        if let refusal = ExpoMessageRules.validate(spec.payload) { throw AdmissionRefusal(refusal.description) }
        // A list fans out into one job per token (each checked already), as an APNs `tokens` multicast does.
        let multicast = read.jobParts(of: job).map { parts in
            JobMulticast(tokens: read.tokens.map { "\"" + $0 + "\"" }, jobPrefix: parts.prefix, jobSuffix: parts.suffix)
        }
        let notification = PushNotification(deviceToken: read.tokens[0], topic: spec.topic ?? "", environment: .production,
                                            expiration: spec.expiration, payload: spec.payload, platform: .expo)
        return AdmittedJob(destination: Destination(app: index, environment: .production, platform: .expo), notification: notification,
                           multicast: multicast)
    }

    public static func credentialHint(reason: String) -> String { ExpoSender.credentialHint(reason) }

    public static var metricsReasons: [String] { ExpoResponse.metricsReasons }

    public static func wrongPlatformDetail(job: Platform, given: Bool) -> String {
        given ? "the job says platform \(job.rawValue)" : "the job has no \"platform\":\"expo\""
    }

    // MARK: the second phase

    public static func receiptSchedule(_ configuration: Configuration) -> ReceiptSchedule { configuration.expo.receiptSchedule }

    public static func askReceipts(_ tickets: [String], app: AppCredentials, configuration: Configuration) -> Result<[String: ReceiptVerdict], ReceiptAskFailure> {
        guard let credential = app.credential as? ExpoCredential else { return .failure(ReceiptAskFailure("app '\(app.app.name)' has no Expo credential")) }
        return ExpoReceipts.ask(tickets, credential: credential, settings: configuration.expo)
    }
}

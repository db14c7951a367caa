import ProviderKit
import PushCore
import Reactor

/// The echo provider: apps with an `echo` key file, `EchoSender`, jobs of a token, a payload and a `note`.
public enum EchoProvider: PushProvider {
    public static var platform: Platform { .echo }
    public static var section: WritableKeyPath<Configuration, EchoSettings> { \.echo }
    public static let credentialBlocks: [Setting<Configuration.AppSettings>] = [credentialBlock(\.echo, blank: .blank, EchoAuth.declared)]

    public static func problems(_ configuration: Configuration) -> [String] {
        HTTPSURL(configuration.echo.pool.url) == nil ? ["echo.url must look like https://host[:port][/path], got '\(configuration.echo.pool.url)'"] : []
    }

    public static func problems(_ app: Configuration.AppSettings, label: String) -> [String] {
        var problems: [String] = []
        if app.echo?.keyFile.isEmpty ?? true { problems.append("\(label): echo.key_file is required") }
        if app.environmentFallback { problems.append("\(label): environment_fallback is for APNs apps") }
        return problems
    }

    public static func loadCredential(_ app: Configuration.AppSettings, configuration: Configuration) throws -> any Sendable {
        guard let echo = app.echo else { throw ConfigurationError(["app '\(app.name)' has no echo credential"]) }
        return try echo.load()
    }

    public static func credentialFiles(_ app: Configuration.AppSettings) -> [String] { app.echo.map { [$0.keyFile] } ?? [] }

    public static func checkedLine(_ app: Configuration.AppSettings, credential: any Sendable) -> String { "(echo): key read" }

    public static func makeSender(credentials: [AppCredentials], loop: EventLoop, configuration: Configuration, logger: Logger) -> PushSender {
        EchoSender(apps: apps(credentials) { $0.echo }, loop: loop, settings: configuration.echo, logger: logger)
    }

    public static let jobMembers = EchoJob.members

    public static func readJob(_ job: [UInt8], spec: JobSpec) throws(JobError) -> EchoJob { try EchoJob.read(job, spec: spec) }

    public static func admit(job: [UInt8], spec: JobSpec, read: EchoJob, app: Configuration.AppSettings, index: Int) throws(AdmissionRefusal) -> AdmittedJob {
        AdmittedJob(destination: Destination(app: index, environment: .production, platform: platform),
                    notification: PushNotification(deviceToken: read.token, topic: spec.topic ?? "", environment: .production,
                                                   expiration: spec.expiration, payload: spec.payload, platform: platform,
                                                   provider: EchoFields(note: read.note)))
    }

    public static func credentialHint(reason: String) -> String { "check the app's echo.key_file" }

    public static var metricsReasons: [String] { EchoResponse.metricsReasons }

    public static func wrongPlatformDetail(job: Platform, given: Bool) -> String {
        given ? "the job says platform \(job.rawValue)" : "the job has no \"platform\":\"echo\""
    }
}

import ProviderKit
import PushCore
import Reactor

/// APNs for the worker: apps with a `token` or `certificate` (and, as the first provider, any app that names no
/// other provider's credential), `APNsSender`, and Apple's rules for a job (environment, topic, multicast,
/// `NotificationValidator`) applied before anything is sent.
public enum APNsProvider: PushProvider {
    public static var platform: Platform { APNsTokenAuth.platform }
    public static var section: WritableKeyPath<Configuration, APNsSettings> { \.apns }
    public static let credentialBlocks: [Setting<Configuration.AppSettings>] = [
        credentialBlock(\.token, blank: .blank, APNsTokenAuth.declared),
        credentialBlock(\.certificate, blank: .blank, APNsCertificateAuth.declared),
    ]

    public static func problems(_ configuration: Configuration) -> [String] {
        let apns = configuration.apns
        return [("apns.production_url", apns.productionURL), ("apns.sandbox_url", apns.sandboxURL),
                ("apns.channels_production_url", apns.channelsProductionURL), ("apns.channels_sandbox_url", apns.channelsSandboxURL)]
            .compactMap { name, url in HTTPSURL(url) == nil ? "\(name) must look like https://host[:port], got '\(url)'" : nil }
    }

    public static func problems(_ app: Configuration.AppSettings, label: String) -> [String] {
        var problems: [String] = []
        if app.bundleID.isEmpty { problems.append("\(label): bundle_id is required") }
        for environment in app.environments where APNsEnvironment(rawValue: environment) == nil {
            problems.append("\(label): environment '\(environment)' is not production or sandbox")
        }
        if app.environmentFallback && !(app.environments.contains("production") && app.environments.contains("sandbox")) {
            problems.append("\(label): environment_fallback needs both production and sandbox in its environments")
        }
        if !app.environments.contains(app.defaultEnvironment) {
            problems.append("\(label): default_environment '\(app.defaultEnvironment)' is not among its environments")
        }
        switch (app.token, app.certificate) {
        case (nil, nil): problems.append("\(label): needs \"token\" (team_id, key_id, key_file), \"certificate\" or \"fcm\" (service_account_file) credentials")
        case (.some, .some): problems.append("\(label): give either \"token\" or \"certificate\", not both")
        case (let token?, nil):
            if token.teamID.count != 10 { problems.append("\(label): token.team_id must be 10 characters") }
            if token.keyID.count != 10 { problems.append("\(label): token.key_id must be 10 characters") }
            if token.keyFile.isEmpty { problems.append("\(label): token.key_file is required") }
        case (nil, let cert?):
            if cert.pkcs12File == nil && cert.pemFile == nil { problems.append("\(label): certificate needs pem_file (+ key_file) or pkcs12_file") }
        }
        return problems
    }

    public static func loadCredential(_ app: Configuration.AppSettings, configuration: Configuration) throws -> any Sendable {
        try APNsCredential.load(app.apnsAuth, caFile: configuration.apns.caFile)
    }

    public static func credentialFiles(_ app: Configuration.AppSettings) -> [String] { app.apnsAuth.files }

    public static func checkedLine(_ app: Configuration.AppSettings, credential: any Sendable) -> String {
        "(\(app.bundleID)): " + (app.token.map { "signed a test token with key \($0.keyID)" } ?? "client certificate loaded")
    }

    public static func makeSender(credentials: [AppCredentials], loop: EventLoop, configuration: Configuration, logger: Logger) -> PushSender {
        APNsSender(apps: apps(credentials) { $0.apnsAuth }, loop: loop, apns: configuration.apns, logger: logger)
    }

    public static var jobMembers: [JobMember] { APNsJob.members }

    public static func readJob(_ job: [UInt8], spec: JobSpec) throws(JobError) -> APNsJob { try APNsJob.read(job, spec: spec) }

    public static func rejectedFields(_ read: APNsJob) -> RejectedJobFields {
        RejectedJobFields(environment: read.environment?.rawValue, channel: read.channel)
    }

    public static func admit(job: [UInt8], spec: JobSpec, read: APNsJob, app: Configuration.AppSettings, index: Int) throws(AdmissionRefusal) -> AdmittedJob {
        let environment = read.environment ?? APNsEnvironment(rawValue: app.defaultEnvironment) ?? .production
        guard app.environments.contains(environment.rawValue) else {
            throw AdmissionRefusal("BadEnvironment: app '\(app.name)' is not configured for \(environment.rawValue)")
        }
        let topic: String
        if read.channel != nil {
            // A broadcast carries no apns-topic: the bundle ID goes into its path.
            topic = app.bundleID
        } else if let given = spec.topic {
            topic = given
        } else if let derived = read.pushType.topic(forBundleID: app.bundleID) {
            topic = derived
        } else {
            throw AdmissionRefusal("MissingTopic: push type \(read.pushType.rawValue) needs an explicit topic")
        }
        var notification = read.notification(spec, topic: topic, environment: environment, bundleID: app.bundleID)
        let multicast = spec.uniqueTokens.flatMap { tokens in
            spec.tokenJobParts(of: job).map { JobMulticast(tokens: tokens, jobPrefix: $0.prefix, jobSuffix: $0.suffix) }
        }
        // A multicast job is checked once, with its first token (every token's format was checked when parsed).
        if let multicast { notification.deviceToken = multicast.tokens[0] }
        if let failure = NotificationValidator.validate(notification, bundleID: read.pushType == .mdm ? nil : app.bundleID, fromParsedJob: true) {
            throw AdmissionRefusal("\(failure.reason.rawValue): \(failure.message)")
        }
        let destination = Destination(app: index, environment: environment)
        return AdmittedJob(destination: destination, notification: notification, multicast: multicast)
    }

    public static func credentialHint(reason: String) -> String {
        "check key_id, team_id, key_file, bundle_id and environment (herald check-config)"
    }

    /// Every reason Apple documents, each once.
    public static let metricsReasons: [String] = {
        var seen = Set<APNsReason>()
        return APNsReason.allKnown.compactMap { seen.insert($0.reason).inserted ? $0.reason.rawValue : nil }
    }()

    public static func wrongPlatformDetail(job: Platform, given: Bool) -> String {
        "an \(job.displayName) job needs an \(job.displayName) app"
    }

    public static func environments(of app: Configuration.AppSettings) -> [String] { app.environments }

    /// Apple answers BadDeviceToken to a token of the other environment too: an app with both tries that one once.
    public static func fallbackEnvironment(after answer: any ProviderAnswer, in environment: APNsEnvironment,
                                    of app: Configuration.AppSettings) -> APNsEnvironment? {
        guard (answer as? APNsResponse)?.reason == .badDeviceToken,
              app.environments.contains(APNsEnvironment.production.rawValue) && app.environments.contains(APNsEnvironment.sandbox.rawValue)
        else { return nil }
        return environment == .production ? .sandbox : .production
    }
}

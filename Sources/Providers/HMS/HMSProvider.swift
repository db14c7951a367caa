import ProviderKit
import PushCore
import Reactor

/// Huawei Push Kit for the worker: apps with an `hms` app ID and client secret, `HMSSender`, and Push Kit's
/// message rules (`HMSMessageValidator`) applied before anything is sent.
public enum HMSProvider: PushProvider {
    public static var platform: Platform { HMSAuth.platform }
    public static var section: WritableKeyPath<Configuration, HMSSettings> { \.hms }
    public static let credentialBlocks: [Setting<Configuration.AppSettings>] = [credentialBlock(\.hms, blank: .blank, HMSAuth.declared)]

    public static func problems(_ configuration: Configuration) -> [String] {
        [("hms.url", configuration.hms.pool.url), ("hms.token_url", configuration.hms.tokenURL)].compactMap { key, url in
            HTTPSURL(url) == nil ? "\(key) must look like https://host[:port][/path], got '\(url)'" : nil
        }
    }

    public static func problems(_ app: Configuration.AppSettings, label: String) -> [String] {
        var problems: [String] = []
        if app.hms?.appID.isEmpty ?? true { problems.append("\(label): hms.app_id is required") }
        if app.hms?.clientSecretFile.isEmpty ?? true { problems.append("\(label): hms.client_secret_file is required") }
        if app.environmentFallback { problems.append("\(label): environment_fallback is for APNs apps") }
        return problems
    }

    /// Reads the secret file; the exchange itself is check-config's (`prove`), so a worker whose token endpoint is
    /// down at start still starts and parks only this app's jobs.
    public static func loadCredential(_ app: Configuration.AppSettings, configuration: Configuration) throws -> any Sendable {
        guard let hms = app.hms else { throw ConfigurationError(["app '\(app.name)' has no hms credential"]) }
        return try hms.load()
    }

    public static func credentialFiles(_ app: Configuration.AppSettings) -> [String] { app.hms.map { [$0.clientSecretFile] } ?? [] }

    public static func checkedLine(_ app: Configuration.AppSettings, credential: any Sendable) -> String {
        "(hms, app \((credential as? HMSCredential)?.appID ?? "?")): client secret read"
    }

    /// check-config trades the client credentials for an access token once: a refused secret or an unreachable
    /// endpoint is a problem there. The token is never printed.
    public static func prove(_ app: Configuration.AppSettings, credential: any Sendable, configuration: Configuration) throws -> String? {
        guard let credential = credential as? HMSCredential else { return nil }
        switch HMSTokenGrant.exchange(credential, settings: configuration.hms)() {
        case .success(let answer): return "got an access token from \(configuration.hms.tokenURL) (expires in \(answer.lifetimeSeconds) s)"
        case .failure(.refused(let detail)), .failure(.unavailable(let detail)): throw ConfigurationError([detail])
        }
    }

    public static func makeSender(credentials: [AppCredentials], loop: EventLoop, configuration: Configuration, logger: Logger) -> PushSender {
        HMSSender(apps: apps(credentials) { $0.hms }, loop: loop, hms: configuration.hms, logger: logger)
    }

    /// `message`: its own message object, which names its targets.
    public static let jobMembers = [JobMember("message")]

    public static func readJob(_ job: [UInt8], spec: JobSpec) throws(JobError) -> [UInt8] { try spec.readMessage(of: platform, in: job) }

    public static func admit(job: [UInt8], spec: JobSpec, read message: [UInt8], app: Configuration.AppSettings, index: Int) throws(AdmissionRefusal) -> AdmittedJob {
        switch HMSMessageValidator.validate(message) {
        case .failure(let failure):
            throw AdmissionRefusal(failure.description)
        case .success(let target):
            // Several tokens: one request as written (Push Kit's many-token send), an outcome per token from its answer.
            let tokens: [String] = if case .tokens(let list) = target { list } else { [] }
            return AdmittedJob(destination: Destination(app: index, environment: .production, platform: .hms),
                               notification: spec.hmsNotification(message: message, target: target), batchTokens: tokens)
        }
    }

    public static func credentialHint(reason: String) -> String { HMSSender.credentialHint(reason) }

    public static var metricsReasons: [String] { HMSResponse.metricsReasons }

    public static func wrongPlatformDetail(job: Platform, given: Bool) -> String {
        given ? "the job says platform \(job.rawValue)" : "the job has no \"platform\":\"hms\" and Push Kit \"message\""
    }
}

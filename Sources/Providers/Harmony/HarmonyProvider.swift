import Foundation
import ProviderKit
import PushCore
import Reactor

/// HarmonyOS NEXT's Push Kit v3 for the worker: apps with a `harmony` service-account key file, `HarmonySender`, and
/// Push Kit's rules (`HarmonyRules`) applied before anything is sent. No environments; no dry run (v3 has
/// `testMessage`, which is delivered), so a `validate_only` job gets the local checks only.
public enum HarmonyProvider: PushProvider {
    public static var platform: Platform { HarmonyAuth.platform }
    public static var section: WritableKeyPath<Configuration, HarmonySettings> { \.harmony }
    public static let credentialBlocks: [Setting<Configuration.AppSettings>] = [credentialBlock(\.harmony, blank: .blank, HarmonyAuth.declared)]

    public static func problems(_ configuration: Configuration) -> [String] {
        HTTPSURL(configuration.harmony.pool.url) == nil
            ? ["harmony.url must look like https://host[:port][/path], got '\(configuration.harmony.pool.url)'"] : []
    }

    public static func problems(_ app: Configuration.AppSettings, label: String) -> [String] {
        var problems: [String] = []
        if app.harmony?.serviceAccountFile.isEmpty ?? true { problems.append("\(label): harmony.service_account_file is required") }
        if app.environmentFallback { problems.append("\(label): environment_fallback is for APNs apps") }
        return problems
    }

    /// Reads the key file and signs one JWT with it, so a key that cannot sign fails check-config and the start alike.
    public static func loadCredential(_ app: Configuration.AppSettings, configuration: Configuration) throws -> any Sendable {
        guard let harmony = app.harmony else { throw ConfigurationError(["app '\(app.name)' has no harmony credential"]) }
        let account = try harmony.load()
        _ = try HarmonyJWT.sign(account, issuedAt: Int64(Date().timeIntervalSince1970), lifetimeSeconds: Int64(configuration.harmony.jwtLifetimeSeconds))
        return account
    }

    public static func credentialFiles(_ app: Configuration.AppSettings) -> [String] { app.harmony.map { [$0.serviceAccountFile] } ?? [] }

    public static func checkedLine(_ app: Configuration.AppSettings, credential: any Sendable) -> String {
        guard let account = credential as? HarmonyServiceAccount else { return "(harmony)" }
        return "(harmony, project \(account.projectID), key \(account.keyID)): key read, PS256 JWT signed"
    }

    public static func makeSender(credentials: [AppCredentials], loop: EventLoop, configuration: Configuration, logger: Logger) -> PushSender {
        HarmonySender(apps: apps(credentials) { $0.harmony }, loop: loop, harmony: configuration.harmony, logger: logger)
    }

    public static var jobMembers: [JobMember] { HarmonyJob.members }

    public static func readJob(_ job: [UInt8], spec: JobSpec) throws(JobError) -> HarmonyJob { try HarmonyJob.read(job, spec: spec) }

    public static func admit(job: [UInt8], spec: JobSpec, read: HarmonyJob, app: Configuration.AppSettings, index: Int) throws(AdmissionRefusal) -> AdmittedJob {
        switch HarmonyRules.check(read) {
        case .failure(let refusal):
            throw AdmissionRefusal(refusal.description)
        case .success(let tokens):
            // Several tokens: one request (Push Kit's many-token send), an outcome per token from its answer.
            let fields = HarmonyFields(pushType: read.pushType, pushOptions: read.pushOptions, tokens: tokens)
            let notification = PushNotification(deviceToken: tokens[0], topic: "", environment: .production, expiration: spec.expiration,
                                                payload: read.payload, platform: .harmony, provider: fields)
            return AdmittedJob(destination: Destination(app: index, environment: .production, platform: .harmony),
                               notification: notification, batchTokens: tokens)
        }
    }

    public static func credentialHint(reason: String) -> String { HarmonySender.credentialHint(reason) }

    public static var metricsReasons: [String] { HarmonyResponse.metricsReasons }

    public static func wrongPlatformDetail(job: Platform, given: Bool) -> String {
        given ? "the job says platform \(job.rawValue)" : "the job has no \"platform\":\"harmony\""
    }
}

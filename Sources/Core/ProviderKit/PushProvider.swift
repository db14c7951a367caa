import PushCore
import Reactor

/// What a push provider brings to the worker, declared in its own module: which apps are its own, how their
/// credential is loaded and proven, its sender, its own job rules, and the words of its logs and rejections.
/// Static: a provider is a type the composition root lists (`heraldProviders`, in `Platform.allCases` order, handed
/// to the loader), never an object on the send path. Below the worker, so an adapter needs nothing of it.
public protocol PushProvider: SendableMetatype {
    /// The platform whose jobs it takes (its place in the list).
    static var platform: Platform { get }

    /// Its section of the configuration file (`apns.*`), declared in its module, and where the configuration keeps it.
    associatedtype Section: DeclaredSection
    static var section: WritableKeyPath<Configuration, Section> { get }

    /// The credential blocks of an app that make it this provider's (`fcm`; APNs' `token` or `certificate`).
    static var credentialBlocks: [Setting<Configuration.AppSettings>] { get }

    /// What is wrong with its own settings (`apns.*`, `fcm.*`), each problem naming its key.
    static func problems(_ configuration: Configuration) -> [String]

    /// What is wrong with one of its apps' settings, each problem after `label` ("app 'x'"); nothing is read yet.
    static func problems(_ app: Configuration.AppSettings, label: String) -> [String]

    /// Reads and proves an app's credential (a token signed, a TLS context made), so `herald check-config` and the
    /// worker's start fail the same way. What it returns only this provider's sender reads.
    static func loadCredential(_ app: Configuration.AppSettings, configuration: Configuration) throws -> any Sendable

    /// The files an app's credential reads (the permission warnings).
    static func credentialFiles(_ app: Configuration.AppSettings) -> [String]

    /// What in an app's settings runs but is risky (check-config and the worker's start warn, each line after
    /// "app 'x'"); none by default.
    static func warnings(_ app: Configuration.AppSettings) -> [String]

    /// `herald check-config`'s line for an app whose credential loaded (after "ok   app 'x' ").
    static func checkedLine(_ app: Configuration.AppSettings, credential: any Sendable) -> String

    /// `herald check-config`'s proof beyond loading (Huawei's token exchange): what it showed, nil when there is
    /// none; throws when the proof fails.
    static func prove(_ app: Configuration.AppSettings, credential: any Sendable, configuration: Configuration) throws -> String?

    /// Its sender for the apps of `credentials` that are its own (every app of the configuration, in order).
    static func makeSender(credentials: [AppCredentials], loop: EventLoop, configuration: Configuration, logger: Logger) -> PushSender

    /// Its own members of a job (`push_type`, `message`), declared here and sliced by the parser; `readJob` reads
    /// them by their index in this list.
    static var jobMembers: [JobMember] { get }

    /// Its reading of a job's members (`APNsJob`): made by `readJob`, handed to `admit`.
    associatedtype Job

    /// Reads and judges its members of a job (`spec`, parsed from `job`) and the envelope's parts it rules on (a
    /// token's form, the payload's kind), before anything else is looked at: a job it refuses is unreadable, with
    /// the parser's errors, and goes to the dead-letter list as one the parser refused.
    static func readJob(_ job: [UInt8], spec: JobSpec) throws(JobError) -> Job

    /// What a refused job's result entry names of it beyond the envelope (APNs' environment and channel).
    static func rejectedFields(_ read: Job) -> RejectedJobFields

    /// The provider's own rules for a job already read (`spec` and `read`, from the bytes `job`) and matched to one of
    /// its apps (`index` among the configuration's): its destination and notification, or why it is rejected.
    static func admit(job: [UInt8], spec: JobSpec, read: Job, app: Configuration.AppSettings, index: Int) throws(AdmissionRefusal) -> AdmittedJob

    /// Intake of one of its jobs: `readJob`, then `match` (the core's checks, and the app among `apps` they find), then
    /// `admit`.
    /// Its default (below) is the one to keep: a requirement so that each provider's copy is specialized to its
    /// `Job`, where a generic caller would handle it opaquely on every job.
    static func intake(job: [UInt8], spec: JobSpec, apps: [Configuration.AppSettings], match: (JobSpec) -> IntakeMatch) -> IntakeOutcome

    /// What to check when the provider refused an app's credential (the log of the pause it starts).
    static func credentialHint(reason: String) -> String

    /// The `reason` label values its answers' `metricsReason` can take (besides "" for success and `other`).
    static var metricsReasons: [String] { get }

    /// Why a job of platform `job` does not fit one of its apps (after "app 'x' is an <app> app; "). `given`: the
    /// job named its platform.
    static func wrongPlatformDetail(job: Platform, given: Bool) -> String

    /// The environments an app's destinations go to: the `environment` labels of its per-destination metrics.
    static func environments(of app: Configuration.AppSettings) -> [String]

    /// Its job for one device of a neutral notification (issue 50, docs/notifications.md): the complete job a producer
    /// would push for that device today, which its own `readJob` and `admit` take. By default it renders none
    /// (`not_rendered`): a provider without it cannot be in an audience send. Providers build it with `renderedJob`.
    static func render(_ notification: NeutralNotification, for device: RenderDevice) throws(NotificationError) -> [UInt8]

    /// Environment fallback (`environment_fallback`, opted into by the app): the other environment of `app` in
    /// which a job may be tried once more after `answer` in `environment`, or nil when the answer stands. The core
    /// applies it without knowing which answers or environments these are.
    static func fallbackEnvironment(after answer: any ProviderAnswer, in environment: ServiceEnvironment,
                                    of app: Configuration.AppSettings) -> ServiceEnvironment?
}

/// The core's word on a read job (`PushProvider.intake`): the index of the app it goes to, or why it is refused.
/// An index, not the app: an app's settings copied per job cost a retain of each of their strings.
public enum IntakeMatch {
    case matched(index: Int)
    case refused(reason: String, app: String?)
}

/// How intake of a job ended.
public enum IntakeOutcome {
    /// Its provider could not read it (`readJob`).
    case unreadable(JobError)
    /// Read, then refused: `fields` is what its result entry names of it beyond the envelope.
    case refused(reason: String, app: String?, fields: RejectedJobFields)
    case admitted(AdmittedJob)
}

/// What a refused job's result entry names of it beyond the envelope, as its provider read it.
public struct RejectedJobFields: Sendable {
    public var environment: String?
    public var channel: String?

    public init(environment: String? = nil, channel: String? = nil) {
        self.environment = environment
        self.channel = channel
    }
}

extension PushProvider {
    public static func warnings(_ app: Configuration.AppSettings) -> [String] { [] }

    @inlinable
    public static func intake(job: [UInt8], spec: JobSpec, apps: [Configuration.AppSettings], match: (JobSpec) -> IntakeMatch) -> IntakeOutcome {
        let read: Job
        do { read = try readJob(job, spec: spec) } catch { return .unreadable(error) }
        switch match(spec) {
        case .refused(let reason, let app):
            return .refused(reason: reason, app: app, fields: rejectedFields(read))
        case .matched(let index):
            do {
                return .admitted(try admit(job: job, spec: spec, read: read, app: apps[index], index: index))
            } catch {
                return .refused(reason: error.reason, app: apps[index].name, fields: rejectedFields(read))
            }
        }
    }

    public static func render(_ notification: NeutralNotification, for device: RenderDevice) throws(NotificationError) -> [UInt8] {
        throw NotificationError(code: "not_rendered", "\(platform.displayName) renders no neutral notification")
    }

    /// Nothing beyond the envelope.
    public static func rejectedFields(_ read: Job) -> RejectedJobFields { RejectedJobFields() }

    /// A job parsed as this provider's alone (its tests, tools that make its jobs): the envelope, then its members.
    public static func parse(_ bytes: [UInt8]) throws(JobError) -> (spec: JobSpec, read: Job) {
        let spec = try JobParser.parse(bytes, members: JobMemberTable([platform: jobMembers]))
        return (spec, try readJob(bytes, spec: spec))
    }

    /// Its section's settings, lifted under the section's key of the root.
    public static var settings: [Setting<Configuration>] { Section.declared.map { $0.lifted(section, prefix: sectionKey + ".") } }

    /// Its section's key at the top of the file.
    public static var sectionKey: String { Section.section }

    /// Whether an app's settings name this provider's credential (`fcm` for FCM, `token`/`certificate` for APNs).
    public static func owns(_ app: Configuration.AppSettings) -> Bool { app.credentials.platforms.contains(platform) }

    /// Without environments of its own, every destination of the provider is in `production` (as its `admit` makes it).
    public static func environments(of app: Configuration.AppSettings) -> [String] { [ServiceEnvironment.production.rawValue] }

    /// No environment to fall back to.
    public static func fallbackEnvironment(after answer: any ProviderAnswer, in environment: ServiceEnvironment,
                                           of app: Configuration.AppSettings) -> ServiceEnvironment? { nil }

    /// `readJob`, its reading dropped.
    static func check(_ job: [UInt8], spec: JobSpec) throws(JobError) { _ = try readJob(job, spec: spec) }

    /// Loading proved the credential (a token or assertion signed): nothing more to do.
    public static func prove(_ app: Configuration.AppSettings, credential: any Sendable, configuration: Configuration) throws -> String? { nil }

    /// The apps of `credentials` whose loaded credential is `Credential`, with their `auth` settings, as a sender
    /// takes them.
    public static func apps<Auth, Credential>(_ credentials: [AppCredentials], auth: (Configuration.AppSettings) -> Auth?)
        -> [ProviderApp<Auth, Credential>] {
        credentials.enumerated().compactMap { index, loaded in
            guard let credential = loaded.credential as? Credential, let settings = auth(loaded.app) else { return nil }
            return ProviderApp(index: index, name: loaded.app.name, auth: settings, credential: credential)
        }
    }
}

extension Array where Element == any PushProvider.Type {
    /// Every provider's job members, for the parser.
    public var jobMembers: JobMemberTable {
        JobMemberTable(Dictionary(uniqueKeysWithValues: map { ($0.platform, $0.jobMembers) }))
    }

    /// Parses a job and has its provider read its members: every check the worker makes before it looks for the
    /// app (`herald enqueue`, the schema tests). `table`: `jobMembers`, made once.
    public func read(_ bytes: [UInt8], table: JobMemberTable) throws(JobError) -> JobSpec {
        let spec = try JobParser.parse(bytes, members: table)
        try provider(for: spec.platform).check(bytes, spec: spec)
        return spec
    }

    /// The provider of `platform`. The list is in `Platform.allCases` order (the loader holds it to that), so
    /// this is an index, not a search: intake asks it for every job. A list without it (a `Configuration()` made
    /// without providers) is a bug of the code that made it: stopped with a message that says so, not an index
    /// out of range.
    @inline(__always)
    public func provider(for platform: Platform) -> any PushProvider.Type {
        precondition(platform.slot < count, Self.missingProvider(platform, count: count))
        return self[platform.slot]
    }

    /// The message of a list that has no provider for `platform`.
    static func missingProvider(_ platform: Platform, count: Int) -> String {
        "no provider for platform '\(platform.rawValue)': the list has \(count) of \(Platform.allCases.count) "
            + "(a Configuration made with Configuration(), or DeliveryCore.Settings without providers?); make it with "
            + "Configuration(providers: heraldProviders), or load it through ConfigurationLoader with the providers' list"
    }
}

/// A provider's credential block of an app (`"fcm": {...}`), read with the settings its module declares for it.
public func credentialBlock<Auth: CredentialBlock>(_ path: WritableKeyPath<Configuration.AppSettings, Auth?>, blank: Auth,
                                                   _ declared: [Setting<Auth>]) -> Setting<Configuration.AppSettings> {
    let key = Auth.key
    return Setting<Configuration.AppSettings>.custom(
        key, default: "none", "Makes the app one of this provider's; its members are the provider's.",
        read: { (value: Any, app: inout Configuration.AppSettings, name: String, problems: inout [String]) in
            guard let object = value as? [String: Any] else {
                problems.append("\(name) must be an object")
                return
            }
            var auth = blank
            let found: [String] = SettingsReader.apply(declared, object: object, to: &auth, at: name + ".")
            problems.append(contentsOf: found)
            app[keyPath: path] = auth
        })
}

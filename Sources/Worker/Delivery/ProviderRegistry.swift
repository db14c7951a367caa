import APNs
import FCM
import WebPush
import ProviderKit
import PushCore
import Reactor

/// Every push provider the worker speaks, keyed by platform, as the one `PushSender` the pipeline sees: a send
/// goes to its app's provider, and a scrape asks every provider for its pools and tokens. The one place a
/// provider registers (`sender(for:)`, whose switch the compiler keeps complete) and, with the providers
/// themselves, the only code that branches on the platform (`ProviderSeamTests` greps for others).
public final class ProviderRegistry: PushSender {
    /// One sender per platform, at its `slot`.
    private let senders: [PushSender]
    /// Each app's sender, by app index (the destinations' `app`): a send looks up no platform.
    private let appSenders: [PushSender]

    /// `credentials`: every app of the configuration, in order (its indexes are the destinations').
    public init(credentials: [AppCredentials], loop: EventLoop, configuration: Configuration, logger: Logger) {
        let senders = Platform.allCases.map { Self.sender(for: $0, credentials: credentials, loop: loop, configuration: configuration, logger: logger) }
        self.senders = senders
        appSenders = credentials.map { senders[$0.app.platform.slot] }
    }

    /// The providers. A new one is a new `Platform` case and its line here.
    static func sender(for platform: Platform, credentials: [AppCredentials], loop: EventLoop, configuration: Configuration,
                       logger: Logger) -> PushSender {
        switch platform {
        case .apns: APNsSender(apps: apps(credentials) { $0.apnsAuth }, loop: loop, apns: configuration.apns, logger: logger)
        case .fcm: FCMSender(apps: apps(credentials) { $0.fcm }, loop: loop, fcm: configuration.fcm, logger: logger)
        case .webpush: WebPushSender(apps: apps(credentials) { $0.webpush }, loop: loop, settings: configuration.webPush, logger: logger)
        }
    }

    /// The apps whose loaded credential is `Credential`, with their `auth` settings.
    static func apps<Auth, Credential>(_ credentials: [AppCredentials], _ auth: (Configuration.AppSettings) -> Auth?) -> [ProviderApp<Auth, Credential>] {
        credentials.enumerated().compactMap { index, loaded in
            guard let credential = loaded.credential as? Credential, let settings = auth(loaded.app) else { return nil }
            return ProviderApp(index: index, name: loaded.app.name, auth: settings, credential: credential)
        }
    }

    /// The provider whose settings an app has: Web Push's VAPID key, FCM's service account, else APNs' key or
    /// certificate.
    @inline(__always)
    static func platform(of app: Configuration.AppSettings) -> Platform { app.webpush != nil ? .webpush : app.fcm == nil ? .apns : .fcm }

    /// What to check when the platform's provider refused an app's credential (the log of the pause it starts).
    static func credentialHint(for platform: Platform, reason: String) -> String {
        switch platform {
        case .apns: "check key_id, team_id, key_file, bundle_id and environment (herald check-config)"
        case .fcm: FCMSender.credentialHint(reason)
        case .webpush: WebPushSender.credentialHint(reason)
        }
    }

    /// Why a job of platform `job` does not fit an app of platform `app` (after "app 'x' is an <app> app; "):
    /// the app's platform says what its jobs look like. `given`: the job named its platform.
    static func wrongPlatformDetail(app: Platform, job: Platform, given: Bool) -> String {
        switch app {
        case .apns: "an \(job.displayName) job needs an \(job.displayName) app"
        case .fcm: given ? "the job says platform \(job.rawValue)" : "the job has no \"message\" (the FCM v1 message object)"
        case .webpush: given ? "the job says platform \(job.rawValue)" : "the job has no \"subscription\" (the browser's PushSubscription)"
        }
    }

    public func send(_ notification: PushNotification, to destination: Destination, afterConnection: Int,
                     completion: @escaping (PushOutcome) -> Void) -> SendAdmission {
        appSenders[destination.app].send(notification, to: destination, afterConnection: afterConnection, completion: completion)
    }

    public func reloadCredentials(app: Int) -> String? { appSenders[app].reloadCredentials(app: app) }

    public func connectNow(to destination: Destination) { appSenders[destination.app].connectNow(to: destination) }

    public func closeAll() {
        for sender in senders { sender.closeAll() }
    }

    public func addMetrics(to metrics: inout ProviderMetrics) {
        for sender in senders { sender.addMetrics(to: &metrics) }
    }
}

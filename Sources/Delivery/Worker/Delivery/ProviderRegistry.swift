import Basics
import ProviderKit
import PushCore
import Reactor

/// Every push provider the worker speaks, keyed by platform, as the one `PushSender` the pipeline sees: a send
/// goes to its app's provider, and a scrape asks every provider for its pools and tokens. The one place a
/// provider registers (`provider(for:)`, whose switch the compiler keeps complete) and, with the providers
/// themselves, the only code that branches on the platform (`ProviderSeamTests` greps for others).
public final class ProviderRegistry: PushSender {
    /// One sender per platform, at its `slot`.
    private let senders: [PushSender]
    /// Each app's sender, by app index (the destinations' `app`): a send looks up no platform.
    private let appSenders: [PushSender]

    /// `credentials`: every app of the configuration, in order (its indexes are the destinations').
    public init(credentials: [AppCredentials], loop: EventLoop, configuration: Configuration, logger: Logger) {
        let senders = Platform.allCases.map {
            Self.provider(for: $0).makeSender(credentials: credentials, loop: loop, configuration: configuration, logger: logger)
        }
        self.senders = senders
        appSenders = credentials.map { senders[$0.app.platform.slot] }
    }

    /// The providers, listed once. A new one is a new `Platform` case and its line here; the switch is exhaustive,
    /// so the worker does not build until the new case has its provider.
    static func provider(for platform: Platform) -> any PushProvider.Type {
        switch platform {
        case .apns: APNsProvider.self
        case .fcm: FCMProvider.self
        case .webpush: WebPushProvider.self
        case .hms: HMSProvider.self
        }
    }

    /// Every provider, in `Platform.allCases` order (the order of their sections in the configuration file).
    static let providers: [any PushProvider.Type] = Platform.allCases.map(provider(for:))

    /// The provider whose credential an app's settings name: APNs, the first, for an app that names none (a
    /// token or certificate is optional where nothing is loaded, as in tests), and the later one for an app that
    /// names several (which its provider's `problems` refuses).
    static func platform(of app: Configuration.AppSettings) -> Platform {
        Platform.allCases.last { provider(for: $0).owns(app) } ?? .apns
    }

    /// One rule for every provider: an app takes one provider's credential, so a second block is refused, naming
    /// both (it would otherwise go silently to the later provider).
    static func credentialProblems(_ app: Configuration.AppSettings, label: String) -> [String] {
        let owners = Platform.allCases.filter { provider(for: $0).owns(app) }.map { platform in
            platform.displayName + " (" + provider(for: platform).credentialBlocks.map { "\"\($0.key)\"" }.joinedAsList("or") + ")"
        }
        guard owners.count > 1 else { return [] }
        return ["\(label): an app takes one provider's credential, this one names \(owners.joinedAsList("and")); make an app for each"]
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

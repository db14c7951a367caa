import Basics
import ProviderKit
import PushCore
import Reactor

/// Every push provider the worker speaks, as the one `PushSender` the pipeline sees: a send goes to its app's
/// provider, and a scrape asks every provider for its pools and tokens. The providers are the configuration's
/// (`Configuration.providers`, the composition root's list), so the worker names none.
public final class ProviderRegistry: PushSender {
    /// One sender per platform, at its `slot`.
    private let senders: [PushSender]
    /// Each app's sender, by app index (the destinations' `app`): a send looks up no platform.
    private let appSenders: [PushSender]

    /// `credentials`: every app of the configuration, in order (its indexes are the destinations').
    public init(credentials: [AppCredentials], loop: EventLoop, configuration: Configuration, logger: Logger) {
        let senders = configuration.providers.map {
            $0.makeSender(credentials: credentials, loop: loop, configuration: configuration, logger: logger)
        }
        self.senders = senders
        appSenders = credentials.map { senders[$0.app.platform.slot] }
    }

    /// One rule for every provider: an app takes one provider's credential, so a second block is refused, naming
    /// both (it would otherwise go silently to the later provider).
    static func credentialProblems(_ app: Configuration.AppSettings, label: String, providers: [any PushProvider.Type]) -> [String] {
        let owners = app.credentials.platforms.map { platform in
            platform.displayName + " (" + providers.provider(for: platform).credentialBlocks.map { "\"\($0.key)\"" }.joinedAsList("or") + ")"
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

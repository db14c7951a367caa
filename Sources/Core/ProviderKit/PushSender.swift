import PushCore

/// The answer to one send, as the core needs it.
public struct PushOutcome: Sendable, Equatable {
    public let result: DeliveryResult
    /// The connection that answered, 0 when none did.
    public let connectionID: Int

    @inlinable public init(result: DeliveryResult, connectionID: Int) {
        self.result = result
        self.connectionID = connectionID
    }
}

/// A sender's word on one send request.
public enum SendAdmission: Sendable, Equatable {
    /// Taken: the completion runs exactly once, later, on the loop.
    case accepted
    /// Pushed back (the pool's queue is full); the completion never runs. Try again once answers free room.
    case refused
    /// No client could be set up for the destination (bad URL, CA or certificate file); nothing was sent.
    case unavailable(String)
}

/// Sends notifications; over HTTP/2 in production (`ProviderRegistry` over each provider's sender:
/// `APNsSender`, `FCMSender`), a scripted fake in tests.
public protocol PushSender: AnyObject {
    func send(_ notification: PushNotification, to destination: Destination, afterConnection: Int,
              completion: @escaping (PushOutcome) -> Void) -> SendAdmission
    /// Re-reads the app's key or certificate after a pause and drops its old connections; nil on success,
    /// else why it failed.
    func reloadCredentials(app: Int) -> String?
    /// Closes every connection; nothing more is sent.
    func closeAll()
    /// A probe goes to `destination` next: open its connections now, cutting any reconnect back-off short
    /// (default: nothing, for senders without pools).
    func connectNow(to destination: Destination)
    /// Adds its pools and credential tokens to a scrape's copy. No default on purpose: a sender that forgot
    /// it left every pool family empty once (the router before the registry), so each must say what it has.
    func addMetrics(to metrics: inout ProviderMetrics)
}

extension PushSender {
    public func connectNow(to destination: Destination) {}
}

import APNs
import PushCore
import RedisQueue

/// Where a job goes: one app's credential in one APNs environment, or an FCM app (one project; its
/// environment is always production). Probes, pauses and outages are kept per destination, so a key refused
/// in sandbox or an unreachable sandbox host does not stop production, and FCM's state never touches APNs'.
public struct Destination: Hashable, Sendable, CustomStringConvertible {
    public let app: Int
    public let environment: APNsEnvironment
    public let platform: Platform

    public init(app: Int, environment: APNsEnvironment, platform: Platform = .apns) {
        self.app = app
        self.environment = environment
        self.platform = platform
    }

    public var description: String { "\(app)/\(environmentLabel)" }

    /// Its environment, or for a platform without environments its platform (logs, descriptions).
    public var environmentLabel: String { platform.hasEnvironments ? environment.rawValue : platform.rawValue }
}

/// The answer to one send, as the core needs it.
public struct PushOutcome: Sendable, Equatable {
    public let result: DeliveryResult
    /// The connection that answered, 0 when none did.
    public let connectionID: Int

    public init(result: DeliveryResult, connectionID: Int) {
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
    func addMetrics(to snapshot: inout MetricsSnapshot)
}

extension PushSender {
    public func connectNow(to destination: Destination) {}
}

/// Why a claim or a results batch failed.
public struct JobSourceFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    /// The call may have run without its reply reaching us (connection lost, timeout): a results batch sent
    /// again must then not recover lost leases. False when Redis refused it as a whole (nothing happened).
    public var maybeApplied: Bool
    /// The source was closed on purpose (shutdown): do not retry.
    public var closed: Bool

    public init(_ description: String, maybeApplied: Bool = false, closed: Bool = false) {
        self.description = description
        self.maybeApplied = maybeApplied
        self.closed = closed
    }
}

/// Where jobs come from and outcomes go: the Redis queue in production (`RedisJobSource`), an in-memory one
/// in tests.
public protocol JobSource: AnyObject {
    func claim(max: Int, completion: @escaping (Result<[Lease], JobSourceFailure>) -> Void)
    /// Applies a batch atomically; `isRepeat`: the batch went out before and its reply was lost.
    func record(_ batch: [JobCompletion], isRepeat: Bool, completion: @escaping (Result<CompletionReport, JobSourceFailure>) -> Void)
    /// Returns every job this worker still holds to its queue: at start (what an earlier process under the
    /// same worker id left) and at the end of a shutdown. Answers the count.
    func returnAll(completion: @escaping (Result<Int, JobSourceFailure>) -> Void)
    /// Idempotency: for freshly claimed jobs and their producer ids, which copy sends and which is a duplicate
    /// within the window; decided atomically by the source. Safe to ask again after a failure.
    func claimOnce(_ jobs: [(lease: Lease, jobID: String)], windowMilliseconds: Int64,
                   completion: @escaping (Result<[OnceVerdict], JobSourceFailure>) -> Void)
}

/// Time for the core, injected so tests run it on a fake clock.
public protocol DeliveryClock: AnyObject {
    /// Monotonic nanoseconds: deadlines, pauses, latencies.
    var monotonicNanos: UInt64 { get }
    /// Milliseconds since the epoch: retry due times and `apns-expiration`, which Redis and Apple compare with
    /// wall time.
    var wallMillis: Int64 { get }
}

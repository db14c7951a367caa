import ProviderKit
import PushCore
import RedisQueue

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
    /// Budgets: for these claimed jobs (their lease and limits), which may go now and when the others may;
    /// decided atomically by the source, for every worker sharing it. Asked only while some budget is set.
    func checkBudgets(_ jobs: [(lease: Lease, limits: [BudgetLimit])],
                      completion: @escaping (Result<[BudgetVerdict], JobSourceFailure>) -> Void)
}

/// Time for the core, injected so tests run it on a fake clock.
public protocol DeliveryClock: AnyObject {
    /// Monotonic nanoseconds: deadlines, pauses, latencies.
    var monotonicNanos: UInt64 { get }
    /// Milliseconds since the epoch: retry due times and `apns-expiration`, which Redis and Apple compare with
    /// wall time.
    var wallMillis: Int64 { get }
}

import Synchronization
import Worker

/// A clock the test moves by hand: the worker's core reads it as a `DeliveryClock`, the token caches through
/// `function` (seconds since the epoch, as they take their clock). One `advance` moves both readings.
public final class ManualClock: DeliveryClock, Sendable {
    private let readings: Mutex<(monotonicNanos: UInt64, wallMillis: Int64)>

    /// Starts at `seconds` since the epoch (wall) and 5 s (monotonic).
    public init(_ seconds: Int64 = 1_800_000_000) {
        readings = Mutex((monotonicNanos: 5_000_000_000, wallMillis: seconds * 1000))
    }

    public var monotonicNanos: UInt64 { readings.withLock { $0.monotonicNanos } }
    public var wallMillis: Int64 { readings.withLock { $0.wallMillis } }
    /// Whole seconds since the epoch.
    public var seconds: Int64 { wallMillis / 1000 }
    public var function: @Sendable () -> Int64 { { self.seconds } }

    /// A negative move sets the wall clock back (as an operator or NTP can) and leaves the monotonic one, which
    /// never runs backwards.
    public func advance(milliseconds: Int64) {
        readings.withLock {
            if milliseconds > 0 { $0.monotonicNanos &+= UInt64(milliseconds) * 1_000_000 }
            $0.wallMillis += milliseconds
        }
    }

    public func advance(_ seconds: Int64) { advance(milliseconds: seconds * 1000) }
}

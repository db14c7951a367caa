import Reactor

/// Lets a repeated warning through at most once per interval, so an outage writes a few lines, not one per
/// retry. Loop-confined like the pipeline that owns it.
struct WarningThrottle {
    let intervalNanoseconds: UInt64
    private var last: UInt64?

    init(seconds: UInt64) { intervalNanoseconds = seconds * 1_000_000_000 }

    /// True when the warning may be logged now (and starts a new interval). `now`: monotonic nanoseconds.
    mutating func allow(now: UInt64 = monotonicNanos()) -> Bool {
        if let last, now &- last < intervalNanoseconds { return false }
        last = now
        return true
    }

    /// A warning that is always logged (e.g. the first one of an outage) starts a new interval too.
    mutating func markLogged(now: UInt64 = monotonicNanos()) { last = now }
}

import Glibc

/// Nanoseconds from CLOCK_MONOTONIC: never jumps with wall-clock changes, so timeouts stay honest.
@inline(__always)
public func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Milliseconds since the UNIX epoch (wall clock), for what leaves the process: results, retry due times.
@inline(__always)
public func wallClockMillis() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

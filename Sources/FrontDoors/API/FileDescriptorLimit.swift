import Glibc

/// The open-file limit `herald api` runs under, against `api.max_connections` (issue 51: at the limit the API spun
/// at 100 % CPU answering nothing, and check-config took 1,000,000 connections under `ulimit -n 128`).
public enum FileDescriptorLimit {
    /// Descriptors the API needs besides its connections: stdio, the listener, epoll, timers and eventfds, Redis
    /// connections (a few per shard), the files TLS and the configuration read.
    public static let reserve = 64

    /// The soft limit raised to the hard one (what a process may do for itself); the limit in force after.
    public static func raiseSoftToHard() -> UInt64 {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }

    /// The hard limit: the most the soft one can be raised to.
    public static func hardLimit() -> UInt64 {
        var limit = rlimit()
        return getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 ? UInt64(limit.rlim_max) : 0
    }

    /// Why `maxConnections` (and the probes' slots) does not fit in `limit` descriptors with the reserve, or nil
    /// when it does.
    public static func shortfall(maxConnections: Int, limit: UInt64) -> String? {
        let needed = maxConnections + HTTP1Server.probeSlots + reserve
        guard limit < UInt64(needed) else { return nil }
        return "api.max_connections \(maxConnections) needs about \(needed) open files, and the limit is \(limit) "
            + "(raise it: LimitNOFILE in the unit, ulimit -n); the API takes at most \(connections(fitting: limit)) connections, answering 503 past them"
    }

    /// The connections that fit in `limit` descriptors with the reserve and the probes' slots (at least 1).
    public static func connections(fitting limit: UInt64) -> Int {
        max(1, Int(min(limit, UInt64(Int.max))) - reserve - HTTP1Server.probeSlots)
    }
}

import Foundation
import Glibc

/// The process's own resident memory, open descriptors and CPU time, read from /proc at each scrape.
public struct ProcessStats: Sendable {
    public var residentBytes: Double = 0
    public var openFileDescriptors: Double = 0
    public var maxFileDescriptors: Double = 0
    public var cpuSeconds: Double = 0
    public var startTimeSeconds: Double = 0

    public static func read() -> ProcessStats {
        var stats = ProcessStats()
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) {
            let fields = statm.split(separator: " ")
            if fields.count > 1, let pages = Double(fields[1]) { stats.residentBytes = pages * pageSize }
        }
        // Fields after the command name, which is in parentheses and may hold spaces: utime is field 14,
        // stime 15, starttime 22 (1-based, as proc(5) counts).
        if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 19, let user = Double(fields[11]), let system = Double(fields[12]), let start = Double(fields[19]) {
                stats.cpuSeconds = (user + system) / ticks
                stats.startTimeSeconds = bootTimeSeconds() + start / ticks
            }
        }
        stats.openFileDescriptors = Double(((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count)
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { stats.maxFileDescriptors = Double(limit.rlim_cur) }
        return stats
    }

    private static func bootTimeSeconds() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        return 0
    }

    /// The standard `process_*` families (the names client_golang's process collector uses, so stock
    /// dashboards and alerts work unchanged).
    public func write(to out: inout PrometheusText) {
        out.single("process_resident_memory_bytes", .gauge, "Resident memory size in bytes.", residentBytes)
        out.single("process_open_fds", .gauge, "Number of open file descriptors.", openFileDescriptors)
        out.single("process_max_fds", .gauge, "Maximum number of open file descriptors.", maxFileDescriptors)
        out.single("process_cpu_seconds_total", .counter, "Total user and system CPU time spent in seconds.", cpuSeconds)
        out.single("process_start_time_seconds", .gauge, "Start time of the process since unix epoch in seconds.", startTimeSeconds)
    }
}

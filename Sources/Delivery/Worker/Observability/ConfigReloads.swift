import Basics
import Foundation

/// The worker's configuration reloads (SIGHUP): how many took effect or were refused, and when the running
/// configuration was last loaded. Written by the reload's queue, read by a scrape on the metrics loop: locked.
public final class ConfigReloads: Sendable {
    private struct Counts {
        var ok: UInt64 = 0
        var refused: UInt64 = 0
        var lastSuccess: Double
    }

    private let counts: LockedValue<Counts>

    /// `loadedAt`: when the configuration the process started with was loaded (the last success until a reload,
    /// as Prometheus's own `prometheus_config_last_reload_success_timestamp_seconds` counts the first load).
    public init(loadedAt: Double = Date().timeIntervalSince1970) {
        counts = LockedValue(Counts(lastSuccess: loadedAt))
    }

    public func succeeded(at time: Double = Date().timeIntervalSince1970) {
        counts.withLock { $0.ok += 1; $0.lastSuccess = time }
    }

    public func refused() {
        counts.withLock { $0.refused += 1 }
    }

    /// Both families, with samples from the start (0 reloads), so every documented family has one.
    public func write(to out: inout PrometheusText) {
        let now = counts.withLock { $0 }
        out.family("herald_config_reloads_total", .counter, "Configuration reloads on SIGHUP, by result (ok: in effect; refused: invalid, the old one kept).")
        out.sample("herald_config_reloads_total", [("result", "ok")], now.ok)
        out.sample("herald_config_reloads_total", [("result", "refused")], now.refused)
        out.single("herald_config_last_reload_success_timestamp_seconds", .gauge,
                   "When the running configuration was loaded (the start, then each reload that took effect), seconds since the epoch.", now.lastSuccess)
    }
}

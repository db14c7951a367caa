import CBuildInfo

/// What this binary is: the version and the commit and build time `build_shipped_herald` stamped into it
/// (`unknown` in a development build). `herald --version` prints it; every `/metrics` exports it as
/// `herald_build_info`, so a dashboard shows which build each process runs.
public enum BuildInfo {
    public static let version = "0.1.0"
    /// "commit 1a2b3c4d5e6f, built 2026-12-01T20:00:00Z".
    public static let stamp = String(cString: herald_build_info())
    public static let commit = field("commit ")
    public static let built = field("built ")

    private static func field(_ name: String) -> String {
        for part in stamp.split(separator: ",") {
            let part = part.drop { $0 == " " }
            if part.hasPrefix(name) { return String(part.dropFirst(name.count)) }
        }
        return "unknown"
    }

    /// The `herald_build_info` gauge: always 1, the build in its labels (the Prometheus convention).
    public static func write(to out: inout PrometheusText) {
        out.family("herald_build_info", .gauge, "Always 1; the labels say which build of herald this process runs.")
        out.sample("herald_build_info", [("version", version), ("commit", commit), ("built", built)], 1)
    }
}

import TLS

extension CertificateExpiry {
    /// `herald_tls_certificate_not_after_timestamp_seconds`: one sample per certificate held (by file) or shown
    /// (by host), so a rule can warn 30 days ahead (deploy/prometheus/herald-rules.yml).
    public func write(to out: inout PrometheusText) {
        out.family("herald_tls_certificate_not_after_timestamp_seconds", .gauge,
                   "When each TLS certificate this process holds (role held, by file) or was shown by a server (role peer, by host) expires, in seconds since the epoch.")
        for entry in all {
            out.sample("herald_tls_certificate_not_after_timestamp_seconds", [("role", entry.role.rawValue), ("name", entry.name)], Double(entry.notAfter))
        }
    }
}

import Basics
import COpenSSL
import Glibc

/// The not-after time of every certificate this process holds (a client certificate it loaded: APNs certificate
/// auth, Redis mutual TLS) or was shown (each server's leaf at the handshake: APNs, FCM, Redis), so `/metrics`
/// can warn weeks before one expires. One table for the process, written at context creation and handshakes
/// (rare), read at scrapes; keyed by file or host, so a reconnect refreshes its row rather than adding one.
public final class CertificateExpiry: Sendable {
    public static let shared = CertificateExpiry()

    public enum Role: String, Sendable, Comparable {
        /// A certificate this process presents, by file.
        case held
        /// A server's certificate, by the host name it was asked for.
        case peer

        public static func < (a: Role, b: Role) -> Bool { a.rawValue < b.rawValue }
    }

    public struct Entry: Sendable, Equatable {
        public let role: Role
        /// The file (held) or host (peer).
        public let name: String
        /// Seconds since the epoch.
        public let notAfter: Int64
    }

    private let entries = LockedValue<[String: Entry]>([:])

    /// Every certificate seen, by role then name.
    public var all: [Entry] {
        entries.withLock { Array($0.values) }.sorted { ($0.role, $0.name) < ($1.role, $1.name) }
    }

    /// Records `certificate` (an `X509*`, not consumed) under `name`; a certificate whose time cannot be read is left out.
    func record(_ role: Role, name: String, certificate: OpaquePointer) {
        guard let notAfter = Self.notAfter(certificate) else { return }
        let entry = Entry(role: role, name: name, notAfter: notAfter)
        entries.withLock { $0[role.rawValue + "\n" + name] = entry }
    }

    /// The certificate's notAfter in seconds since the epoch.
    static func notAfter(_ certificate: OpaquePointer) -> Int64? {
        guard let time = X509_get0_notAfter(certificate) else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Int64(timegm(&parts))
    }
}

import COpenSSL
import Glibc

/// Where a client context finds the system's trusted roots.
///
/// `SSL_CTX_set_default_verify_paths` parses the whole bundle file (Debian's `ca-certificates.crt`, ~140 roots)
/// into every context: about 230 million instructions each, a tenth of what a worker spends delivering 20,000
/// jobs. Debian's `update-ca-certificates` writes the same roots as links named by subject hash into the default
/// directory, which OpenSSL reads lazily, one root when a handshake needs it; so where that directory holds such
/// links it is used alone. Wherever it does not, or where the operator pointed `SSL_CERT_FILE` or `SSL_CERT_DIR`
/// somewhere, the default paths are loaded as before: the trusted set is the same either way.
public enum SystemTrustStore: Equatable, Sendable {
    /// OpenSSL's lookup by subject hash in this directory (`c_rehash` / `update-ca-certificates` layout).
    case hashedDirectory(String)
    /// `SSL_CTX_set_default_verify_paths`: the default bundle file and directory, and the environment's overrides.
    case defaultPaths

    /// The choice for this process: its environment and OpenSSL's compiled-in default directory.
    public static let current = choose(
        environment: { name in getenv(name).map { String(cString: $0) } },
        defaultDirectory: String(cString: X509_get_default_cert_dir()))

    /// The hashed directory when nothing overrides the defaults and `defaultDirectory` holds at least one
    /// subject-hash link (`xxxxxxxx.N`); otherwise the default paths.
    static func choose(environment: (String) -> String?, defaultDirectory: String) -> SystemTrustStore {
        let overrides = [String(cString: X509_get_default_cert_file_env()), String(cString: X509_get_default_cert_dir_env())]
        if overrides.contains(where: { environment($0) != nil }) { return .defaultPaths }
        return holdsHashLinks(defaultDirectory) ? .hashedDirectory(defaultDirectory) : .defaultPaths
    }

    static func holdsHashLinks(_ directory: String) -> Bool {
        guard let handle = opendir(directory) else { return false }
        defer { closedir(handle) }
        while let entry = readdir(handle) {
            let isLink = withUnsafeBytes(of: entry.pointee.d_name) { raw in isHashName(raw.prefix { $0 != 0 }) }
            if isLink { return true }
        }
        return false
    }

    /// `[0-9a-f]{8}` `.` digits: the names `c_rehash` gives certificates (`.rN` names are CRLs, not roots).
    static func isHashName(_ name: some Collection<UInt8>) -> Bool {
        let bytes = Array(name)
        guard bytes.count >= 10, bytes[8] == UInt8(ascii: ".") else { return false }
        let isHex = { (b: UInt8) in (48...57).contains(b) || (97...102).contains(b) }
        return bytes[..<8].allSatisfy(isHex) && bytes[9...].allSatisfy { (48...57).contains($0) }
    }

    /// Makes `context` trust these roots.
    func load(into context: OpaquePointer) throws(TLSError) {
        switch self {
        case .hashedDirectory(let directory):
            guard SSL_CTX_load_verify_dir(context, directory) == 1 else {
                throw TLSError("system trust store \(directory): \(openSSLErrors())")
            }
        case .defaultPaths:
            guard SSL_CTX_set_default_verify_paths(context) == 1 else { throw TLSError("system trust store: \(openSSLErrors())") }
        }
    }
}

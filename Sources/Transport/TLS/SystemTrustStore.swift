import COpenSSL
import Glibc

/// Where a client context finds the system's trusted roots.
///
/// `SSL_CTX_set_default_verify_paths` parses the whole bundle file (Debian's `ca-certificates.crt`, ~140 roots)
/// into every context: about 230 million instructions each, a tenth of what a worker spends delivering 20,000
/// jobs. It also adds the default directory, where Debian's `update-ca-certificates` writes the same roots as
/// links named by subject hash, which OpenSSL reads lazily, one root when a handshake needs it. So the directory
/// is used alone exactly when that trusts the same roots: its links hold the very certificates of the bundle
/// (compared as PEM text, which needs no parsing: about 2 million instructions once per process), or there is
/// no bundle. A root appended to the bundle by
/// hand, a bundle mounted over Debian's, a half-rehashed directory, or `SSL_CERT_FILE` / `SSL_CERT_DIR` set:
/// the default paths are loaded as before.
public enum SystemTrustStore: Equatable, Sendable {
    /// OpenSSL's lookup by subject hash in this directory (`c_rehash` / `update-ca-certificates` layout).
    case hashedDirectory(String)
    /// `SSL_CTX_set_default_verify_paths`: the default bundle file and directory, and the environment's overrides.
    case defaultPaths

    /// The choice for this process: its environment and OpenSSL's compiled-in default file and directory.
    public static let current = choose(
        environment: { name in getenv(name).map { String(cString: $0) } },
        defaultDirectory: String(cString: X509_get_default_cert_dir()),
        defaultFile: String(cString: X509_get_default_cert_file()))

    /// The hashed directory when nothing overrides the defaults, `defaultDirectory` holds subject-hash links
    /// (`xxxxxxxx.N`), and they hold the same certificates as `defaultFile` (or it does not exist); otherwise
    /// the default paths.
    static func choose(environment: (String) -> String?, defaultDirectory: String, defaultFile: String) -> SystemTrustStore {
        let overrides = [String(cString: X509_get_default_cert_file_env()), String(cString: X509_get_default_cert_dir_env())]
        if overrides.contains(where: { environment($0) != nil }) { return .defaultPaths }
        guard let linked = linkedCertificates(defaultDirectory), !linked.isEmpty else { return .defaultPaths }
        if access(defaultFile, F_OK) != 0 { return .hashedDirectory(defaultDirectory) }
        guard let bundle = readFile(defaultFile), pemCertificates(bundle).sorted(by: precedes) == linked else { return .defaultPaths }
        return .hashedDirectory(defaultDirectory)
    }

    /// The certificates (PEM bodies, sorted) of the directory's subject-hash links; nil if it cannot be read.
    static func linkedCertificates(_ directory: String) -> [[UInt8]]? {
        guard let handle = opendir(directory) else { return nil }
        defer { closedir(handle) }
        var certificates: [[UInt8]] = []
        while let entry = readdir(handle) {
            // d_name is NUL-terminated inside the record; read it through a pointer, never as the whole array.
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            guard isHashName(Array(name.utf8)) else { continue }
            guard let bytes = readFile(directory + "/" + name) else { return nil }
            certificates += pemCertificates(bytes)
        }
        return certificates.sorted(by: precedes)
    }

    /// An order for comparing two lists of bodies as multisets (sorting, not hashing ~300 KB).
    static func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        let common = min(a.count, b.count)
        let order = a.withUnsafeBytes { x in b.withUnsafeBytes { y in common == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, common) } }
        return order != 0 ? order < 0 : a.count < b.count
    }

    /// The bodies of a PEM text's `CERTIFICATE` blocks as written (Debian's bundle is the linked files put
    /// together, so the same roots have the same bytes; a re-wrapped copy only costs the lazy path).
    static func pemCertificates(_ text: [UInt8]) -> [[UInt8]] {
        let begin = Array("-----BEGIN CERTIFICATE-----".utf8), end = Array("-----END CERTIFICATE-----".utf8)
        var found: [[UInt8]] = []
        var i = 0
        while let start = firstIndex(of: begin, in: text, from: i) {
            let bodyStart = start + begin.count
            guard let stop = firstIndex(of: end, in: text, from: bodyStart) else { break }
            found.append(Array(text[bodyStart..<stop]))
            i = stop + end.count
        }
        return found
    }

    private static func firstIndex(of needle: [UInt8], in text: [UInt8], from start: Int) -> Int? {
        text.withUnsafeBufferPointer { haystack in
            needle.withUnsafeBufferPointer { n in
                var i = start
                while i + n.count <= haystack.count {
                    // memchr to the next candidate, memcmp for the rest: PEM is mostly base64, no dashes.
                    guard let hit = memchr(haystack.baseAddress! + i, Int32(n[0]), haystack.count - n.count + 1 - i) else { return nil }
                    i = haystack.baseAddress!.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    if memcmp(haystack.baseAddress! + i, n.baseAddress!, n.count) == 0 { return i }
                    i += 1
                }
                return nil
            }
        }
    }

    /// The whole file, read at its size in one go (a root is ~2 KB, the bundle ~200 KB); nil if unreadable.
    private static func readFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size >= 0 else { return nil }
        let size = Int(info.st_size)
        var failed = false
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            while count < size {
                let n = read(fd, buffer.baseAddress! + count, size - count)
                if n <= 0 { failed = n < 0; break }
                count += n
            }
        }
        return failed ? nil : bytes
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

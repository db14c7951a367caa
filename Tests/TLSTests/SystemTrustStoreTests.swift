import COpenSSL
import Foundation
import Testing
@testable import TLS

/// The system roots from the hashed directory (read lazily) where it is laid out for that, else the default
/// paths: the choice, and that a context trusting a hashed directory verifies exactly the roots linked there.
@Suite struct SystemTrustStoreTests {
    static func directory(_ names: [String]) throws -> String {
        let path = NSTemporaryDirectory() + "herald-trust-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        for name in names { FileManager.default.createFile(atPath: path + "/" + name, contents: Data()) }
        return path
    }

    static func pem(_ body: String, wrap: Int = 64) -> String {
        var lines: [String] = []
        var rest = Substring(body)
        while !rest.isEmpty { lines.append(String(rest.prefix(wrap))); rest = rest.dropFirst(wrap) }
        return "-----BEGIN CERTIFICATE-----\n" + lines.joined(separator: "\n") + "\n-----END CERTIFICATE-----\n"
    }

    /// The directory alone only where it trusts what the default paths would: its links hold exactly the bundle's
    /// certificates (whatever the line wrapping), or there is no bundle; never with the environment overriding.
    @Test func theHashedDirectoryIsChosenOnlyWhereItHoldsExactlyTheBundlesRoots() throws {
        let a = String(repeating: "QUJD", count: 40), b = String(repeating: "eHl6", count: 30), c = String(repeating: "MTIz", count: 20)
        let dir = try Self.directory([])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (name, body) in [("A.pem", a), ("B.pem", b)] {
            try Self.pem(body).write(toFile: "\(dir)/\(name)", atomically: true, encoding: .utf8)
        }
        try FileManager.default.createSymbolicLink(atPath: "\(dir)/1a2b3c4d.0", withDestinationPath: "A.pem")
        try FileManager.default.createSymbolicLink(atPath: "\(dir)/1a2b3c4d.1", withDestinationPath: "B.pem")
        let bundle = dir + "/ca-certificates.crt"
        let none: (String) -> String? = { _ in nil }
        func choice(_ bundleText: String?) throws -> SystemTrustStore {
            try? FileManager.default.removeItem(atPath: bundle)
            if let bundleText { try bundleText.write(toFile: bundle, atomically: true, encoding: .utf8) }
            return SystemTrustStore.choose(environment: none, defaultDirectory: dir, defaultFile: bundle)
        }
        // The same two roots in the other order, with a comment between: the same set.
        #expect(try choice("# Mozilla\n" + Self.pem(b) + "\n" + Self.pem(a)) == .hashedDirectory(dir))
        // Wrapped differently: not recognised as the same text, so the safe way (default paths).
        #expect(try choice(Self.pem(b, wrap: 76) + Self.pem(a)) == .defaultPaths)
        #expect(try choice(nil) == .hashedDirectory(dir))
        // A root appended by hand, one missing, one swapped: the bundle trusts other roots than the links.
        #expect(try choice(Self.pem(a) + Self.pem(b) + Self.pem(c)) == .defaultPaths)
        #expect(try choice(Self.pem(a)) == .defaultPaths)
        #expect(try choice(Self.pem(a) + Self.pem(c)) == .defaultPaths)
        _ = try choice(Self.pem(a) + Self.pem(b))
        for variable in ["SSL_CERT_FILE", "SSL_CERT_DIR"] {
            #expect(SystemTrustStore.choose(environment: { $0 == variable ? "/elsewhere" : nil }, defaultDirectory: dir, defaultFile: bundle) == .defaultPaths)
        }
        let unlinked = try Self.directory(["ca.pem", "002c0b4f.r0", "002C0B4F.0"])
        defer { try? FileManager.default.removeItem(atPath: unlinked) }
        #expect(SystemTrustStore.choose(environment: none, defaultDirectory: unlinked, defaultFile: bundle) == .defaultPaths)
        #expect(SystemTrustStore.choose(environment: none, defaultDirectory: dir + "/missing", defaultFile: bundle) == .defaultPaths)
    }

    @Test func hashNamesAreEightLowercaseHexDigitsADotAndASequenceNumber() {
        for name in ["002c0b4f.0", "ffffffff.12"] { #expect(SystemTrustStore.isHashName(Array(name.utf8)), "\(name)") }
        for name in ["002c0b4f.", "002c0b4f.r0", "002C0B4F.0", "002c0b4g.0", "002c0b4f0", "x002c0b4f.0", ".", ""] {
            #expect(!SystemTrustStore.isHashName(Array(name.utf8)), "\(name)")
        }
    }

    /// The test CA linked under its subject hash: a handshake to a server it signed succeeds; with the link absent
    /// (another root linked instead) the same handshake fails verification.
    @Test func aContextTrustingAHashedDirectoryVerifiesTheRootsLinkedThereAndNoOthers() throws {
        let pair = try SSLHandleTests.Pair()
        defer { pair.close() }
        let trusted = try Self.directory([]), other = try Self.directory([])
        defer { for path in [trusted, other] { try? FileManager.default.removeItem(atPath: path) } }
        try FileManager.default.createSymbolicLink(atPath: "\(trusted)/\(try Self.subjectHash(pair.certificates.caFile)).0",
                                                   withDestinationPath: pair.certificates.caFile)
        let configuration = TLSConfiguration(useSystemTrustStore: true)
        let good = try TLSContext(configuration, alpn: [], systemTrust: .hashedDirectory(trusted))
        let client = try SSLHandle(context: good, fd: pair.fds[0], serverName: "localhost")
        #expect(try SSLHandleTests.handshake(client, try pair.server()))

        let second = try SSLHandleTests.Pair()
        defer { second.close() }
        try FileManager.default.createSymbolicLink(atPath: "\(other)/\(try Self.subjectHash(second.certificates.otherCAFile)).0",
                                                   withDestinationPath: second.certificates.otherCAFile)
        let bad = try TLSContext(configuration, alpn: [], systemTrust: .hashedDirectory(other))
        let refused = try SSLHandle(context: bad, fd: second.fds[0], serverName: "localhost")
        #expect(throws: TLSError.self) { _ = try SSLHandleTests.handshake(refused, try second.server()) }
    }

    static func subjectHash(_ pemFile: String) throws -> String {
        guard let bio = BIO_new_file(pemFile, "r") else { throw TLSError("open \(pemFile)") }
        defer { BIO_free(bio) }
        guard let certificate = PEM_read_bio_X509(bio, nil, nil, nil) else { throw TLSError("read \(pemFile)") }
        defer { X509_free(certificate) }
        let hash = String(X509_subject_name_hash(certificate), radix: 16)
        return String(repeating: "0", count: 8 - hash.count) + hash
    }
}

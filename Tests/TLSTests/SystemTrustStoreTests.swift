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

    @Test func aDirectoryWithSubjectHashLinksIsReadLazilyUnlessTheEnvironmentOverridesTheDefaults() throws {
        let hashed = try Self.directory(["ca-certificates.crt", "README", "002c0b4f.0"])
        let bundleOnly = try Self.directory(["ca-certificates.crt", "ca.pem", "002c0b4f.r0", "002c0b4.0", "002C0B4F.0"])
        defer { for path in [hashed, bundleOnly] { try? FileManager.default.removeItem(atPath: path) } }
        let none: (String) -> String? = { _ in nil }
        #expect(SystemTrustStore.choose(environment: none, defaultDirectory: hashed) == .hashedDirectory(hashed))
        #expect(SystemTrustStore.choose(environment: none, defaultDirectory: bundleOnly) == .defaultPaths)
        #expect(SystemTrustStore.choose(environment: none, defaultDirectory: hashed + "/missing") == .defaultPaths)
        for variable in ["SSL_CERT_FILE", "SSL_CERT_DIR"] {
            #expect(SystemTrustStore.choose(environment: { $0 == variable ? "/elsewhere" : nil }, defaultDirectory: hashed) == .defaultPaths)
        }
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

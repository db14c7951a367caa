import COpenSSL
import Foundation

/// Which APNs environment a key, a device token or the server belongs to.
public enum MockEnvironment: String, Sendable, Codable, CaseIterable {
    case production
    case sandbox
    /// Older keys that work against both hosts.
    case both
}

/// A provider signing key as the simulator knows it: Key ID, Team ID, environment and the topics it may push to.
///
/// Holds an OpenSSL `EVP_PKEY` (public, and private when the simulator generated it); frees it in `deinit`.
/// @unchecked: immutable after creation, and OpenSSL key objects are safe for concurrent verification.
public final class MockProviderKey: @unchecked Sendable {
    public let keyID: String
    public let teamID: String
    public let environment: MockEnvironment
    /// Bundle IDs (topics without push-type suffixes) this key may push to; empty = any topic of the team.
    public let topics: [String]
    /// Path of the `AuthKey_<KEYID>.p8` written for clients, when generated here.
    public let privateKeyFile: String?
    let key: OpaquePointer
    let hasPrivateKey: Bool

    init(keyID: String, teamID: String, environment: MockEnvironment, topics: [String], key: OpaquePointer, hasPrivateKey: Bool, privateKeyFile: String?) {
        self.keyID = keyID
        self.teamID = teamID
        self.environment = environment
        self.topics = topics
        self.key = key
        self.hasPrivateKey = hasPrivateKey
        self.privateKeyFile = privateKeyFile
    }

    deinit { EVP_PKEY_free(key) }

    /// Loads a key from a PEM file: a public key, or a `.p8` private key (its public half is used).
    public static func load(file: String, keyID: String, teamID: String, environment: MockEnvironment = .both, topics: [String] = []) throws -> MockProviderKey {
        let pem = try OpenSSLSupport.readFile(file)
        let isPrivate = String(decoding: pem, as: UTF8.self).contains("PRIVATE KEY")
        let key = try OpenSSLSupport.publicKey(pem: pem)
        return MockProviderKey(keyID: keyID, teamID: teamID, environment: environment, topics: topics, key: key,
                               hasPrivateKey: isPrivate, privateKeyFile: isPrivate ? file : nil)
    }

    /// Generates a P-256 key and, when `directory` is given, writes it as `AuthKey_<KEYID>.p8` (PKCS#8 PEM) as Apple hands them out.
    public static func generate(keyID: String, teamID: String, environment: MockEnvironment = .both, topics: [String] = [], directory: String? = nil) throws -> MockProviderKey {
        let key = try OpenSSLSupport.generateP256()
        var path: String?
        if let directory {
            let file = (directory as NSString).appendingPathComponent("AuthKey_\(keyID).p8")
            do {
                try OpenSSLSupport.writeFile(file, try OpenSSLSupport.pkcs8PEM(key), mode: 0o600)
            } catch {
                EVP_PKEY_free(key)
                throw error
            }
            path = file
        }
        return MockProviderKey(keyID: keyID, teamID: teamID, environment: environment, topics: topics, key: key, hasPrivateKey: true, privateKeyFile: path)
    }

    /// True when this key may push to `topic` (a bundle ID, optionally with a push-type suffix).
    func allows(topic: String) -> Bool {
        if topics.isEmpty { return true }
        return topics.contains { topic == $0 || topic.hasPrefix($0 + ".") }
    }

    /// A provider token (ES256 JWT) signed with this key, for tests and `--print-token`. Needs the private key.
    public func makeToken(issuedAt: Int64 = Int64(Date().timeIntervalSince1970), teamID overrideTeam: String? = nil, keyID overrideKey: String? = nil) throws -> String {
        guard hasPrivateKey else { throw SimulatorError.configuration("key \(keyID) has no private key to sign with") }
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"\#(overrideKey ?? keyID)"}"#.utf8))
        let claims = Base64URL.encode(Array(#"{"iss":"\#(overrideTeam ?? teamID)","iat":\#(issuedAt)}"#.utf8))
        let input = Array("\(header).\(claims)".utf8)
        let der = try ES256.sign(input, key: key)
        guard let raw = ES256.joseSignature(fromDER: der) else { throw SimulatorError.openSSL("bad DER signature") }
        return "\(header).\(claims).\(Base64URL.encode(raw))"
    }
}

/// ES256 (ECDSA P-256 + SHA-256) in the JOSE form: 64-byte r||s, converted to and from OpenSSL's DER.
enum ES256 {
    /// A DER signature (OpenSSL's form); `joseSignature(fromDER:)` makes the JWT form.
    static func sign(_ message: [UInt8], key: OpaquePointer) throws -> [UInt8] {
        try OpenSSLSupport.signSHA256(message, key: key)
    }

    static func verify(_ message: [UInt8], joseSignature: [UInt8], key: OpaquePointer) -> Bool {
        guard joseSignature.count == 64, let der = derSignature(fromJOSE: joseSignature) else { return false }
        return OpenSSLSupport.verifySHA256(message, signature: der, key: key)
    }

    static func derSignature(fromJOSE raw: [UInt8]) -> [UInt8]? {
        guard let sig = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(sig) }
        let r = BN_bin2bn(raw, 32, nil)
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s, ECDSA_SIG_set0(sig, r, s) == 1 else { return nil }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(sig, &out)
        guard length > 0, let out else { return nil }
        defer { copenssl_mock_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    static func joseSignature(fromDER der: [UInt8]) -> [UInt8]? {
        var cursor: UnsafePointer<UInt8>? = nil
        return der.withUnsafeBufferPointer { buffer -> [UInt8]? in
            cursor = buffer.baseAddress
            guard let sig = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else { return nil }
            defer { ECDSA_SIG_free(sig) }
            var r = [UInt8](repeating: 0, count: 32)
            var s = [UInt8](repeating: 0, count: 32)
            guard BN_bn2binpad(ECDSA_SIG_get0_r(sig), &r, 32) == 32, BN_bn2binpad(ECDSA_SIG_get0_s(sig), &s, 32) == 32 else { return nil }
            return r + s
        }
    }
}

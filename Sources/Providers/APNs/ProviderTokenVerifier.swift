import COpenSSL
import PushCore

/// What a provider token says about itself.
public struct ProviderTokenClaims: Sendable, Equatable {
    public var algorithm: String
    public var keyID: String
    public var teamID: String
    public var issuedAt: Int64

    public init(algorithm: String, keyID: String, teamID: String, issuedAt: Int64) {
        self.algorithm = algorithm
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = issuedAt
    }
}

/// A P-256 public key for checking provider tokens (the simulator and tests play APNs with it).
/// Owns its `EVP_PKEY`, freed in deinit.
/// @unchecked: as `SigningKey`, read-only after init and one `EVP_MD_CTX` per call.
public final class VerifyingKey: @unchecked Sendable {
    let pkey: OpaquePointer

    /// SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`).
    public init(publicKeyPEM pem: String) throws(CredentialError) {
        guard pem.contains("-----BEGIN PUBLIC KEY-----") else { throw .notPEM }
        ERR_clear_error()
        let bytes = Array(pem.utf8)
        let key: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let key else { throw .unreadableKey(detail: openSSLErrorText()) }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
            EVP_PKEY_free(key)
            throw .notAnECKey(type: "not an EC key")
        }
        pkey = key
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Checks a JOSE r||s ES256 signature (converted back to DER for OpenSSL).
    public func verifyES256(_ message: [UInt8], signature rs: [UInt8]) -> Bool {
        guard rs.count == 64, let sig = ECDSA_SIG_new() else { return false }
        defer { ECDSA_SIG_free(sig) }
        let r = rs.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = rs.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s else { BN_free(r); BN_free(s); return false }
        guard ECDSA_SIG_set0(sig, r, s) == 1 else { BN_free(r); BN_free(s); return false }
        var der: UnsafeMutablePointer<UInt8>?
        let derLength = i2d_ECDSA_SIG(sig, &der)
        guard derLength > 0, let der else { return false }
        defer { CRYPTO_free(der, #fileID, #line) }
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else { ERR_clear_error(); return false }
        let ok = message.withUnsafeBufferPointer { m in EVP_DigestVerify(ctx, der, Int(derLength), m.baseAddress, m.count) }
        ERR_clear_error()
        return ok == 1
    }
}

/// Reads and checks provider tokens the way APNs would.
public enum ProviderTokenVerifier {
    /// The header and claims of a well-formed token, without checking the signature.
    public static func decode(_ jwt: String) -> ProviderTokenClaims? {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = base64URLDecoded(String(parts[0])),
            let claims = base64URLDecoded(String(parts[1]))
        else { return nil }
        var result = ProviderTokenClaims(algorithm: "", keyID: "", teamID: "", issuedAt: 0)
        var hasIAT = false
        let headerOK = members(header) { scanner, key, value in
            guard value.kind == .string else { return }
            if scanner.stringEquals(key, "alg") { result.algorithm = scanner.stringValue(value) }
            if scanner.stringEquals(key, "kid") { result.keyID = scanner.stringValue(value) }
        }
        let claimsOK = members(claims) { scanner, key, value in
            if scanner.stringEquals(key, "iss"), value.kind == .string { result.teamID = scanner.stringValue(value) }
            if scanner.stringEquals(key, "iat"), let v = scanner.int64Value(value) { result.issuedAt = v; hasIAT = true }
        }
        guard headerOK, claimsOK, hasIAT, !result.keyID.isEmpty, !result.teamID.isEmpty else { return nil }
        return result
    }

    /// The claims when the token is well formed, ES256, and signed by `key`; nil otherwise.
    public static func verify(_ jwt: String, key: VerifyingKey) -> ProviderTokenClaims? {
        guard let claims = decode(jwt), claims.algorithm == "ES256" else { return nil }
        guard let dot = jwt.lastIndex(of: "."), let signature = base64URLDecoded(String(jwt[jwt.index(after: dot)...])) else {
            return nil
        }
        return key.verifyES256(Array(jwt[..<dot].utf8), signature: signature) ? claims : nil
    }

    private static func members(_ bytes: [UInt8], _ body: (JSONScanner, JSONToken, JSONToken) -> Void) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = JSONScanner(buffer)
            do throws(JSONScanError) {
                try scanner.beginObject()
                var first = true
                while let (key, value) = try scanner.nextMember(first: &first) { body(scanner, key, value) }
                try scanner.expectEnd()
                return true
            } catch {
                return false
            }
        }
    }
}

import COpenSSL
import PushCore

/// An RSA private key (a Google service account's `private_key`), owning its OpenSSL `EVP_PKEY`, freed in deinit.
/// OpenSSL 3 allows concurrent read-only use of one key.
/// @unchecked: never modified after init, and each `signRS256` call uses its own `EVP_MD_CTX`.
public final class RSASigningKey: @unchecked Sendable {
    let pkey: OpaquePointer

    /// Parses PEM text (PKCS#8 `PRIVATE KEY` or PKCS#1 `RSA PRIVATE KEY`); must be RSA of at least 2048 bits.
    public init(pem: String) throws(CredentialError) {
        let key = try readPrivateKeyPEM(pem)
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
            EVP_PKEY_free(key)
            throw .unreadableKey(detail: "the service account's private_key is not an RSA key (RS256 needs one)")
        }
        guard EVP_PKEY_get_bits(key) >= 2048 else {
            EVP_PKEY_free(key)
            throw .unreadableKey(detail: "the RSA key has fewer than 2048 bits")
        }
        pkey = key
    }

    deinit { EVP_PKEY_free(pkey) }

    /// RSASSA-PKCS1-v1_5 with SHA-256 (JWS "RS256", RFC 7518 3.3) over `message`.
    public func signRS256(_ message: [UInt8]) throws(CredentialError) -> [UInt8] {
        ERR_clear_error()
        guard let ctx = EVP_MD_CTX_new() else { throw .signingFailed(detail: "EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else { throw .signingFailed(detail: openSSLErrorText()) }
        var length = 0
        let sized = message.withUnsafeBufferPointer { m in EVP_DigestSign(ctx, nil, &length, m.baseAddress, m.count) }
        guard sized == 1, length > 0 else { throw .signingFailed(detail: openSSLErrorText()) }
        var signature = [UInt8](repeating: 0, count: length)
        let ok = message.withUnsafeBufferPointer { m in EVP_DigestSign(ctx, &signature, &length, m.baseAddress, m.count) }
        guard ok == 1 else { throw .signingFailed(detail: openSSLErrorText()) }
        return Array(signature.prefix(length))
    }

    /// The public half as SubjectPublicKeyInfo PEM, for verifiers (tests, the simulator's account list).
    public func publicKeyPEM() -> String? { PushCore.publicKeyPEM(of: pkey) }
}

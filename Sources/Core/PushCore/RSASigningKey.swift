import COpenSSL

/// An RSA private key (a Google or Huawei service account's `private_key`), owning its OpenSSL `EVP_PKEY`, freed in
/// deinit: FCM's assertion signs RS256 with it, HarmonyOS Push Kit's JWT PS256. OpenSSL 3 allows concurrent read-only
/// use of one key.
/// @unchecked: never modified after init, and each signing call uses its own `EVP_MD_CTX`.
public final class RSASigningKey: @unchecked Sendable {
    let pkey: OpaquePointer

    /// Parses PEM text (PKCS#8 `PRIVATE KEY` or PKCS#1 `RSA PRIVATE KEY`); must be RSA of at least 2048 bits.
    public init(pem: String) throws(CredentialError) {
        let key = try readPrivateKeyPEM(pem)
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
            EVP_PKEY_free(key)
            throw .unreadableKey(detail: "the service account's private_key is not an RSA key (RS256 and PS256 need one)")
        }
        guard EVP_PKEY_get_bits(key) >= 2048 else {
            EVP_PKEY_free(key)
            throw .unreadableKey(detail: "the RSA key has fewer than 2048 bits")
        }
        pkey = key
    }

    deinit { EVP_PKEY_free(pkey) }

    /// RSASSA-PKCS1-v1_5 with SHA-256 (JWS "RS256", RFC 7518 3.3) over `message`.
    public func signRS256(_ message: [UInt8]) throws(CredentialError) -> [UInt8] { try sign(message, pss: false) }

    /// RSASSA-PSS with SHA-256, MGF1 with SHA-256 and a 32-byte salt (JWS "PS256", RFC 7518 3.5) over `message`.
    public func signPS256(_ message: [UInt8]) throws(CredentialError) -> [UInt8] { try sign(message, pss: true) }

    private func sign(_ message: [UInt8], pss: Bool) throws(CredentialError) -> [UInt8] {
        ERR_clear_error()
        guard let ctx = EVP_MD_CTX_new() else { throw .signingFailed(detail: "EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        var keyContext: OpaquePointer?
        guard EVP_DigestSignInit(ctx, &keyContext, EVP_sha256(), nil, pkey) == 1 else { throw .signingFailed(detail: openSSLErrorText()) }
        if pss {
            // RFC 7518 3.5: the salt as long as the hash, MGF1 over the same hash.
            guard EVP_PKEY_CTX_set_rsa_padding(keyContext, RSA_PKCS1_PSS_PADDING) == 1,
                  EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, RSA_PSS_SALTLEN_DIGEST) == 1,
                  EVP_PKEY_CTX_set_rsa_mgf1_md(keyContext, EVP_sha256()) == 1 else { throw .signingFailed(detail: openSSLErrorText()) }
        }
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

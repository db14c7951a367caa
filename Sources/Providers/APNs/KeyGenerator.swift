import COpenSSL
import PushCore

/// Makes keys in-process, for tests, the simulator and the demo (no `openssl` CLI needed).
public enum KeyGenerator {
    /// A fresh P-256 key as PKCS#8 PEM, the same form as Apple's `.p8` files.
    public static func generateP256PKCS8PEM() throws(CredentialError) -> String {
        try generateECPKCS8PEM(curve: "P-256")
    }

    /// An EC key on any named curve OpenSSL knows ("P-256", "P-384", ...), as PKCS#8 PEM.
    public static func generateECPKCS8PEM(curve: String) throws(CredentialError) -> String {
        ERR_clear_error()
        guard let key = copenssl_ec_gen(curve) else { throw .unreadableKey(detail: openSSLErrorText()) }
        defer { EVP_PKEY_free(key) }
        return try pkcs8PEM(key)
    }

    /// An RSA key as PKCS#8 PEM (only useful to show that it is refused).
    public static func generateRSAPKCS8PEM(bits: Int = 2048) throws(CredentialError) -> String {
        ERR_clear_error()
        guard let key = copenssl_rsa_gen(UInt32(bits)) else { throw .unreadableKey(detail: openSSLErrorText()) }
        defer { EVP_PKEY_free(key) }
        return try pkcs8PEM(key)
    }

    /// The SubjectPublicKeyInfo PEM of a P-256 private key PEM, for whoever verifies tokens.
    public static func publicKeyPEM(fromPrivatePEM pem: String) throws(CredentialError) -> String {
        let key = try SigningKey(pem: pem)
        guard let text = key.publicKeyPEM() else { throw .unreadableKey(detail: openSSLErrorText()) }
        return text
    }

    private static func pkcs8PEM(_ key: OpaquePointer) throws(CredentialError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw .unreadableKey(detail: "BIO_new") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PKCS8PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else {
            throw .unreadableKey(detail: openSSLErrorText())
        }
        return readAll(bio)
    }
}

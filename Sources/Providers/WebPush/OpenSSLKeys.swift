import COpenSSL
import PushCore

/// A P-256 public point OpenSSL accepts (uncompressed, on the curve): what a subscription's `p256dh` must be.
func isP256Point(_ point: [UInt8]) -> Bool {
    guard point.count == 65, point[0] == 0x04, let key = copenssl_p256_public_key(point, point.count) else {
        ERR_clear_error()
        return false
    }
    EVP_PKEY_free(key)
    return true
}

/// A given sender key (RFC 8291's application-server key) for fixed test vectors; messages get a fresh one from
/// their `MessageEncryptor`. Freed in deinit.
final class EphemeralKey {
    let pkey: OpaquePointer

    init(pem: String) throws(EncryptionError) {
        let key: OpaquePointer
        do { key = try readPrivateKeyPEM(pem) } catch { throw .openSSL(error.description) }
        guard uncompressedPublicPoint(of: key)?.count == 65 else {
            EVP_PKEY_free(key)
            throw .openSSL("not a P-256 key")
        }
        pkey = key
    }

    deinit { EVP_PKEY_free(pkey) }
}

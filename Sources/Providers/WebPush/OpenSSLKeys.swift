import COpenSSL
import PushCore

/// A subscriber's public key as an OpenSSL `EVP_PKEY`, owned and freed here. Made from the 65-byte point by
/// wrapping it in the fixed P-256 SubjectPublicKeyInfo prefix, so OpenSSL's own decoder checks it is on the curve.
final class ReceiverKey {
    let pkey: OpaquePointer

    /// SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING (0 unused bits) } before the point.
    private static let spkiPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48,
        0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    init?(point: [UInt8]) {
        guard point.count == 65, point[0] == 0x04 else { return nil }
        let der = Self.spkiPrefix + point
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var p: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &p, buffer.count)
        }
        guard let key else { ERR_clear_error(); return nil }
        pkey = key
    }

    deinit { EVP_PKEY_free(pkey) }
}

/// A P-256 key pair made for one message (RFC 8291's application-server key), freed in deinit.
final class EphemeralKey {
    let pkey: OpaquePointer
    let publicPoint: [UInt8]

    init() throws(EncryptionError) {
        ERR_clear_error()
        guard let key = copenssl_ec_gen("P-256") else { throw .openSSL(openSSLErrorText()) }
        guard let point = uncompressedPublicPoint(of: key), point.count == 65 else {
            EVP_PKEY_free(key)
            throw .openSSL("cannot read the ephemeral public key")
        }
        pkey = key
        publicPoint = point
    }

    /// A given private key (PEM), for fixed test vectors.
    init(pem: String) throws(EncryptionError) {
        let key: OpaquePointer
        do { key = try readPrivateKeyPEM(pem) } catch { throw .openSSL(error.description) }
        guard let point = uncompressedPublicPoint(of: key), point.count == 65 else {
            EVP_PKEY_free(key)
            throw .openSSL("not a P-256 key")
        }
        pkey = key
        publicPoint = point
    }

    deinit { EVP_PKEY_free(pkey) }

    /// ECDH with the subscriber's key: the 32-byte shared x coordinate.
    func sharedSecret(with peer: ReceiverKey) throws(EncryptionError) -> [UInt8] {
        ERR_clear_error()
        guard let ctx = EVP_PKEY_CTX_new(pkey, nil) else { throw .openSSL(openSSLErrorText()) }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_derive_init(ctx) == 1, EVP_PKEY_derive_set_peer(ctx, peer.pkey) == 1 else {
            throw .openSSL(openSSLErrorText())
        }
        var secret = [UInt8](repeating: 0, count: 32)
        var length = secret.count
        guard EVP_PKEY_derive(ctx, &secret, &length) == 1, length == 32 else { throw .openSSL(openSSLErrorText()) }
        return secret
    }
}

/// HKDF-SHA256 (RFC 5869, extract then expand) through OpenSSL's EVP_PKEY HKDF.
func hkdf(salt: [UInt8], key: [UInt8], info: [UInt8], length: Int) throws(EncryptionError) -> [UInt8] {
    ERR_clear_error()
    guard let ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil) else { throw .openSSL(openSSLErrorText()) }
    defer { EVP_PKEY_CTX_free(ctx) }
    var out = [UInt8](repeating: 0, count: length)
    var outLength = length
    let ok = EVP_PKEY_derive_init(ctx) == 1
        && EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) == 1
        && EVP_PKEY_CTX_set1_hkdf_salt(ctx, salt, Int32(salt.count)) == 1
        && EVP_PKEY_CTX_set1_hkdf_key(ctx, key, Int32(key.count)) == 1
        && EVP_PKEY_CTX_add1_hkdf_info(ctx, info, Int32(info.count)) == 1
        && EVP_PKEY_derive(ctx, &out, &outLength) == 1
    guard ok, outLength == length else { throw .openSSL(openSSLErrorText()) }
    return out
}

/// AES-128-GCM encryption of `plaintext`: ciphertext followed by the 16-byte tag.
func aes128GCMSeal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8]) throws(EncryptionError) -> [UInt8] {
    ERR_clear_error()
    guard let ctx = EVP_CIPHER_CTX_new() else { throw .openSSL(openSSLErrorText()) }
    defer { EVP_CIPHER_CTX_free(ctx) }
    var out = [UInt8](repeating: 0, count: plaintext.count + 16)
    var written: Int32 = 0
    var finalWritten: Int32 = 0
    guard EVP_EncryptInit_ex(ctx, EVP_aes_128_gcm(), nil, key, nonce) == 1 else { throw .openSSL(openSSLErrorText()) }
    let updated = out.withUnsafeMutableBufferPointer { o in
        EVP_EncryptUpdate(ctx, o.baseAddress, &written, plaintext, Int32(plaintext.count))
    }
    guard updated == 1 else { throw .openSSL(openSSLErrorText()) }
    let finished = out.withUnsafeMutableBufferPointer { o in
        EVP_EncryptFinal_ex(ctx, o.baseAddress! + Int(written), &finalWritten)
    }
    guard finished == 1, Int(written + finalWritten) == plaintext.count else { throw .openSSL(openSSLErrorText()) }
    let tagged = out.withUnsafeMutableBufferPointer { o in
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, o.baseAddress! + plaintext.count)
    }
    guard tagged == 1 else { throw .openSSL(openSSLErrorText()) }
    return out
}

/// Fresh random bytes from OpenSSL's CSPRNG.
func randomBytes(_ count: Int) throws(EncryptionError) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    guard RAND_bytes(&out, Int32(count)) == 1 else { throw .openSSL(openSSLErrorText()) }
    return out
}

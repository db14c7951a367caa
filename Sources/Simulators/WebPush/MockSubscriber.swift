import COpenSSL
import Foundation

/// A browser's side of a subscription, minted by the simulator: a P-256 key pair and a 16-byte auth secret.
/// It decrypts what is pushed to it (RFC 8291, aes128gcm of RFC 8188) with its own OpenSSL calls, written apart
/// from Herald's `WebPush` module on purpose, so each checks the other. Owns its `EVP_PKEY`. Loop-confined.
final class MockSubscriber {
    let id: String
    let privateKey: OpaquePointer
    /// The public point, uncompressed (`keys.p256dh`).
    let publicPoint: [UInt8]
    let auth: [UInt8]
    /// The applicationServerKey the subscription was made with (a browser binds it); nil: any key.
    let applicationServerKey: [UInt8]?

    init(id: String, applicationServerKey: [UInt8]?) throws {
        self.id = id
        privateKey = try OpenSSLSupport.generateP256()
        guard let point = MockSubscriber.point(of: privateKey) else { EVP_PKEY_free(privateKey); throw OpenSSLSupport.lastError("public point") }
        publicPoint = point
        var secret = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&secret, 16) == 1 else { EVP_PKEY_free(privateKey); throw OpenSSLSupport.lastError("RAND_bytes") }
        auth = secret
        self.applicationServerKey = applicationServerKey
    }

    deinit { EVP_PKEY_free(privateKey) }

    var privateKeyPEM: String { (try? OpenSSLSupport.pkcs8PEM(privateKey)).map { String(decoding: $0, as: UTF8.self) } ?? "" }

    static func point(of key: OpaquePointer) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 65)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, &out, 65, &length) == 1, length == 65 else {
            OpenSSLSupport.clearErrors()
            return nil
        }
        return out
    }

    /// A raw uncompressed P-256 point as an `EVP_PKEY` (the caller frees it): the point behind the fixed
    /// SubjectPublicKeyInfo prefix, decoded (and checked on the curve) by OpenSSL.
    static func publicKey(point: [UInt8]) -> OpaquePointer? {
        guard point.count == 65, point[0] == 4 else { return nil }
        let der: [UInt8] = [0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86,
                            0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00] + point
        return der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let key = d2i_PUBKEY(nil, &cursor, buffer.count)
            if key == nil { OpenSSLSupport.clearErrors() }
            return key
        }
    }

    enum DecryptionFailure: Error, Equatable { case header(String), key, tag, padding }

    /// The plaintext of an aes128gcm body sent to this subscriber: one record (the only kind Web Push sends).
    func decrypt(_ body: [UInt8]) -> Result<[UInt8], DecryptionFailure> {
        guard body.count >= 21 else { return .failure(.header("shorter than the aes128gcm header")) }
        let salt = Array(body[0..<16])
        let rs = Int(body[16]) << 24 | Int(body[17]) << 16 | Int(body[18]) << 8 | Int(body[19])
        let idLength = Int(body[20])
        guard idLength == 65, body.count >= 21 + idLength + 17 else { return .failure(.header("keyid is not a 65-byte P-256 point")) }
        let senderPoint = Array(body[21..<(21 + idLength)])
        let record = Array(body[(21 + idLength)...])
        guard rs >= 18, record.count <= rs else { return .failure(.header("more than one record (rs \(rs))")) }
        guard let sender = Self.publicKey(point: senderPoint) else { return .failure(.key) }
        defer { EVP_PKEY_free(sender) }
        guard let shared = Self.derive(privateKey, sender) else { return .failure(.key) }
        let keyInfo = Array("WebPush: info".utf8) + [0] + publicPoint + senderPoint
        guard let ikm = Self.hkdf(salt: auth, ikm: shared, info: keyInfo, length: 32),
              let cek = Self.hkdf(salt: salt, ikm: ikm, info: Array("Content-Encoding: aes128gcm".utf8) + [0], length: 16),
              let nonce = Self.hkdf(salt: salt, ikm: ikm, info: Array("Content-Encoding: nonce".utf8) + [0], length: 12)
        else { return .failure(.key) }
        guard var plain = Self.open(record, key: cek, nonce: nonce) else { return .failure(.tag) }
        while plain.last == 0 { plain.removeLast() }
        guard plain.last == 2 else { return .failure(.padding) }
        plain.removeLast()
        return .success(plain)
    }

    private static func derive(_ own: OpaquePointer, _ peer: OpaquePointer) -> [UInt8]? {
        guard let context = EVP_PKEY_CTX_new(own, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        var out = [UInt8](repeating: 0, count: 32)
        var length = 32
        guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_derive_set_peer(context, peer) == 1,
              EVP_PKEY_derive(context, &out, &length) == 1, length == 32
        else { OpenSSLSupport.clearErrors(); return nil }
        return out
    }

    private static func hkdf(salt: [UInt8], ikm: [UInt8], info: [UInt8], length: Int) -> [UInt8]? {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        var out = [UInt8](repeating: 0, count: length)
        var outLength = length
        guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_CTX_set_hkdf_md(context, EVP_sha256()) == 1,
              EVP_PKEY_CTX_set1_hkdf_salt(context, salt, Int32(salt.count)) == 1,
              EVP_PKEY_CTX_set1_hkdf_key(context, ikm, Int32(ikm.count)) == 1,
              EVP_PKEY_CTX_add1_hkdf_info(context, info, Int32(info.count)) == 1,
              EVP_PKEY_derive(context, &out, &outLength) == 1, outLength == length
        else { OpenSSLSupport.clearErrors(); return nil }
        return out
    }

    /// AES-128-GCM open: ciphertext || 16-byte tag; nil when the tag does not verify.
    private static func open(_ sealed: [UInt8], key: [UInt8], nonce: [UInt8]) -> [UInt8]? {
        guard sealed.count >= 16, let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        let cipherLength = sealed.count - 16
        var tag = Array(sealed[cipherLength...])
        var out = [UInt8](repeating: 0, count: cipherLength + 16)
        var written: Int32 = 0
        var tail: Int32 = 0
        guard EVP_DecryptInit_ex(context, EVP_aes_128_gcm(), nil, key, nonce) == 1,
              EVP_DecryptUpdate(context, &out, &written, sealed, Int32(cipherLength)) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, 16, &tag) == 1
        else { OpenSSLSupport.clearErrors(); return nil }
        let finished = out.withUnsafeMutableBufferPointer { EVP_DecryptFinal_ex(context, $0.baseAddress! + Int(written), &tail) }
        guard finished == 1 else { OpenSSLSupport.clearErrors(); return nil }
        return Array(out.prefix(Int(written + tail)))
    }
}

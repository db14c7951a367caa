import COpenSSL
import Foundation

/// A browser's side of a subscription, minted by the simulator: a P-256 key pair and a 16-byte auth secret.
/// It decrypts what is pushed to it (RFC 8291, aes128gcm of RFC 8188) in its own steps, written apart from
/// Herald's `WebPush` module on purpose, so each checks the other (they share only COpenSSL's shims over OpenSSL
/// calls). Owns its `EVP_PKEY`. Loop-confined.
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

    /// A raw uncompressed P-256 point as an `EVP_PKEY` (the caller frees it), checked on the curve by OpenSSL.
    static func publicKey(point: [UInt8]) -> OpaquePointer? {
        guard point.count == 65, point[0] == 4 else { return nil }
        let key = copenssl_p256_public_key(point, 65)
        if key == nil { OpenSSLSupport.clearErrors() }
        return key
    }

    enum DecryptionFailure: Error, Equatable { case header(String), key, tag, padding }

    /// The plaintext of an aes128gcm body sent to this subscriber: one record (the only kind Web Push sends).
    func decrypt(_ body: [UInt8], with contexts: MockDecryptionContexts) -> Result<[UInt8], DecryptionFailure> {
        guard body.count >= 21 else { return .failure(.header("shorter than the aes128gcm header")) }
        let salt = Array(body[0..<16])
        let rs = Int(body[16]) << 24 | Int(body[17]) << 16 | Int(body[18]) << 8 | Int(body[19])
        let idLength = Int(body[20])
        guard idLength == 65, body.count >= 21 + idLength + 17 else { return .failure(.header("keyid is not a 65-byte P-256 point")) }
        let senderPoint = Array(body[21..<(21 + idLength)])
        let record = Array(body[(21 + idLength)...])
        guard rs >= 18, record.count <= rs else { return .failure(.header("more than one record (rs \(rs))")) }
        guard let sender = contexts.senderKey(senderPoint) else { return .failure(.key) }
        var shared = [UInt8](repeating: 0, count: 32)
        guard copenssl_p256_ecdh(privateKey, sender, &shared) == 1 else { OpenSSLSupport.clearErrors(); return .failure(.key) }
        let keyInfo = Array("WebPush: info".utf8) + [0] + publicPoint + senderPoint
        guard let ikm = contexts.hkdf(salt: auth, ikm: shared, info: keyInfo, length: 32),
              let cek = contexts.hkdf(salt: salt, ikm: ikm, info: Array("Content-Encoding: aes128gcm".utf8) + [0], length: 16),
              let nonce = contexts.hkdf(salt: salt, ikm: ikm, info: Array("Content-Encoding: nonce".utf8) + [0], length: 12)
        else { return .failure(.key) }
        guard var plain = contexts.open(record, key: cek, nonce: nonce) else { return .failure(.tag) }
        while plain.last == 0 { plain.removeLast() }
        guard plain.last == 2 else { return .failure(.padding) }
        plain.removeLast()
        return .success(plain)
    }
}

/// The OpenSSL state the simulator decrypts every message with, made once: an HMAC-SHA-256 and an AES-128-GCM
/// context (their algorithms fetched once; named per message, OpenSSL 3 looks each up by name under a lock) and
/// one `EVP_PKEY` whose point is replaced by each message's sender key, checked on the curve by OpenSSL.
/// Loop-confined with its `WebPushCore`: OpenSSL's contexts are for one thread at a time.
final class MockDecryptionContexts {
    private let mac: OpaquePointer
    private let cipher: OpaquePointer
    private var sender: OpaquePointer?

    init() throws {
        guard let mac = copenssl_hmac_sha256_ctx() else { throw OpenSSLSupport.lastError("HMAC-SHA-256") }
        guard let cipher = copenssl_aes_128_gcm_ctx(0) else { EVP_MAC_CTX_free(mac); throw OpenSSLSupport.lastError("AES-128-GCM") }
        self.mac = mac
        self.cipher = cipher
    }

    deinit {
        EVP_MAC_CTX_free(mac)
        EVP_CIPHER_CTX_free(cipher)
        if let sender { EVP_PKEY_free(sender) }
    }

    /// The kept key holding `point` (valid until the next call), or nil when OpenSSL refuses the point.
    func senderKey(_ point: [UInt8]) -> OpaquePointer? {
        if let sender {
            if EVP_PKEY_set1_encoded_public_key(sender, point, point.count) == 1 { return sender }
            EVP_PKEY_free(sender)
            self.sender = nil
            OpenSSLSupport.clearErrors()
            return nil
        }
        sender = MockSubscriber.publicKey(point: point)
        return sender
    }

    /// HKDF-SHA-256 (RFC 5869) for up to 32 bytes: extract, then one expand block.
    func hkdf(salt: [UInt8], ikm: [UInt8], info: [UInt8], length: Int) -> [UInt8]? {
        guard length <= 32, let prk = hmac(key: salt, ikm), let block = hmac(key: prk, info + [1]) else { return nil }
        return Array(block.prefix(length))
    }

    private func hmac(key: [UInt8], _ message: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 32)
        var length = 0
        guard EVP_MAC_init(mac, key, key.count, nil) == 1, EVP_MAC_update(mac, message, message.count) == 1,
              EVP_MAC_final(mac, &out, &length, 32) == 1, length == 32
        else { OpenSSLSupport.clearErrors(); return nil }
        return out
    }

    /// AES-128-GCM open: ciphertext || 16-byte tag; nil when the tag does not verify.
    func open(_ sealed: [UInt8], key: [UInt8], nonce: [UInt8]) -> [UInt8]? {
        guard sealed.count >= 16 else { return nil }
        let cipherLength = sealed.count - 16
        var tag = Array(sealed[cipherLength...])
        var out = [UInt8](repeating: 0, count: cipherLength + 16)
        var written: Int32 = 0
        var tail: Int32 = 0
        guard EVP_DecryptInit_ex2(cipher, nil, key, nonce, nil) == 1,
              EVP_DecryptUpdate(cipher, &out, &written, sealed, Int32(cipherLength)) == 1,
              EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_SET_TAG, 16, &tag) == 1
        else { OpenSSLSupport.clearErrors(); return nil }
        let finished = out.withUnsafeMutableBufferPointer { EVP_DecryptFinal_ex(cipher, $0.baseAddress! + Int(written), &tail) }
        guard finished == 1 else { OpenSSLSupport.clearErrors(); return nil }
        return Array(out.prefix(Int(written + tail)))
    }
}

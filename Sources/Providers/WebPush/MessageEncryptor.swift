import COpenSSL
import PushCore

/// RFC 8291 encryption with everything that does not change between messages kept: a P-256 key-generation
/// context, the subscriber key (one `EVP_PKEY` whose point is replaced per message, OpenSSL checking it is on the
/// curve), an HMAC-SHA-256 and an AES-128-GCM context, their algorithms fetched once, when they are made (named
/// per use, each is looked up by name under a lock: a quarter of a message's CPU before). A message is then one
/// key generation, one ECDH derivation, five HMACs (RFC 8291's HKDF steps, section 3.4) and one GCM record,
/// written in one pass into the body's one allocation.
///
/// Not thread-safe, hence not Sendable: OpenSSL's `EVP_PKEY_CTX`, `EVP_MAC_CTX` and `EVP_CIPHER_CTX` must not be
/// used by two threads at once, and the subscriber key is rewritten per message. A `WebPushSender` keeps one and
/// uses it only on its loop; `MessageEncryption.encrypt` makes its own per call.
public final class MessageEncryptor {
    private let keygen: OpaquePointer
    private let mac: OpaquePointer
    private let cipher: OpaquePointer
    /// The last subscriber's key, made from the first point it was given; nil again after a point OpenSSL refused.
    private var receiver: OpaquePointer?
    /// The ECDH secret and the HKDF keys between steps (six 32-byte slots), wiped after every message.
    private let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: 6 * 32)

    /// RFC 8291 section 3.4's HKDF info strings, each with the 0x01 of HKDF-Expand's single block.
    private static let keyInfoLabel = Array("WebPush: info\0".utf8)
    private static let cekInfo = Array("Content-Encoding: aes128gcm\0\u{1}".utf8)
    private static let nonceInfo = Array("Content-Encoding: nonce\0\u{1}".utf8)
    private static let one: [UInt8] = [1]
    /// The record's tail after the payload: RFC 8188's last-record delimiter, then zero padding.
    private static let delimiterAndPadding = [0x02] + [UInt8](repeating: 0, count: MessageEncryption.maxPayloadLength)

    public init() throws(EncryptionError) {
        ERR_clear_error()
        guard let keygen = copenssl_p256_keygen_ctx() else { throw .openSSL(openSSLErrorText()) }
        guard let mac = copenssl_hmac_sha256_ctx() else {
            EVP_PKEY_CTX_free(keygen)
            throw .openSSL(openSSLErrorText())
        }
        guard let cipher = copenssl_aes_128_gcm_ctx(1) else {
            EVP_PKEY_CTX_free(keygen)
            EVP_MAC_CTX_free(mac)
            throw .openSSL(openSSLErrorText())
        }
        self.keygen = keygen
        self.mac = mac
        self.cipher = cipher
    }

    deinit {
        EVP_PKEY_CTX_free(keygen)
        EVP_MAC_CTX_free(mac)
        EVP_CIPHER_CTX_free(cipher)
        if let receiver { EVP_PKEY_free(receiver) }
        scratch.deallocate()
    }

    /// The encrypted body for `subscription`: a fresh sender key and salt.
    public func encrypt(_ payload: [UInt8], for subscription: PushSubscription) throws(EncryptionError) -> [UInt8] {
        guard payload.count <= MessageEncryption.maxPayloadLength else { throw .tooLarge(payload.count) }
        ERR_clear_error()
        var key: OpaquePointer?
        guard EVP_PKEY_generate(keygen, &key) == 1, let key else { throw .openSSL(openSSLErrorText()) }
        defer { EVP_PKEY_free(key) }
        return try encrypt(payload, for: subscription, senderKey: key, salt: nil)
    }

    /// With a given sender key, and a given salt or (nil) a fresh one.
    func encrypt(_ payload: [UInt8], for subscription: PushSubscription, senderKey: OpaquePointer, salt: [UInt8]?)
        throws(EncryptionError) -> [UInt8]
    {
        guard payload.count <= MessageEncryption.maxPayloadLength else { throw .tooLarge(payload.count) }
        let receiver = try receiverKey(subscription.p256dh)
        let length = MessageEncryption.encryptedLength(ofPayload: payload.count)
        var failure: String?
        let body = [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
            failure = seal(payload, subscription, senderKey: senderKey, receiver: receiver, salt: salt, into: buffer.baseAddress!, length: length)
            count = failure == nil ? length : 0
        }
        OPENSSL_cleanse(scratch, 6 * 32)
        if let failure { throw .openSSL(failure) }
        return body
    }

    /// RFC 8188's header (salt, record size, the sender's point as keyid), then the one record and its tag, at
    /// `out`; nil, or what failed.
    private func seal(_ payload: [UInt8], _ subscription: PushSubscription, senderKey: OpaquePointer, receiver: OpaquePointer,
                      salt: [UInt8]?, into out: UnsafeMutablePointer<UInt8>, length: Int) -> String?
    {
        let headerLength = MessageEncryption.headerLength, tagLength = MessageEncryption.tagLength
        if let salt {
            guard salt.count == 16 else { return "the salt is \(salt.count) bytes, not 16" }
            out.update(from: salt, count: 16)
        } else if RAND_bytes(out, 16) != 1 {
            return openSSLErrorText()
        }
        let rs = UInt32(MessageEncryption.recordSize)
        (out[16], out[17], out[18], out[19]) = (UInt8(rs >> 24), UInt8(rs >> 16 & 0xFF), UInt8(rs >> 8 & 0xFF), UInt8(rs & 0xFF))
        out[20] = 65
        let senderPoint = out + 21
        var pointLength = 0
        guard EVP_PKEY_get_octet_string_param(senderKey, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, senderPoint, 65, &pointLength) == 1,
              pointLength == 65
        else { return "cannot read the sender's public key" }
        let secret = scratch, prkKey = scratch + 32, ikm = scratch + 64, prk = scratch + 96, cek = scratch + 128, nonce = scratch + 160
        guard copenssl_p256_ecdh(senderKey, receiver, secret) == 1 else { return openSSLErrorText() }
        // RFC 8291 section 3.4: IKM = HKDF(auth, ecdh_secret, "WebPush: info" || 0x00 || ua_public || as_public, 32),
        // then CEK and NONCE = HKDF(salt, IKM, their info, 16 and 12).
        let derived = hmac(key: subscription.auth, 16, secret, 32, into: prkKey)
            && EVP_MAC_init(mac, prkKey, 32, nil) == 1 && EVP_MAC_update(mac, Self.keyInfoLabel, Self.keyInfoLabel.count) == 1
            && EVP_MAC_update(mac, subscription.p256dh, 65) == 1 && EVP_MAC_update(mac, senderPoint, 65) == 1
            && EVP_MAC_update(mac, Self.one, 1) == 1 && finish(into: ikm)
            && hmac(key: out, 16, ikm, 32, into: prk)
            && hmac(key: prk, 32, Self.cekInfo, Self.cekInfo.count, into: cek)
            && hmac(key: prk, 32, Self.nonceInfo, Self.nonceInfo.count, into: nonce)
        guard derived else { return openSSLErrorText() }
        let record = out + headerLength
        let tail = MessageEncryption.paddedLength(payload.count) + 1 - payload.count
        var written: Int32 = 0, tailWritten: Int32 = 0, finalWritten: Int32 = 0
        guard EVP_EncryptInit_ex2(cipher, nil, cek, nonce, nil) == 1,
              EVP_EncryptUpdate(cipher, record, &written, payload, Int32(payload.count)) == 1,
              EVP_EncryptUpdate(cipher, record + Int(written), &tailWritten, Self.delimiterAndPadding, Int32(tail)) == 1,
              EVP_EncryptFinal_ex(cipher, record + Int(written + tailWritten), &finalWritten) == 1,
              headerLength + Int(written + tailWritten + finalWritten) + tagLength == length,
              EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), out + length - tagLength) == 1
        else { return openSSLErrorText() }
        return nil
    }

    /// HMAC-SHA-256 of one message under `key`, 32 bytes into `out`.
    private func hmac(key: UnsafePointer<UInt8>, _ keyLength: Int, _ message: UnsafePointer<UInt8>, _ messageLength: Int,
                      into out: UnsafeMutablePointer<UInt8>) -> Bool
    {
        EVP_MAC_init(mac, key, keyLength, nil) == 1 && EVP_MAC_update(mac, message, messageLength) == 1 && finish(into: out)
    }

    private func finish(into out: UnsafeMutablePointer<UInt8>) -> Bool {
        var length = 0
        return EVP_MAC_final(mac, out, &length, 32) == 1 && length == 32
    }

    /// The subscriber's point in the kept key (made on first use); a point OpenSSL refuses drops the key.
    private func receiverKey(_ point: [UInt8]) throws(EncryptionError) -> OpaquePointer {
        guard point.count == 65, point[0] == 0x04 else { throw .openSSL("bad subscriber key") }
        if let receiver {
            if EVP_PKEY_set1_encoded_public_key(receiver, point, 65) == 1 { return receiver }
            EVP_PKEY_free(receiver)
            self.receiver = nil
        } else if let made = copenssl_p256_public_key(point, 65) {
            receiver = made
            return made
        }
        ERR_clear_error()
        throw .openSSL("bad subscriber key")
    }
}

/// RFC 8291 message encryption in RFC 8188's aes128gcm content coding: a fresh P-256 key and 16-byte salt per
/// message, the keys derived with HKDF from the ECDH secret and the subscriber's auth secret, and the payload in
/// one AES-128-GCM record (payload, the 0x02 last-record delimiter, zero padding). Every primitive is OpenSSL's;
/// `MessageEncryptor` does the work.
public enum MessageEncryption {
    /// The record size written in the header: the whole body must fit in 4096 bytes, what every push service
    /// accepts (RFC 8291 section 4).
    public static let recordSize = 4096
    /// salt(16) || rs(4) || idlen(1) || keyid(65).
    public static let headerLength = 86
    static let tagLength = 16
    /// The largest payload: one record of `recordSize` bytes less the header, the tag and the delimiter (3993).
    public static let maxPayloadLength = recordSize - headerLength - tagLength - 1
    /// Payloads are padded up to a multiple of this (never past the limit), so their exact length does not show.
    public static let paddingBlock = 32

    /// The encrypted body for `subscription`, with an encryptor of its own (a sender keeps one: `MessageEncryptor`).
    public static func encrypt(_ payload: [UInt8], for subscription: PushSubscription) throws(EncryptionError) -> [UInt8] {
        try MessageEncryptor().encrypt(payload, for: subscription)
    }

    /// The body length a payload of `length` bytes encrypts to (the size check needs no keys).
    public static func encryptedLength(ofPayload length: Int) -> Int {
        headerLength + paddedLength(length) + 1 + tagLength
    }

    static func paddedLength(_ length: Int) -> Int {
        let rounded = (length + paddingBlock - 1) / paddingBlock * paddingBlock
        return min(max(rounded, length), maxPayloadLength)
    }

    /// With a given sender key and salt: the fixed vectors the tests compare.
    static func encrypt(_ payload: [UInt8], for subscription: PushSubscription, senderKey: EphemeralKey, salt: [UInt8])
        throws(EncryptionError) -> [UInt8]
    {
        try MessageEncryptor().encrypt(payload, for: subscription, senderKey: senderKey.pkey, salt: salt)
    }
}

public enum EncryptionError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooLarge(Int)
    case openSSL(String)

    public var description: String {
        switch self {
        case .tooLarge(let n):
            return "payload is \(n) bytes; Web Push carries at most \(MessageEncryption.maxPayloadLength) (4096 encrypted)"
        case .openSSL(let d): return "encryption failed: \(d)"
        }
    }
}

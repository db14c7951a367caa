import PushCore

/// An application server's VAPID key (RFC 8292): a P-256 key, in PEM or as web-push libraries print it
/// (the 32-byte private scalar in base64url). Signs through PushCore's `SigningKey`, the one ES256 signer.
public struct VAPIDKey: Sendable {
    public let signingKey: SigningKey
    /// The public point, uncompressed: the header's `k` and the page's applicationServerKey.
    public let publicKey: [UInt8]

    /// PEM text (PKCS#8 or SEC1), or a base64url private scalar.
    public init(text: String) throws(CredentialError) {
        let trimmed = text.trimmingSpaces
        if trimmed.contains("-----BEGIN ") {
            try self.init(signingKey: SigningKey(pem: trimmed))
        } else {
            guard let scalar = base64URLDecoded(trimmed), trimmed.utf8.allSatisfy(isBase64URLCharacter) else {
                throw .unreadableKey(detail: "a VAPID key is PEM text or a base64url private key")
            }
            try self.init(privateScalar: scalar)
        }
    }

    /// The 32-byte private scalar: read by OpenSSL as a SEC1 `ECPrivateKey` without its public part, which
    /// OpenSSL computes.
    public init(privateScalar: [UInt8]) throws(CredentialError) {
        guard privateScalar.count == 32 else {
            throw .unreadableKey(detail: "a base64url VAPID private key is 32 bytes, this one is \(privateScalar.count)")
        }
        try self.init(signingKey: SigningKey(pem: Self.pem(privateScalar: privateScalar)))
    }

    /// A 32-byte P-256 private scalar as SEC1 PEM, SEQUENCE { INTEGER 1, OCTET STRING d, [0] prime256v1 }
    /// (RFC 5915), without the public part.
    static func pem(privateScalar: [UInt8]) -> String {
        let der: [UInt8] = [0x30, 0x31, 0x02, 0x01, 0x01, 0x04, 0x20] + privateScalar
            + [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
        return "-----BEGIN EC PRIVATE KEY-----\n" + base64Encoded(der) + "\n-----END EC PRIVATE KEY-----\n"
    }

    public init(signingKey: SigningKey) throws(CredentialError) {
        guard let point = signingKey.publicPointBytes(), point.count == 65 else {
            throw .unreadableKey(detail: "cannot read the VAPID public key")
        }
        self.signingKey = signingKey
        self.publicKey = point
    }

    /// The applicationServerKey a web page passes to `pushManager.subscribe` (and VAPID's `k`).
    public var applicationServerKey: String { base64URLEncoded(publicKey) }
}

/// Standard base64 with padding, for PEM bodies (64-character lines are not required by OpenSSL for short keys).
func base64Encoded(_ bytes: [UInt8]) -> String {
    var text = base64URLEncoded(bytes)
    text = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
    while text.utf8.count % 4 != 0 { text += "=" }
    return text
}

extension String {
    var trimmingSpaces: String {
        let bytes = Array(utf8)
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        guard let start = bytes.firstIndex(where: { !isSpace($0) }), let end = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(decoding: bytes[start...end], as: UTF8.self)
    }
}

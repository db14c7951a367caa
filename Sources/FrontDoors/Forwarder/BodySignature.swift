import COpenSSL

/// The signature a receiver checks: HMAC-SHA256 of the exact body bytes with the shared key, in lowercase hex.
public enum BodySignature {
    public static func hmacSHA256Hex(key: [UInt8], body: [UInt8]) -> String {
        var out = [UInt8](repeating: 0, count: 32)
        var length = 0
        let made = key.withUnsafeBytes { k in
            body.withUnsafeBufferPointer { b in
                EVP_Q_mac(nil, "HMAC", nil, "SHA256", nil, k.baseAddress, key.count, b.baseAddress, body.count, &out, out.count, &length)
            }
        }
        // Only a broken OpenSSL fails here; an empty signature then makes every receiver refuse, never pass.
        guard made != nil, length == 32 else { return "" }
        return out.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}

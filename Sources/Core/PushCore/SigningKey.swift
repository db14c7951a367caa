import COpenSSL
import Foundation

/// An ES256 signing key (EC P-256), owning its OpenSSL `EVP_PKEY`, freed in deinit: APNs' provider-token key
/// (a `.p8` file) and Web Push's VAPID key share it.
///
/// OpenSSL 3 allows concurrent read-only use of one `EVP_PKEY` from many threads (openssl-threads(7)); the
/// token cache signs under its lock anyway, roughly once every 50 minutes.
/// @unchecked: never modified after init, and each `sign` call uses its own `EVP_MD_CTX`.
public final class SigningKey: @unchecked Sendable {
    let pkey: OpaquePointer

    /// Loads a PKCS#8 PEM (Apple's `.p8`) file.
    public convenience init(p8File path: String) throws(CredentialError) {
        guard FileManager.default.fileExists(atPath: path) else { throw .fileNotFound(path: path) }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw .unreadable(path: path, detail: "\(error.localizedDescription)")
        }
        try self.init(pem: String(decoding: data, as: UTF8.self))
    }

    /// Parses PEM text (PKCS#8 `PRIVATE KEY`, or SEC1 `EC PRIVATE KEY`); must be a P-256 key.
    public init(pem: String) throws(CredentialError) {
        let key = try readPrivateKeyPEM(pem)
        let baseID = EVP_PKEY_get_base_id(key)
        guard baseID == EVP_PKEY_EC else {
            EVP_PKEY_free(key)
            let name: String
            switch baseID {
            case EVP_PKEY_RSA, EVP_PKEY_RSA_PSS: name = "an RSA key"
            case EVP_PKEY_ED25519: name = "an Ed25519 key"
            default: name = "a key of type \(baseID)"
            }
            throw .notAnECKey(type: name)
        }
        var group = [CChar](repeating: 0, count: 80)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, &group, group.count, &length) == 1 else {
            EVP_PKEY_free(key)
            throw .unreadableKey(detail: "EC key without a named curve")
        }
        let curve = String(decoding: group.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard curve == "prime256v1" || curve == "P-256" else {
            EVP_PKEY_free(key)
            throw .wrongCurve(curve)
        }
        pkey = key
    }

    deinit { EVP_PKEY_free(pkey) }

    /// ES256 over `message`: the 64-byte JOSE form r||s (RFC 7518 3.4), converted from OpenSSL's DER.
    public func signES256(_ message: [UInt8]) throws(CredentialError) -> [UInt8] {
        ERR_clear_error()
        guard let ctx = EVP_MD_CTX_new() else { throw .signingFailed(detail: "EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else {
            throw .signingFailed(detail: openSSLErrorText())
        }
        var der = [UInt8](repeating: 0, count: 80)
        var derLength = der.count
        let ok = message.withUnsafeBufferPointer { m in
            EVP_DigestSign(ctx, &der, &derLength, m.baseAddress, m.count)
        }
        guard ok == 1 else { throw .signingFailed(detail: openSSLErrorText()) }
        guard let rs = derToRawECDSA(Array(der.prefix(derLength)), width: 32) else {
            throw .signingFailed(detail: "cannot decode DER signature")
        }
        return rs
    }

    /// The public half as SubjectPublicKeyInfo PEM, for verifiers (a test server, the demo).
    public func publicKeyPEM() -> String? { PushCore.publicKeyPEM(of: pkey) }

    /// The public point uncompressed (0x04 || x || y, 65 bytes): VAPID's `k` and a web page's
    /// applicationServerKey.
    public func publicPointBytes() -> [UInt8]? { uncompressedPublicPoint(of: pkey) }
}

/// DER `ECDSA-Sig-Value` to r||s, each big-endian and left-padded to `width` bytes.
func derToRawECDSA(_ der: [UInt8], width: Int) -> [UInt8]? {
    der.withUnsafeBufferPointer { buffer -> [UInt8]? in
        var p: UnsafePointer<UInt8>? = buffer.baseAddress
        guard let sig = d2i_ECDSA_SIG(nil, &p, buffer.count) else { return nil }
        defer { ECDSA_SIG_free(sig) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(sig, &r, &s)
        guard let r, let s else { return nil }
        var out = [UInt8](repeating: 0, count: 2 * width)
        let okR = out.withUnsafeMutableBufferPointer { BN_bn2binpad(r, $0.baseAddress, Int32(width)) }
        let okS = out.withUnsafeMutableBufferPointer { BN_bn2binpad(s, $0.baseAddress! + width, Int32(width)) }
        return okR == width && okS == width ? out : nil
    }
}

/// An EC key's public point as SEC1 uncompressed bytes (65 for P-256); nil when OpenSSL cannot give it.
public func uncompressedPublicPoint(of pkey: OpaquePointer) -> [UInt8]? {
    var out = [UInt8](repeating: 0, count: 133)
    var length = 0
    guard EVP_PKEY_get_octet_string_param(pkey, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, &out, out.count, &length) == 1 else {
        ERR_clear_error()
        return nil
    }
    return Array(out.prefix(length))
}

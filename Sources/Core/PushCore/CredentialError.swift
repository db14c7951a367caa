import COpenSSL

/// Why a provider-token credential cannot be used; every case names what to fix.
public enum CredentialError: Error, Equatable, Sendable, CustomStringConvertible {
    case fileNotFound(path: String)
    case unreadable(path: String, detail: String)
    case notPEM
    case unreadableKey(detail: String)
    case notAnECKey(type: String)
    case wrongCurve(String)
    case badKeyID(String)
    case badTeamID(String)
    case signingFailed(detail: String)

    public var description: String {
        switch self {
        case .fileNotFound(let p): return "key file not found: \(p)"
        case .unreadable(let p, let d): return "cannot read key file \(p): \(d)"
        case .notPEM: return "key is not PEM text (expected -----BEGIN PRIVATE KEY----- from an Apple .p8 file)"
        case .unreadableKey(let d): return "PEM does not hold a readable private key: \(d)"
        case .notAnECKey(let t): return "key is \(t), but APNs tokens need an EC P-256 key (ES256)"
        case .wrongCurve(let c): return "key is on curve \(c), but APNs tokens need P-256 (prime256v1)"
        case .badKeyID(let k): return "key ID \"\(k)\" is not 10 letters or digits (see the key's page in the developer account)"
        case .badTeamID(let t): return "team ID \"\(t)\" is not 10 letters or digits"
        case .signingFailed(let d): return "ES256 signing failed: \(d)"
        }
    }
}

/// OpenSSL's queued errors as one line (see `copenssl_drain_errors`).
public func openSSLErrorText() -> String {
    var buffer = [CChar](repeating: 0, count: 1024)
    let count = copenssl_drain_errors(&buffer, buffer.count)
    return count == 0 ? "no OpenSSL detail" : String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

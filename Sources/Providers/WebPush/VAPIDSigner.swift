import Basics
import PushCore

/// Makes VAPID authorizations (RFC 8292): an ES256 JWT with `aud` the push service's origin, `exp` at most 24 h
/// ahead and `sub` the operator's contact, sent as `Authorization: vapid t=<jwt>,k=<public key>` (no space after the comma, as pywebpush writes it and py_vapid reads it).
public struct VAPIDSigner: Sendable {
    public let key: VAPIDKey
    public let subject: String

    /// What a token's `exp` lies ahead of its signing: half of RFC 8292's 24 h, as web-push libraries do, so a
    /// push service's clock running ahead still accepts it.
    public static let lifetimeSeconds: Int64 = 12 * 3600

    public init(key: VAPIDKey, subject: String) throws(VAPIDError) {
        try Self.checkSubject(subject)
        self.key = key
        self.subject = subject
    }

    /// `mailto:` with an address, or an `https:` URL (RFC 8292 section 2.1).
    public static func checkSubject(_ subject: String) throws(VAPIDError) {
        let lower = subject.lowercased()
        if lower.hasPrefix("mailto:"), subject.utf8.count > 7, subject.contains("@") { return }
        if lower.hasPrefix("https://"), subject.utf8.count > 8 { return }
        throw .badSubject(subject)
    }

    /// The JWT for `origin`, expiring at `expiresAt` (seconds since 1970).
    public func token(audience origin: String, expiresAt: Int64) throws(CredentialError) -> String {
        var header = JSONWriter(capacity: 32)
        header.beginObject(); header.field("typ", "JWT"); header.field("alg", "ES256"); header.endObject()
        var claims = JSONWriter(capacity: 96)
        claims.beginObject()
        claims.field("aud", origin); claims.field("exp", expiresAt); claims.field("sub", subject)
        claims.endObject()
        let signingInput = base64URLEncoded(header.bytes) + "." + base64URLEncoded(claims.bytes)
        let signature = try key.signingKey.signES256(Array(signingInput.utf8))
        return signingInput + "." + base64URLEncoded(signature)
    }

    /// The `Authorization` header value for a token.
    public func authorization(token: String) -> String {
        "vapid t=" + token + ",k=" + key.applicationServerKey
    }
}

/// One `Authorization` value per push-service origin, signed again shortly before its `exp`: a token a
/// minute, not one per message. Thread-safe (one lock around a small dictionary); bounded in size.
public final class VAPIDTokenCache: Sendable {
    public let signer: VAPIDSigner
    /// How long before `exp` a token is replaced.
    public static let renewBeforeSeconds: Int64 = 600
    /// More origins than any real deployment has push services; past it the expired entries go first, then all.
    public static let maxOrigins = 256

    private struct Entry { var header: String; var expiresAt: Int64 }
    private struct State { var entries: [String: Entry] = [:]; var signed = 0 }
    private let state = LockedValue(State())

    public init(signer: VAPIDSigner) { self.signer = signer }

    /// The header for `origin` at `now` (seconds since 1970).
    public func authorization(origin: String, now: Int64) throws(CredentialError) -> String {
        if let entry = state.withLock({ $0.entries[origin] }), entry.expiresAt - Self.renewBeforeSeconds > now {
            return entry.header
        }
        let expiresAt = now + VAPIDSigner.lifetimeSeconds
        let header = signer.authorization(token: try signer.token(audience: origin, expiresAt: expiresAt))
        state.withLock { state in
            if state.entries.count >= Self.maxOrigins {
                state.entries = state.entries.filter { $0.value.expiresAt - Self.renewBeforeSeconds > now }
                if state.entries.count >= Self.maxOrigins { state.entries.removeAll() }
            }
            state.entries[origin] = Entry(header: header, expiresAt: expiresAt)
            state.signed += 1
        }
        return header
    }

    /// How many tokens were signed (the metrics' tokens-signed count).
    public var tokensSigned: Int { state.withLock { $0.signed } }
}

public enum VAPIDError: Error, Equatable, Sendable, CustomStringConvertible {
    case badSubject(String)

    public var description: String {
        switch self {
        case .badSubject(let s): return "VAPID subject \"\(s)\" is neither mailto:<address> nor an https: URL"
        }
    }
}

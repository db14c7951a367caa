import COpenSSL
import Foundation

/// What a push service checks of `Authorization: vapid t=<jwt>,k=<key>` (RFC 8292): an ES256 JWT signed by `k`,
/// `aud` this service's origin, `exp` ahead and at most 24 h away, a `sub`; and `k` the key the subscription was
/// made with. Each failure is worded as the services word it (Apple's `BadJwtToken`, FCM's `VapidPkHashMismatch`).
enum VAPIDCheck {
    struct Accepted: Equatable {
        let key: [UInt8]
        let subject: String
        let expiresAt: Int64
    }

    struct Refusal: Error, Equatable {
        let status: Int
        let reason: String
        let detail: String
    }

    /// Headers that verified, by origin and header text; bounded (emptied when full).
    struct Verified {
        var byHeader: [String: Accepted] = [:]
        static let limit = 4096
    }

    /// As below, a header verified before checked again only for what can change: the subscription's bound key
    /// and the clock (the same text has the same signature, `aud` and `sub`).
    static func verify(_ header: String?, origin: String, boundKey: [UInt8]?, now: Int64, verified: inout Verified) -> Result<Accepted, Refusal> {
        guard let header else { return verify(nil, origin: origin, boundKey: boundKey, now: now) }
        let key = origin + " " + header
        if let known = verified.byHeader[key], known.expiresAt > now, boundKey == nil || boundKey == known.key { return .success(known) }
        let result = verify(header, origin: origin, boundKey: boundKey, now: now)
        if case .success(let accepted) = result {
            if verified.byHeader.count >= Verified.limit { verified.byHeader.removeAll() }
            verified.byHeader[key] = accepted
        }
        return result
    }

    static func verify(_ header: String?, origin: String, boundKey: [UInt8]?, now: Int64) -> Result<Accepted, Refusal> {
        func bad(_ detail: String) -> Result<Accepted, Refusal> { .failure(Refusal(status: 403, reason: "BadJwtToken", detail: detail)) }
        guard let header, !header.isEmpty else {
            return .failure(Refusal(status: 401, reason: "MissingAuthorization", detail: "no Authorization header"))
        }
        guard header.lowercased().hasPrefix("vapid ") else {
            return .failure(Refusal(status: 401, reason: "UnsupportedAuthorization", detail: "not the vapid scheme"))
        }
        var token: String?
        var keyText: String?
        for part in header.dropFirst(6).split(separator: ",") {
            let trimmed = part.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("t=") { token = String(trimmed.dropFirst(2)) }
            if trimmed.hasPrefix("k=") { keyText = String(trimmed.dropFirst(2)) }
        }
        guard let token, let keyText, let key = Base64URL.decode(keyText), key.count == 65 else { return bad("t= or k= missing or malformed") }
        if let boundKey, boundKey != key {
            return .failure(Refusal(status: 403, reason: "VapidPkHashMismatch", detail: "k is not the key the subscription was made with"))
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]),
              let jwtHeader = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any],
              let claims = try? JSONSerialization.jsonObject(with: Data(claimBytes)) as? [String: Any]
        else { return bad("the JWT does not decode") }
        guard jwtHeader["alg"] as? String == "ES256" else { return bad("alg is not ES256") }
        guard let publicKey = MockSubscriber.publicKey(point: key) else { return bad("k is not a P-256 point") }
        defer { EVP_PKEY_free(publicKey) }
        let input = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard ES256.verify(input, joseSignature: signature, key: publicKey) else { return bad("the signature does not verify with k") }
        guard claims["aud"] as? String == origin else { return bad("aud is not \(origin)") }
        guard let exp = (claims["exp"] as? NSNumber)?.int64Value else { return bad("no exp") }
        guard exp > now else { return bad("exp has passed") }
        guard exp <= now + 86_400 else { return bad("exp is more than 24 hours ahead") }
        guard let subject = claims["sub"] as? String, subject.hasPrefix("mailto:") || subject.hasPrefix("https:") else {
            return bad("sub is not mailto: or https:")
        }
        return .success(Accepted(key: key, subject: subject, expiresAt: exp))
    }
}

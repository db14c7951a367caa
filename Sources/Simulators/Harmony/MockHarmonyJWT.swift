import Foundation

/// Push Kit v3's check of a request's JWT (`Authorization: Bearer <jwt>`), as Huawei's guide defines it: three
/// base64url parts; header `alg` PS256 and `kid` the project's key id; claims `iss` its sub-account, `aud` Huawei's
/// token endpoint, `iat` not ahead of now (a little skew allowed), `exp` after now and at most an hour after `iat`;
/// the signature RSA-PSS SHA-256 under the project's public key. Pure.
public enum MockHarmonyJWT {
    public static let audience = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"
    static let skewSeconds: Int64 = 300
    static let maxLifetimeSeconds: Int64 = 3600

    /// Why the JWT is refused (`HMSResult.authenticationError`'s or `.tokenExpired`'s words), nil when it passes.
    static func check(_ authorization: String?, account: MockHarmonyAccount?, now: Int64) -> HMSResult? {
        guard let header = authorization, header.utf8.count > 7, UTF8Matching.hasPrefixIgnoringCase(header, "bearer ") else {
            return refused("Authorization: Bearer <JWT> is missing")
        }
        guard let account else { return refused("no service account for this project") }
        let jwt = String(decoding: header.utf8.dropFirst(7), as: UTF8.self).trimmingCharacters(in: .whitespaces)
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]),
              let head = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any],
              let claims = try? JSONSerialization.jsonObject(with: Data(claimBytes)) as? [String: Any] else {
            return refused("the JWT is not well formed")
        }
        guard head["alg"] as? String == "PS256" else { return refused("the JWT's alg must be PS256") }
        guard head["kid"] as? String == account.keyID else { return refused("the JWT's kid is not the project's key_id") }
        let signed = Array(jwt.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard OpenSSLSupport.verifySHA256(signed, signature: signature, key: account.key, pss: true) else {
            return refused("the JWT's signature does not verify")
        }
        guard claims["iss"] as? String == account.subAccount else { return refused("the JWT's iss is not the project's sub_account") }
        guard claims["aud"] as? String == audience else { return refused("the JWT's aud must be \(audience)") }
        guard let iat = (claims["iat"] as? NSNumber)?.int64Value, let exp = (claims["exp"] as? NSNumber)?.int64Value,
              exp > iat, exp - iat <= maxLifetimeSeconds, iat <= now + skewSeconds else {
            return refused("the JWT's iat and exp must be at most an hour apart, iat not in the future")
        }
        return exp > now ? nil : .jwtExpired
    }

    /// The `exp` of a JWT `check` passed.
    static func expiry(_ jwt: String) -> Int64? {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(parts[1]),
              let claims = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else { return nil }
        return (claims["exp"] as? NSNumber)?.int64Value
    }

    fileprivate static func refused(_ why: String) -> HMSResult { HMSResult(status: 401, code: "80200001", msg: "Authentication failed: " + why) }
}

extension HMSResult {
    /// 401 80200003: the JWT's `exp` has passed.
    static let jwtExpired = HMSResult(status: 401, code: "80200003", msg: "JWT expired")
}

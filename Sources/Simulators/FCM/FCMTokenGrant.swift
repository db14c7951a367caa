import Basics
import Foundation

/// An OAuth 2.0 error answer of Google's token endpoint: 400 (or 401) with `{"error","error_description"}`.
struct OAuthError: Error, Equatable {
    var status = 400
    var error: String
    var description: String

    func body() -> [UInt8] {
        var out = Array(#"{"error":"#.utf8)
        appendJSONString(error, to: &out)
        out += Array(#","error_description":"#.utf8)
        appendJSONString(description, to: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }

    static func invalidGrant(_ description: String) -> OAuthError { OAuthError(error: "invalid_grant", description: description) }
}

/// What a verified JWT-bearer assertion grants: the account and the scopes it asked for.
struct VerifiedGrant {
    let account: MockServiceAccount
    let scopes: [String]
}

/// The JWT-bearer grant (RFC 7523) as Google's token endpoint checks it: form fields, an RS256 assertion signed
/// by a known account's key, `aud` the token URI, `iat`/`exp` at most an hour apart around now, a scope.
enum FCMTokenGrant {
    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// Google's own token URIs, accepted as `aud` besides the simulator's (some clients hard-code them).
    static let googleAudiences = ["https://oauth2.googleapis.com/token", "https://www.googleapis.com/oauth2/v4/token",
                                  "https://accounts.google.com/o/oauth2/token"]
    /// Clock skew tolerated on `iat` in the future.
    static let skewSeconds: Int64 = 300

    static func verify(body: [UInt8], accounts: [String: MockServiceAccount], tokenURI: String, now: Int64) -> Result<VerifiedGrant, OAuthError> {
        let fields = FormFields.parse(body)
        guard let grant = fields["grant_type"] else {
            return .failure(OAuthError(error: "invalid_request", description: "Missing required parameter: grant_type"))
        }
        guard grant == grantType else {
            return .failure(OAuthError(error: "unsupported_grant_type", description: "Invalid grant_type: \(grant)"))
        }
        guard let assertion = fields["assertion"], !assertion.isEmpty else {
            return .failure(OAuthError(error: "invalid_request", description: "Missing required parameter: assertion"))
        }
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]),
              let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any],
              let claims = try? JSONSerialization.jsonObject(with: Data(claimBytes)) as? [String: Any] else {
            return .failure(.invalidGrant("Invalid JWT: the assertion is not a well-formed JWT."))
        }
        guard header["alg"] as? String == "RS256" else { return .failure(.invalidGrant("Invalid JWT Signature.")) }
        guard let issuer = claims["iss"] as? String, let account = accounts[issuer] else {
            return .failure(.invalidGrant("Invalid grant: account not found"))
        }
        if let kid = header["kid"] as? String, kid != account.privateKeyID {
            return .failure(.invalidGrant("Invalid JWT Signature."))
        }
        let signed = Array(assertion.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard OpenSSLSupport.verifySHA256(signed, signature: signature, key: account.key) else { return .failure(.invalidGrant("Invalid JWT Signature.")) }
        guard let audience = claims["aud"] as? String, audience == tokenURI || googleAudiences.contains(audience) else {
            return .failure(.invalidGrant("Invalid JWT: Failed audience check. The right audience is \(tokenURI)"))
        }
        guard let iat = (claims["iat"] as? NSNumber)?.int64Value, let exp = (claims["exp"] as? NSNumber)?.int64Value,
              exp > iat, exp - iat <= 3600, iat <= now + skewSeconds, exp > now else {
            return .failure(.invalidGrant("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."))
        }
        let scopes = (claims["scope"] as? String)?.split(separator: " ").map(String.init) ?? []
        guard !scopes.isEmpty else { return .failure(OAuthError(error: "invalid_scope", description: "Empty or missing scope not allowed.")) }
        return .success(VerifiedGrant(account: account, scopes: scopes))
    }
}

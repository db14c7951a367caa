import PushCore

/// The OAuth 2.0 JWT-bearer grant (RFC 7523) a service account exchanges for an FCM access token: an RS256 JWT
/// with `iss` = the account, `scope` = FCM's, `aud` = the token endpoint, one hour of validity. Pure.
public enum OAuthAssertion {
    public static let fcmScope = "https://www.googleapis.com/auth/firebase.messaging"
    public static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// Google accepts at most an hour between `iat` and `exp`.
    public static let lifetimeSeconds: Int64 = 3600

    public static func sign(_ account: ServiceAccount, issuedAt: Int64, scope: String = fcmScope) throws(CredentialError) -> String {
        var header = JSONWriter(capacity: 80)
        header.beginObject(); header.field("alg", "RS256"); header.field("typ", "JWT")
        if let kid = account.privateKeyID { header.field("kid", kid) }
        header.endObject()
        var claims = JSONWriter(capacity: 256)
        claims.beginObject()
        claims.field("iss", account.clientEmail); claims.field("scope", scope); claims.field("aud", account.tokenURI)
        claims.field("iat", issuedAt); claims.field("exp", issuedAt + lifetimeSeconds)
        claims.endObject()
        let signingInput = base64URLEncoded(header.bytes) + "." + base64URLEncoded(claims.bytes)
        return signingInput + "." + base64URLEncoded(try account.key.signRS256(Array(signingInput.utf8)))
    }

    /// The form body of the token request (the JWT's characters need no escaping in a form).
    public static func formBody(assertion: String) -> String {
        "grant_type=" + grantType.replacingColonsAndSlashes() + "&assertion=" + assertion
    }
}

extension String {
    /// Percent-encodes the two reserved characters a grant type URN holds.
    fileprivate func replacingColonsAndSlashes() -> String {
        var out = ""
        for c in self {
            switch c {
            case ":": out += "%3A"
            case "/": out += "%2F"
            default: out.append(c)
            }
        }
        return out
    }
}

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

/// What a token endpoint answered, decoded. Pure; `accessToken` is never part of `description`.
public enum OAuthTokenAnswer: Sendable, Equatable, CustomStringConvertible {
    case token(accessToken: String, expiresInSeconds: Int64)
    /// The endpoint refused the grant (`invalid_grant`, `unauthorized_client`...): the account or key is wrong,
    /// trying again will not help until the file changes.
    case refused(error: String, detail: String)
    /// Anything else (5xx, a proxy's HTML, a body that is not the documented JSON): may pass if tried again.
    case unusable(String)

    public var description: String {
        switch self {
        case .token(_, let s): "access token for \(s) s"
        case .refused(let e, let d): d.isEmpty ? e : "\(e): \(d)"
        case .unusable(let d): d
        }
    }

    public static func decode(status: Int, body: [UInt8]) -> OAuthTokenAnswer {
        let fields = flatStringFields(body)
        if status == 200 {
            guard let token = fields.strings["access_token"], !token.isEmpty else {
                return .unusable("token endpoint answered 200 without an access_token")
            }
            if let type = fields.strings["token_type"], type.lowercased() != "bearer" {
                return .unusable("token endpoint answered token_type \(type.prefix(40)), not Bearer")
            }
            let expires = fields.numbers["expires_in"] ?? 3600
            guard expires > 0 else { return .unusable("token endpoint answered expires_in \(expires)") }
            return .token(accessToken: token, expiresInSeconds: expires)
        }
        if let error = fields.strings["error"] {
            let detail = String((fields.strings["error_description"] ?? "").prefix(200))
            // RFC 6749 5.2: these say the grant itself is wrong; others (temporarily_unavailable...) may pass.
            let refusals: Set<String> = ["invalid_grant", "unauthorized_client", "invalid_client", "invalid_scope", "invalid_request",
                                         "unsupported_grant_type", "access_denied"]
            if refusals.contains(error) && status < 500 { return .refused(error: String(error.prefix(64)), detail: detail) }
            return .unusable("token endpoint answered \(status) \(error.prefix(64))\(detail.isEmpty ? "" : ": " + detail)")
        }
        return .unusable("token endpoint answered HTTP \(status) without an OAuth error")
    }

    /// The top-level string and integer members of a JSON object; empty for anything else.
    private static func flatStringFields(_ body: [UInt8]) -> (strings: [String: String], numbers: [String: Int64]) {
        var strings: [String: String] = [:]
        var numbers: [String: Int64] = [:]
        body.withUnsafeBufferPointer { buffer in
            guard (try? JSONScanner.validate(buffer))?.kind == .object else { return }
            var scanner = JSONScanner(buffer)
            do throws(JSONScanError) {
                try scanner.beginObject()
                var first = true
                while let (key, value) = try scanner.nextMember(first: &first) {
                    let name = scanner.stringValue(key)
                    if value.kind == .string { strings[name] = scanner.stringValue(value) }
                    if value.kind == .number, let n = scanner.int64Value(value) { numbers[name] = n }
                }
            } catch {}
        }
        return (strings, numbers)
    }
}

import CurlHTTP
import PushCore

/// An OAuth 2.0 token endpoint (RFC 6749) called with a form-encoded grant: the part of an access-token exchange
/// every OAuth provider shares (FCM's JWT-bearer grant, a client-credentials grant), for `AccessTokenCache`.
public enum OAuthTokenEndpoint {
    /// How the POST is made; injectable so tests can count and hold exchanges.
    public typealias Post = @Sendable (_ url: String, _ body: [UInt8], _ options: CurlPost.Options) -> Result<CurlPost.Answer, CurlFailure>

    public static let curlPost: Post = { url, body, options in
        CurlPost.post(url: url, contentType: "application/x-www-form-urlencoded", body: body, options: options)
    }

    /// POSTs `form` to `url` (blocking) and reads the answer: a token, a refused grant (also an endpoint that
    /// cannot be used as configured), or no usable answer.
    public static func exchange(url: String, form: [UInt8], options: CurlPost.Options,
                                post: Post = curlPost) -> Result<(token: String, lifetimeSeconds: Int64), AccessTokenCache.Failure> {
        switch post(url, form, options) {
        case .failure(let failure) where failure.isConfiguration:
            return .failure(.refused("token endpoint \(url) cannot be used: \(failure)"))
        case .failure(let failure):
            return .failure(.unavailable("token endpoint \(url): \(failure)"))
        case .success(let http):
            switch OAuthTokenAnswer.decode(status: http.status, body: http.body) {
            case .token(let token, let seconds): return .success((token, seconds))
            case .refused(let error, let detail):
                return .failure(.refused("token endpoint refused the grant: \(error)\(detail.isEmpty ? "" : " (\(detail))")"))
            case .unusable(let detail): return .failure(.unavailable(detail))
            }
        }
    }
}

/// What a token endpoint answered, decoded. Pure; `accessToken` is never part of `description`.
public enum OAuthTokenAnswer: Sendable, Equatable, CustomStringConvertible {
    case token(accessToken: String, expiresInSeconds: Int64)
    /// The endpoint refused the grant (`invalid_grant`, `unauthorized_client`...), or what answered is no token
    /// endpoint as configured (a 200 without a token, a redirect, a 4xx page without an OAuth error): the account,
    /// key or `token_url` is wrong, and trying again will not help until the configuration changes.
    case refused(error: String, detail: String)
    /// A server error (5xx, whatever its body): may pass if tried again.
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
        // Issue 54: junk, HTML or a redirect where the token should be was an outage retried for ever; it is a
        // configuration error (the app pauses as for a refused credential, and says why), a 5xx alone may pass.
        func notAnEndpoint(_ why: String) -> OAuthTokenAnswer { .refused(error: "not_a_token_endpoint", detail: why + "; check the token URL") }
        if status == 200 {
            guard let token = fields.strings["access_token"], !token.isEmpty else {
                return notAnEndpoint("token endpoint answered 200 without an access_token")
            }
            // Issue 51: it goes into an Authorization header, so it must be a field value (RFC 9110 5.5): no CR, LF,
            // NUL or other control character, no white space at either end. One that is not is a credential error,
            // never sent.
            let bytes = Array(token.utf8)
            let fieldValue = bytes.allSatisfy { $0 == 9 || ($0 >= 32 && $0 != 127) } && ![9, 32].contains(bytes.first!) && ![9, 32].contains(bytes.last!)
            guard fieldValue else {
                return notAnEndpoint("token endpoint answered an access_token that is no header field value (a control character, or white space at an end)")
            }
            if let type = fields.strings["token_type"], type.lowercased() != "bearer" {
                return notAnEndpoint("token endpoint answered token_type \(type.prefix(40)), not Bearer")
            }
            let expires = fields.numbers["expires_in"] ?? 3600
            guard expires > 0 else { return notAnEndpoint("token endpoint answered expires_in \(expires)") }
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
        // Huawei's endpoint names its errors by number (`{"error":1101,"sub_error":20404,...}`): a 4xx with one
        // refuses the client's credentials as RFC 6749's `invalid_client` does.
        if let code = fields.numbers["error"], (400..<500).contains(status) {
            return .refused(error: String(code), detail: String((fields.strings["error_description"] ?? "").prefix(200)))
        }
        if status >= 500 { return .unusable("token endpoint answered HTTP \(status) without an OAuth error") }
        return notAnEndpoint("token endpoint answered HTTP \(status) without an OAuth error")
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

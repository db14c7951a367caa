import APNs
import COpenSSL
import FCM
import Foundation
import ProviderKit
import PushCore
import Testing

@Suite struct OAuthAssertionTests {
    static func account(tokenURI: String = "https://oauth2.example.test/token") throws -> (ServiceAccount, String) {
        let pem = try KeyGenerator.generateRSAPKCS8PEM(bits: 2048)
        let json: [String: Any] = ["type": "service_account", "project_id": "herald-demo", "private_key_id": "kid-1",
                                   "private_key": pem, "client_email": "sender@herald-demo.iam.gserviceaccount.com", "token_uri": tokenURI]
        let bytes = Array(try JSONSerialization.data(withJSONObject: json))
        return (try ServiceAccount.parse(bytes, path: "sa.json"), pem)
    }

    /// Issue 30: a token_uri of file://, gopher://, dict:// or plain http:// was accepted, sending the signed
    /// assertion in cleartext (or the worker into an endless "outage" on libcurl's unsupported protocol).
    @Test func aTokenURIThatIsNotHTTPSIsRefusedAtLoad() throws {
        for uri in ["http://oauth2.example.test/token", "file:///etc/passwd", "gopher://127.0.0.1:70/", "dict://127.0.0.1:2628/", ""] {
            #expect(throws: ServiceAccount.LoadError.self, "\(uri)") { _ = try Self.account(tokenURI: uri) }
        }
        #expect(try Self.account(tokenURI: "HTTPS://oauth2.example.test/token").0.tokenURI == "HTTPS://oauth2.example.test/token")
    }

    private func decode(_ part: Substring) throws -> [String: Any] {
        let bytes = try #require(base64URLDecoded(String(part)))
        return try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    /// Verifies an RS256 signature with OpenSSL against the account's public key, as Google does.
    private func verifies(_ jwt: String, publicKeyPEM: String) -> Bool {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let signature = base64URLDecoded(String(parts[2])) else { return false }
        let input = Array((parts[0] + "." + parts[1]).utf8)
        let pem = Array(publicKeyPEM.utf8)
        guard let key = pem.withUnsafeBytes({ raw -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }) else { return false }
        defer { EVP_PKEY_free(key) }
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, key) == 1 else { return false }
        return EVP_DigestVerify(ctx, signature, signature.count, input, input.count) == 1
    }

    @Test func theAssertionIsAnRS256JWTGoogleCanVerify() throws {
        let (account, _) = try Self.account()
        let jwt = try OAuthAssertion.sign(account, issuedAt: 1_800_000_000)
        let parts = jwt.split(separator: ".")
        let header = try decode(parts[0])
        #expect(header["alg"] as? String == "RS256" && header["kid"] as? String == "kid-1" && header["typ"] as? String == "JWT")
        let claims = try decode(parts[1])
        #expect(claims["iss"] as? String == "sender@herald-demo.iam.gserviceaccount.com")
        #expect(claims["scope"] as? String == "https://www.googleapis.com/auth/firebase.messaging")
        #expect(claims["aud"] as? String == "https://oauth2.example.test/token")
        #expect(claims["iat"] as? Int == 1_800_000_000 && claims["exp"] as? Int == 1_800_003_600)
        let publicKey = try #require(account.key.publicKeyPEM())
        #expect(verifies(jwt, publicKeyPEM: publicKey))
        // Another key's signature, or a changed claim, does not verify.
        let (other, _) = try Self.account()
        #expect(!verifies(jwt, publicKeyPEM: try #require(other.key.publicKeyPEM())))
        let tampered = parts[0] + "." + base64URLEncoded(Array(#"{"iss":"evil"}"#.utf8)) + "." + parts[2]
        #expect(!verifies(tampered, publicKeyPEM: publicKey))
        #expect(OAuthAssertion.formBody(assertion: "a.b.c") == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=a.b.c")
    }

    @Test func brokenServiceAccountFilesSayWhatIsWrongWithoutTheKey() throws {
        let (_, pem) = try Self.account()
        func load(_ json: [String: Any]) -> String {
            do {
                _ = try ServiceAccount.parse(Array(try JSONSerialization.data(withJSONObject: json)), path: "sa.json")
                return "loaded"
            } catch {
                return "\(error)"
            }
        }
        #expect(load(["client_email": "a@b", "private_key": pem]) == "service account file sa.json has no \"project_id\"")
        #expect(load(["project_id": "p", "client_email": "a@b", "private_key": "not a key"]).contains("not PEM"))
        let ec = try KeyGenerator.generateP256PKCS8PEM()
        #expect(load(["project_id": "p", "client_email": "a@b", "private_key": ec]).contains("not an RSA key"))
        #expect(load(["project_id": "p", "client_email": 5, "private_key": pem]) == "service account file sa.json: \"client_email\" must be a string")
        let account = try ServiceAccount.parse(Array(try JSONSerialization.data(withJSONObject: ["project_id": "p", "client_email": "a@b", "private_key": pem])), path: "x")
        #expect(account.tokenURI == ServiceAccount.googleTokenURI)
        #expect(!account.description.contains("PRIVATE"))
    }

    @Test func tokenAnswersAreTokensRefusalsOrUnusable() {
        let ok = OAuthTokenAnswer.decode(status: 200, body: Array(#"{"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"}"#.utf8))
        #expect(ok == .token(accessToken: "ya29.x", expiresInSeconds: 3599))
        #expect(!ok.description.contains("ya29"))
        let refused = OAuthTokenAnswer.decode(status: 400, body: Array(#"{"error":"invalid_grant","error_description":"Invalid grant: account not found"}"#.utf8))
        #expect(refused == .refused(error: "invalid_grant", detail: "Invalid grant: account not found"))
        #expect(OAuthTokenAnswer.decode(status: 503, body: Array("<html>busy</html>".utf8)) == .unusable("token endpoint answered HTTP 503 without an OAuth error"))
        // Issue 54: what is no token endpoint as configured is refused (a configuration error), not retried for ever.
        for (status, body) in [(200, #"{"expires_in":10}"#), (200, "<html>login</html>"), (302, ""), (404, "<html>not found</html>"),
                               (200, #"{"access_token":"x","token_type":"mac"}"#), (200, #"{"access_token":"x","expires_in":0}"#),
                               // Issue 51: an access token that is no header field value (it was sent as one).
                               (200, #"{"access_token":"ya29.x\r\nX-Evil: 1"}"#), (200, #"{"access_token":"ya29\nx"}"#),
                               (200, #"{"access_token":"ya29\u0000x"}"#), (200, #"{"access_token":" ya29.x"}"#), (200, #"{"access_token":"ya29\u007fx"}"#)] {
            guard case .refused(let error, let detail) = OAuthTokenAnswer.decode(status: status, body: Array(body.utf8)) else {
                Issue.record("\(status) \(body): not refused"); continue
            }
            #expect(error == "not_a_token_endpoint" && detail.hasSuffix("check the token URL"), "\(status) \(body): \(detail)")
        }
        if case .unusable = OAuthTokenAnswer.decode(status: 500, body: Array(#"{"error":"internal_failure"}"#.utf8)) {} else { Issue.record("5xx refusal") }
    }
}

import Foundation
import HeraldTestSupport
import PushCore
import Testing
@testable import WebPush

/// Herald's VAPID header checked by py_vapid and cryptography (PyPI): the signature verifies with the `k` it
/// carries, the claims are what RFC 8292 asks, and keys py_vapid made load in both of their forms.
@Suite("VAPID against py_vapid")
struct VAPIDPeerTests {
    @Test func pyVapidVerifiesHeraldsHeaderAndReadsItsClaims() throws {
        let made = try WebPushPeer.run(["vapid-key"])
        let key = try VAPIDKey(text: try #require(made["private_pem"] as? String))
        #expect(key.applicationServerKey == made["public"] as? String)
        let signer = try VAPIDSigner(key: key, subject: "mailto:ops@example.com")
        let cache = VAPIDTokenCache(signer: signer)
        let now = Int64(Date().timeIntervalSince1970)
        let header = try cache.authorization(origin: "https://fcm.googleapis.com", now: now)
        #expect(header.hasPrefix("vapid t="))
        let answer = try WebPushPeer.run(["verify-vapid", header, "https://fcm.googleapis.com"])
        #expect(answer["verified"] as? Bool == true)
        #expect(answer["audience_matches"] as? Bool == true)
        #expect(answer["k"] as? String == made["public"] as? String)
        let claims = try #require(answer["claims"] as? [String: Any])
        #expect(claims["sub"] as? String == "mailto:ops@example.com")
        let exp = try #require(claims["exp"] as? Int)
        #expect(Int64(exp) > now && Int64(exp) <= now + 24 * 3600)
        let jwtHeader = try #require(answer["jwt_header"] as? [String: Any])
        #expect(jwtHeader["alg"] as? String == "ES256")
        #expect(jwtHeader["typ"] as? String == "JWT")
    }

    @Test func theRawBase64URLKeyWebPushLibrariesPrintIsTheSameKey() throws {
        let made = try WebPushPeer.run(["vapid-key"])
        let fromPEM = try VAPIDKey(text: try #require(made["private_pem"] as? String))
        let fromRaw = try VAPIDKey(text: try #require(made["private_raw"] as? String))
        #expect(fromRaw.publicKey == fromPEM.publicKey)
        let signer = try VAPIDSigner(key: fromRaw, subject: "https://example.com/contact")
        let header = signer.authorization(token: try signer.token(audience: "https://web.push.apple.com", expiresAt: 2_000_000_000))
        let answer = try WebPushPeer.run(["verify-vapid", header, "https://web.push.apple.com"])
        #expect(answer["verified"] as? Bool == true)
    }

    @Test func aTamperedSignatureIsRefusedByPyVapid() throws {
        let made = try WebPushPeer.run(["vapid-key"])
        let signer = try VAPIDSigner(key: VAPIDKey(text: try #require(made["private_raw"] as? String)), subject: "mailto:a@b.c")
        let token = try signer.token(audience: "https://push.example.net", expiresAt: 2_000_000_000)
        // Another audience under the same signature: the signed input changed, so it must not verify.
        let parts = token.split(separator: ".")
        let otherClaims = base64URLEncoded(Array(#"{"aud":"https://evil.example","exp":2000000000,"sub":"mailto:a@b.c"}"#.utf8))
        let forged = parts[0] + "." + otherClaims + "." + parts[2]
        #expect(throws: (any Error).self) {
            try WebPushPeer.run(["verify-vapid", signer.authorization(token: String(forged)), "https://evil.example"])
        }
    }
}

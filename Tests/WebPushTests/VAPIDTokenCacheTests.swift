import PushCore
import Testing
@testable import WebPush

/// One token per push-service origin, signed again only shortly before its `exp`.
@Suite("VAPID token cache")
struct VAPIDTokenCacheTests {
    static func cache() throws -> VAPIDTokenCache {
        let key = try VAPIDKey(privateScalar: [UInt8](repeating: 7, count: 32))
        return VAPIDTokenCache(signer: try VAPIDSigner(key: key, subject: "mailto:ops@example.com"))
    }

    @Test func anOriginKeepsItsTokenUntilShortlyBeforeItExpires() throws {
        let cache = try Self.cache()
        let start: Int64 = 1_800_000_000
        let first = try cache.authorization(origin: "https://fcm.googleapis.com", now: start)
        let renewAt = start + VAPIDSigner.lifetimeSeconds - VAPIDTokenCache.renewBeforeSeconds
        #expect(try cache.authorization(origin: "https://fcm.googleapis.com", now: renewAt - 1) == first)
        #expect(cache.tokensSigned == 1)
        let renewed = try cache.authorization(origin: "https://fcm.googleapis.com", now: renewAt)
        #expect(renewed != first)
        #expect(cache.tokensSigned == 2)
    }

    @Test func eachOriginHasItsOwnAudience() throws {
        let cache = try Self.cache()
        let google = try cache.authorization(origin: "https://fcm.googleapis.com", now: 1_800_000_000)
        let mozilla = try cache.authorization(origin: "https://updates.push.services.mozilla.com", now: 1_800_000_000)
        #expect(google != mozilla)
        let claims = try #require(base64URLDecoded(String(mozilla.dropFirst("vapid t=".count).split(separator: ".")[1])))
        #expect(String(decoding: claims, as: UTF8.self)
            == #"{"aud":"https://updates.push.services.mozilla.com","exp":1800043200,"sub":"mailto:ops@example.com"}"#)
        #expect(cache.tokensSigned == 2)
    }

    @Test func aSubjectMustBeMailtoOrHTTPS() throws {
        let key = try VAPIDKey(privateScalar: [UInt8](repeating: 7, count: 32))
        #expect(throws: VAPIDError.badSubject("ops@example.com")) { try VAPIDSigner(key: key, subject: "ops@example.com") }
        #expect(throws: VAPIDError.badSubject("http://example.com")) { try VAPIDSigner(key: key, subject: "http://example.com") }
        _ = try VAPIDSigner(key: key, subject: "https://example.com")
    }

    @Test func aKeyThatIsNeitherPEMNorA32ByteScalarIsRefused() {
        #expect(throws: CredentialError.self) { try VAPIDKey(text: base64URLEncoded([UInt8](repeating: 1, count: 31))) }
        #expect(throws: CredentialError.self) { try VAPIDKey(text: "not a key!") }
    }
}

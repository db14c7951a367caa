import Foundation
import PushCore
import Testing
@testable import WebPush

/// A message's headers and limits, and its request read back by http_ece.
@Suite("Web Push messages")
struct WebPushMessageTests {
    static func subscription() throws -> PushSubscription {
        try PushSubscription.parse(SubscriptionTests.json(endpoint: "https://updates.push.services.mozilla.com/wpush/v2/gAAA"))
    }

    @Test func theRequestCarriesRFC8030HeadersAndTheVAPIDAuthorization() throws {
        let (subscription, pem, auth) = try EncryptionPeerTests.subscriber()
        let message = try WebPushMessage(subscription: subscription, payload: Array("hi".utf8), ttl: 60, urgency: .veryLow, topic: "news_1")
        let cache = VAPIDTokenCache(signer: try VAPIDSigner(key: VAPIDKey(privateScalar: [UInt8](repeating: 9, count: 32)), subject: "mailto:a@b.c"))
        let request = try message.request(vapid: cache, now: 1_800_000_000)
        let headers = Dictionary(uniqueKeysWithValues: request.headers)
        #expect(headers["ttl"] == "60")
        #expect(headers["urgency"] == "very-low")
        #expect(headers["topic"] == "news_1")
        #expect(headers["content-encoding"] == "aes128gcm")
        #expect(headers["authorization"]?.hasPrefix("vapid t=") == true)
        #expect(headers["authorization"]?.hasSuffix(",k=" + cache.signer.key.applicationServerKey) == true)
        #expect(request.endpoint.path == "/send/abc")
        #expect(try EncryptionPeerTests.decrypt(request.body, pem: pem, auth: auth).plaintext == Array("hi".utf8))
    }

    @Test func aMessageWithoutTTLKeepsFourWeeksAndNoUrgencyOrTopicHeader() throws {
        let message = try WebPushMessage(subscription: Self.subscription(), payload: [])
        #expect(message.ttl == 2_419_200)
        let cache = VAPIDTokenCache(signer: try VAPIDSigner(key: VAPIDKey(privateScalar: [UInt8](repeating: 9, count: 32)), subject: "mailto:a@b.c"))
        let names = try message.request(vapid: cache, now: 0).headers.map(\.0)
        #expect(names == ["ttl", "content-encoding", "content-type", "authorization"])
    }

    @Test func badFieldsAreRefusedUnsent() throws {
        let subscription = try Self.subscription()
        #expect(throws: WebPushMessageError.badTTL(-1)) { try WebPushMessage(subscription: subscription, payload: [], ttl: -1) }
        #expect(throws: WebPushMessageError.badTopic("has space")) { try WebPushMessage(subscription: subscription, payload: [], topic: "has space") }
        let long = String(repeating: "a", count: 33)
        #expect(throws: WebPushMessageError.badTopic(long)) { try WebPushMessage(subscription: subscription, payload: [], topic: long) }
        #expect(throws: WebPushMessageError.payloadTooLarge(4000)) {
            try WebPushMessage(subscription: subscription, payload: [UInt8](repeating: 0, count: 4000))
        }
        #expect(WebPushMessage.Urgency(rawValue: "very-low") == .veryLow)
        #expect(WebPushMessage.Urgency(rawValue: "urgent") == nil)
    }
}

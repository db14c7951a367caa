import PushCore
import Testing
@testable import WebPush

/// Subscriptions are checked whole before anything is sent: the endpoint, the key lengths, base64url.
@Suite("Web Push subscriptions")
struct SubscriptionTests {
    /// A real P-256 point (RFC 8291's example subscriber key) and a 16-byte secret.
    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"

    static func json(endpoint: String = "https://push.example.net/wpush/v2/abc?x=1", p256dh: String = p256dh, auth: String = auth) -> [UInt8] {
        Array(#"{"endpoint":"\#(endpoint)","expirationTime":null,"keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#.utf8)
    }

    @Test func aBrowsersToJSONParsesWithItsOriginAndPath() throws {
        let subscription = try PushSubscription.parse(Self.json())
        #expect(subscription.endpoint.host == "push.example.net")
        #expect(subscription.endpoint.port == 443)
        #expect(subscription.endpoint.origin == "https://push.example.net")
        #expect(subscription.endpoint.path == "/wpush/v2/abc?x=1")
        #expect(subscription.p256dh.count == 65)
        #expect(subscription.auth.count == 16)
        #expect(try PushSubscription.parse(Array(subscription.json.utf8)) == subscription)
    }

    @Test func aPortAndUppercaseHostKeepTheOriginExact() throws {
        let endpoint = try PushEndpoint("HTTPS://Push.Example.NET:8443/x")
        #expect(endpoint.origin == "https://push.example.net:8443")
        #expect(try PushEndpoint("https://[::1]:9000/p").origin == "https://[::1]:9000")
        #expect(try PushEndpoint("https://[::1]:9000/p").isIPLiteral)
        #expect(try PushEndpoint("https://127.0.0.1/p").isIPLiteral)
        #expect(try PushEndpoint("https://127.1/p").isIPLiteral)
        #expect(try !PushEndpoint("https://fcm.googleapis.com/fcm/send/x").isIPLiteral)
    }

    @Test(arguments: [
        ("http://push.example.net/x", "is not an https URL"),
        ("https://user@push.example.net/x", "carries user information"),
        ("https:///x", "has no host"),
        ("https://push.example.net:0/x", "has a bad port"),
        ("https://push.example.net:99999/x", "has a bad port"),
        ("https://push example.net/x", "has a space, a control character or a non-ASCII byte"),
        ("https://push.example.net/x#frag", "has a fragment"),
        ("https://push_example.net/x", "has a bad host name"),
    ])
    func aBadEndpointNamesWhatIsWrong(endpoint: String, detail: String) {
        #expect(throws: SubscriptionError.badEndpoint(detail)) { try PushSubscription.parse(Self.json(endpoint: endpoint)) }
    }

    @Test func badKeysAreRefusedWithTheirField() {
        #expect(throws: SubscriptionError.badKey(field: "keys.p256dh", detail: "is 63 bytes, not a 65-byte uncompressed P-256 point")) {
            try PushSubscription.parse(Self.json(p256dh: String(Self.p256dh.dropLast(3))))
        }
        let offCurve = base64URLEncoded([0x04] + [UInt8](repeating: 1, count: 64))
        #expect(throws: SubscriptionError.badKey(field: "keys.p256dh", detail: "is not a point on P-256")) {
            try PushSubscription.parse(Self.json(p256dh: offCurve))
        }
        #expect(throws: SubscriptionError.badKey(field: "keys.auth", detail: "is 15 bytes, not 16")) {
            try PushSubscription.parse(Self.json(auth: base64URLEncoded([UInt8](repeating: 2, count: 15))))
        }
        #expect(throws: SubscriptionError.badKey(field: "keys.auth", detail: "is not base64url")) {
            try PushSubscription.parse(Self.json(auth: "BTBZMqHH6r4Tts7J+aSIgg"))
        }
    }

    @Test func missingOrMistypedFieldsAreNamed() {
        #expect(throws: SubscriptionError.missing("endpoint")) { try PushSubscription.parse(Array(#"{"keys":{}}"#.utf8)) }
        #expect(throws: SubscriptionError.missing("keys.auth")) {
            try PushSubscription.parse(Array(#"{"endpoint":"https://a.b/","keys":{"p256dh":"x"}}"#.utf8))
        }
        #expect(throws: SubscriptionError.notAString("endpoint")) { try PushSubscription.parse(Array(#"{"endpoint":5}"#.utf8)) }
        #expect(throws: SubscriptionError.self) { try PushSubscription.parse(Array("[1]".utf8)) }
    }
}

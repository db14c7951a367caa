import PushCore
import Testing
@testable import WebPush

/// RFC 8291 section 5's worked example through Herald's encryptor, with its sender key and salt: the header and
/// the ciphertext must be the RFC's byte for byte. Herald pads the record to 32 bytes where the example does not,
/// so the comparison stops before the tag: AES-GCM's keystream makes every earlier byte depend only on the keys
/// and nonce (the ECDH secret, both HKDF steps) and the plaintext with its 0x02 delimiter.
@Suite("Web Push encryption against RFC 8291's example")
struct RFC8291VectorTests {
    static let plaintext = Array("When I grow up, I want to be a watermelon".utf8)
    static let senderPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
    static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
    static let body = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_"
        + "yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    static func subscription(_ p256dh: String = SubscriptionTests.p256dh) throws -> PushSubscription {
        try PushSubscription.parse(SubscriptionTests.json(p256dh: p256dh))
    }

    /// The header (86 bytes) and the payload with its delimiter (42): the first 128 bytes.
    static func checkedPrefix(_ body: [UInt8]) -> ArraySlice<UInt8> { body.prefix(MessageEncryption.headerLength + plaintext.count + 1) }

    @Test func theHeaderAndCiphertextAreTheRFCs() throws {
        let expected = try #require(base64URLDecoded(Self.body))
        let key = try EphemeralKey(pem: VAPIDKey.pem(privateScalar: try #require(base64URLDecoded(Self.senderPrivate))))
        let salt = try #require(base64URLDecoded(Self.salt))
        let body = try MessageEncryption.encrypt(Self.plaintext, for: try Self.subscription(), senderKey: key, salt: salt)
        #expect(body.count == MessageEncryption.encryptedLength(ofPayload: Self.plaintext.count))
        #expect(Self.checkedPrefix(body) == Self.checkedPrefix(expected))
    }

    /// One kept encryptor for messages to different subscribers (as a sender uses it): each message is encrypted
    /// for its own subscriber, never the one before.
    @Test func aKeptEncryptorTakesEachMessagesSubscriber() throws {
        let expected = try #require(base64URLDecoded(Self.body))
        let key = try EphemeralKey(pem: VAPIDKey.pem(privateScalar: try #require(base64URLDecoded(Self.senderPrivate))))
        let salt = try #require(base64URLDecoded(Self.salt))
        let other = try VAPIDKey(privateScalar: [UInt8](repeating: 7, count: 32)).applicationServerKey
        let encryptor = try MessageEncryptor()
        let first = try encryptor.encrypt(Self.plaintext, for: try Self.subscription(), senderKey: key.pkey, salt: salt)
        let second = try encryptor.encrypt(Self.plaintext, for: try Self.subscription(other), senderKey: key.pkey, salt: salt)
        let third = try encryptor.encrypt(Self.plaintext, for: try Self.subscription(), senderKey: key.pkey, salt: salt)
        #expect(Self.checkedPrefix(first) == Self.checkedPrefix(expected))
        #expect(Self.checkedPrefix(second) != Self.checkedPrefix(expected))
        #expect(first == third)
        let fresh = try encryptor.encrypt(Self.plaintext, for: try Self.subscription())
        #expect(fresh.prefix(86) != first.prefix(86), "a fresh sender key and salt")
    }
}

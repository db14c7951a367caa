import Foundation
import HeraldTestSupport
import PushCore
import Testing
@testable import WebPush

/// Herald's RFC 8291 encryption read back by http_ece (PyPI) with the subscriber's private key: the plaintext
/// must come out byte for byte, and every body must be fresh (its own key and salt).
@Suite("Web Push encryption against http_ece")
struct EncryptionPeerTests {
    static func subscriber() throws -> (subscription: PushSubscription, privatePEM: String, auth: String) {
        let made = try WebPushPeer.run(["subscriber"])
        let pem = try #require(made["private_pem"] as? String)
        let p256dh = try #require(made["p256dh"] as? String)
        let auth = try #require(made["auth"] as? String)
        let json = #"{"endpoint":"https://push.example.net/send/abc","expirationTime":null,"keys":{"p256dh":""# + p256dh
            + #"","auth":""# + auth + #""}}"#
        return (try PushSubscription.parse(Array(json.utf8)), pem, auth)
    }

    static func decrypt(_ body: [UInt8], pem: String, auth: String) throws -> (plaintext: [UInt8], recordSize: Int) {
        let directory = makeTemporaryDirectory("webpush-body")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/body"
        try Data(body).write(to: URL(fileURLWithPath: file))
        let answer = try WebPushPeer.run(["decrypt", pem, auth, file])
        let text = try #require(answer["plaintext"] as? String)
        return (try #require(base64URLDecoded(text)), try #require(answer["record_size"] as? Int))
    }

    @Test func httpECEDecryptsWhatHeraldEncryptedByteForByte() throws {
        let (subscription, pem, auth) = try Self.subscriber()
        let payloads: [[UInt8]] = [
            [],
            Array(#"{"title":"Hello","body":"from Herald ✓"}"#.utf8),
            (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) },
            [UInt8](repeating: 0xAB, count: MessageEncryption.maxPayloadLength),
        ]
        for payload in payloads {
            let body = try MessageEncryption.encrypt(payload, for: subscription)
            #expect(body.count == MessageEncryption.encryptedLength(ofPayload: payload.count))
            #expect(body.count <= 4096)
            let (plaintext, recordSize) = try Self.decrypt(body, pem: pem, auth: auth)
            #expect(plaintext == payload, "payload of \(payload.count) bytes")
            #expect(recordSize == 4096)
        }
    }

    @Test func everyMessageHasItsOwnKeyAndSalt() throws {
        let (subscription, pem, auth) = try Self.subscriber()
        let payload = Array("same payload".utf8)
        let first = try MessageEncryption.encrypt(payload, for: subscription)
        let second = try MessageEncryption.encrypt(payload, for: subscription)
        #expect(first.prefix(16) != second.prefix(16), "salt")
        #expect(first[21..<86] != second[21..<86], "sender key")
        #expect(first[86...] != second[86...])
        #expect(try Self.decrypt(second, pem: pem, auth: auth).plaintext == payload)
    }

    @Test func paddingHidesTheExactLength() throws {
        #expect(MessageEncryption.encryptedLength(ofPayload: 1) == MessageEncryption.encryptedLength(ofPayload: 32))
        #expect(MessageEncryption.encryptedLength(ofPayload: 33) == MessageEncryption.encryptedLength(ofPayload: 64))
        #expect(MessageEncryption.encryptedLength(ofPayload: MessageEncryption.maxPayloadLength) == 4096)
    }

    @Test func aPayloadPastTheRecordLimitIsRefusedUnsent() throws {
        let (subscription, _, _) = try Self.subscriber()
        let tooLarge = [UInt8](repeating: 1, count: MessageEncryption.maxPayloadLength + 1)
        #expect(throws: EncryptionError.tooLarge(3994)) { try MessageEncryption.encrypt(tooLarge, for: subscription) }
    }
}

import Foundation
import HeraldTestSupport
import PushCore
import Simulators
import Testing
@testable import WebPush

/// Herald's Web Push module against the push-service simulator, whose decryption and VAPID check are its own
/// OpenSSL calls: each checks the other.
@Suite("Web Push sender against the simulator")
struct SenderAgainstSimulatorTests {
    /// Herald's encryption and VAPID, posted as bytes by python's requests: the simulator's own decryption (its
    /// own OpenSSL calls) reads Herald's payload back, and a token for another audience is refused.
    @Test func heraldsRequestIsDecryptedByTheSimulatorAndAWrongAudienceRefused() throws {
        let fixture = try WebPushSenderTests.Fixture()
        let server = fixture.servers[0]
        let environment = ["REQUESTS_CA_BUNDLE": server.caFile ?? ""]
        let key = try VAPIDKey(privateScalar: (1...32).map { UInt8($0) })
        let made = try server.subscribe(applicationServerKey: key.publicKey)
        let subscription = try PushSubscription.parse(Array(made.json.utf8))
        let payload = Array(#"{"title":"Herald","n":1}"#.utf8)
        let message = try WebPushMessage(subscription: subscription, payload: payload, ttl: 120, urgency: .high, topic: "t1")
        let signer = try VAPIDSigner(key: key, subject: "https://herald.example/contact")
        let request = try message.request(vapid: VAPIDTokenCache(signer: signer), now: Int64(Date().timeIntervalSince1970))
        let bodyFile = fixture.directory + "/body"
        try Data(request.body).write(to: URL(fileURLWithPath: bodyFile))
        let headers = String(decoding: try JSONSerialization.data(withJSONObject: Dictionary(uniqueKeysWithValues: request.headers)), as: UTF8.self)
        let answer = try WebPushPeer.run(["post", made.endpoint, headers, bodyFile], environment: environment)
        #expect(answer["status"] as? Int == 201, "\(answer)")
        let received = try #require(server.messages().first)
        #expect(received.plaintext == payload)
        #expect(received.urgency == "high" && received.topic == "t1" && received.ttl == 120)

        let foreign = signer.authorization(token: try signer.token(audience: "https://fcm.googleapis.com",
                                                                    expiresAt: Int64(Date().timeIntervalSince1970) + 3600))
        var wrongAudience = Dictionary(uniqueKeysWithValues: request.headers)
        wrongAudience["authorization"] = foreign
        let refused = try WebPushPeer.run(["post", made.endpoint, String(decoding: try JSONSerialization.data(withJSONObject: wrongAudience), as: UTF8.self),
                                          bodyFile], environment: environment)
        #expect(refused["status"] as? Int == 403)
        #expect((refused["body"] as? String)?.contains("BadJwtToken") == true)
        let decoded = WebPushResponse.decode(status: 403, body: Array(((refused["body"] as? String) ?? "").utf8), location: nil, retryAfter: nil)
        #expect(decoded.answerClass == .deferForConfiguration(reason: "VAPIDRefused: BadJwtToken"))
    }
}

/// `herald send --platform webpush` as an operator runs it, against the simulator.
@Suite("herald send --platform webpush")
struct SendWebPushCommandTests {
    @Test func oneMessageIsDeliveredAndDecryptedAndABadOneRefusedLocally() throws {
        let herald = try #require(heraldExecutable(), "the herald executable is built beside the tests")
        let fixture = try WebPushSenderTests.Fixture()
        let server = fixture.servers[0]
        let subscription = try server.subscribe()
        let base = ["send", "--platform", "webpush", "--vapid-key", base64URLEncoded([UInt8](repeating: 3, count: 32)), "--subject", "mailto:cli@example.com",
                    "--push-service-hosts", "127.0.0.1", "--allow-local", "--ca-file", server.caFile ?? "", "--subscription", subscription.json]
        let sent = try ChildProcess(name: "send-webpush", executable: herald, arguments: base + ["--payload", "from the cli", "--urgency", "low"])
        #expect(sent.waitForExit(seconds: 30) == 0, "\(sent.output)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(sent.output.utf8)) as? [String: Any], "\(sent.output)")
        #expect(answer["outcome"] as? String == "delivered" && answer["status"] as? Int == 201)
        #expect(answer["message_id"] as? String == "1")
        #expect(server.messages().map(\.plaintext) == [Array("from the cli".utf8)])
        #expect(server.messages().first?.urgency == "low")
        let refused = try ChildProcess(name: "send-webpush-bad", executable: herald, arguments: base + ["--payload", "x", "--urgency", "asap"])
        #expect(refused.waitForExit(seconds: 30) == 65, "\(refused.output)")
        #expect(refused.output.contains("BadUrgency"))
    }
}

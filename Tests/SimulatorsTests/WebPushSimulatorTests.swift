import Foundation
import HeraldTestSupport
import Simulators
import PushCore
import Testing
@testable import WebPush

/// The push-service simulator against pywebpush (PyPI) and against Herald's own module: each message's VAPID
/// header is checked, its payload decrypted with the subscriber's private key, and its fate read from the rules.
@Suite("Web Push simulator")
struct WebPushSimulatorTests {
    final class Fixture {
        let directory = makeTemporaryDirectory("webpush-sim")
        let server: MockWebPushServer
        init(faults: MockWebPushFaultScript = MockWebPushFaultScript()) throws {
            server = try MockWebPushServer(tls: try MockTLSFiles.generate(in: directory), faults: faults)
        }
        deinit {
            server.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
        var environment: [String: String] { ["REQUESTS_CA_BUNDLE": server.caFile ?? ""] }
    }

    @Test func pywebpushSendsAndGets201WithThePayloadDecrypted() throws {
        let fixture = try Fixture()
        let vapid = try PythonPeer.run(["vapid-key"])
        let raw = try #require(vapid["private_raw"] as? String)
        let publicText = try #require(vapid["public"] as? String)
        let publicKey = try #require(base64URLDecoded(publicText))
        let subscription = try fixture.server.subscribe(applicationServerKey: publicKey)
        let answer = try PythonPeer.run(["send", subscription.json, "hello from pywebpush", raw, "mailto:peer@example.com"],
                                        environment: fixture.environment)
        #expect(answer["status"] as? Int == 201, "\(answer)")
        #expect((answer["location"] as? String)?.hasPrefix(fixture.server.origin + "/m/") == true)
        let messages = fixture.server.messages()
        #expect(messages.count == 1)
        #expect(messages.first?.plaintext == Array("hello from pywebpush".utf8))
        #expect(messages.first?.subject == "mailto:peer@example.com")
        #expect(messages.first?.ttl == 30)
        #expect(messages.first?.transport == "http/1.1")
    }

    @Test func fatesFollowTheSubscriptionAndAnotherVAPIDKeyIsAMismatch() throws {
        let fixture = try Fixture(faults: MockWebPushFaultScript(rules: [
            MockWebPushRule(subscriptionPrefix: "gone-", fate: .gone),
            MockWebPushRule(subscriptionPrefix: "busy-", fate: .throttled, retryAfter: 7),
        ]))
        let vapid = try PythonPeer.run(["vapid-key"])
        let raw = try #require(vapid["private_raw"] as? String)
        let gone = try fixture.server.subscribe(prefix: "gone-")
        let busy = try fixture.server.subscribe(prefix: "busy-")
        let bound = try fixture.server.subscribe(applicationServerKey: [4] + [UInt8](repeating: 1, count: 64))
        func send(_ s: MockWebPushSubscription) throws -> [String: Any] {
            try PythonPeer.run(["send", s.json, "x", raw, "mailto:peer@example.com"], environment: fixture.environment)
        }
        #expect(try send(gone)["status"] as? Int == 410)
        #expect(try send(busy)["status"] as? Int == 429)
        let mismatch = try send(bound)
        #expect(mismatch["status"] as? Int == 403)
        #expect((mismatch["body"] as? String)?.contains("VapidPkHashMismatch") == true)
        #expect(fixture.server.messages().isEmpty)
        #expect(fixture.server.stats().vapidRefused == 1)
    }

    /// Herald's encryption and VAPID, posted as bytes by python's requests: the simulator's own decryption (its
    /// own OpenSSL calls) reads Herald's payload back, and a token for another audience is refused.
    @Test func heraldsRequestIsDecryptedByTheSimulatorAndAWrongAudienceRefused() throws {
        let fixture = try Fixture()
        let key = try VAPIDKey(privateScalar: (1...32).map { UInt8($0) })
        let made = try fixture.server.subscribe(applicationServerKey: key.publicKey)
        let subscription = try PushSubscription.parse(Array(made.json.utf8))
        let payload = Array(#"{"title":"Herald","n":1}"#.utf8)
        let message = try WebPushMessage(subscription: subscription, payload: payload, ttl: 120, urgency: .high, topic: "t1")
        let signer = try VAPIDSigner(key: key, subject: "https://herald.example/contact")
        let request = try message.request(vapid: VAPIDTokenCache(signer: signer), now: Int64(Date().timeIntervalSince1970))
        let bodyFile = fixture.directory + "/body"
        try Data(request.body).write(to: URL(fileURLWithPath: bodyFile))
        let headers = String(decoding: try JSONSerialization.data(withJSONObject: Dictionary(uniqueKeysWithValues: request.headers)), as: UTF8.self)
        let answer = try PythonPeer.run(["post", made.endpoint, headers, bodyFile], environment: fixture.environment)
        #expect(answer["status"] as? Int == 201, "\(answer)")
        let received = try #require(fixture.server.messages().first)
        #expect(received.plaintext == payload)
        #expect(received.urgency == "high" && received.topic == "t1" && received.ttl == 120)

        let foreign = signer.authorization(token: try signer.token(audience: "https://fcm.googleapis.com",
                                                                    expiresAt: Int64(Date().timeIntervalSince1970) + 3600))
        var wrongAudience = Dictionary(uniqueKeysWithValues: request.headers)
        wrongAudience["authorization"] = foreign
        let refused = try PythonPeer.run(["post", made.endpoint, String(decoding: try JSONSerialization.data(withJSONObject: wrongAudience), as: UTF8.self),
                                          bodyFile], environment: fixture.environment)
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
        let fixture = try WebPushSimulatorTests.Fixture()
        let subscription = try fixture.server.subscribe()
        let base = ["send", "--platform", "webpush", "--vapid-key", base64URLEncoded([UInt8](repeating: 3, count: 32)), "--subject", "mailto:cli@example.com",
                    "--push-service-hosts", "127.0.0.1", "--allow-local", "--ca-file", fixture.server.caFile ?? "", "--subscription", subscription.json]
        let sent = try ChildProcess(name: "send-webpush", executable: herald, arguments: base + ["--payload", "from the cli", "--urgency", "low"])
        #expect(sent.waitForExit(seconds: 30) == 0, "\(sent.output)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(sent.output.utf8)) as? [String: Any], "\(sent.output)")
        #expect(answer["outcome"] as? String == "delivered" && answer["status"] as? Int == 201)
        #expect(answer["message_id"] as? String == "1")
        #expect(fixture.server.messages().map(\.plaintext) == [Array("from the cli".utf8)])
        #expect(fixture.server.messages().first?.urgency == "low")
        let refused = try ChildProcess(name: "send-webpush-bad", executable: herald, arguments: base + ["--payload", "x", "--urgency", "asap"])
        #expect(refused.waitForExit(seconds: 30) == 65, "\(refused.output)")
        #expect(refused.output.contains("BadUrgency"))
    }
}

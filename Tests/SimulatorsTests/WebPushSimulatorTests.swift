import Foundation
import HeraldTestSupport
import PushCore
import Simulators
import Testing

/// The push-service simulator against pywebpush (PyPI): each message's VAPID header is checked, its payload
/// decrypted with the subscriber's private key, and its fate read from the rules. (Herald's own sender against it:
/// Tests/WebPushTests/SenderAgainstSimulatorTests.)
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
        let vapid = try WebPushPeer.run(["vapid-key"])
        let raw = try #require(vapid["private_raw"] as? String)
        let publicText = try #require(vapid["public"] as? String)
        let publicKey = try #require(base64URLDecoded(publicText))
        let subscription = try fixture.server.subscribe(applicationServerKey: publicKey)
        let answer = try WebPushPeer.run(["send", subscription.json, "hello from pywebpush", raw, "mailto:peer@example.com"],
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
        let vapid = try WebPushPeer.run(["vapid-key"])
        let raw = try #require(vapid["private_raw"] as? String)
        let gone = try fixture.server.subscribe(prefix: "gone-")
        let busy = try fixture.server.subscribe(prefix: "busy-")
        let bound = try fixture.server.subscribe(applicationServerKey: [4] + [UInt8](repeating: 1, count: 64))
        func send(_ s: MockWebPushSubscription) throws -> [String: Any] {
            try WebPushPeer.run(["send", s.json, "x", raw, "mailto:peer@example.com"], environment: fixture.environment)
        }
        #expect(try send(gone)["status"] as? Int == 410)
        #expect(try send(busy)["status"] as? Int == 429)
        let mismatch = try send(bound)
        #expect(mismatch["status"] as? Int == 403)
        #expect((mismatch["body"] as? String)?.contains("VapidPkHashMismatch") == true)
        #expect(fixture.server.messages().isEmpty)
        #expect(fixture.server.stats().vapidRefused == 1)
    }
}

import Basics
import Foundation
import HeraldTestSupport
import MockAPNs
import ProviderKit
import PushCore
import Reactor
import Testing
@testable import WebPush

/// The sender against the push-service simulator over real HTTP/2: a pool per origin made on first use and
/// closed once idle, each message encrypted and signed, the answers in their classes, endpoints off the
/// allow-list refused unsent.
@Suite("Web Push sender")
struct WebPushSenderTests {
    final class Fixture {
        let directory = makeTemporaryDirectory("webpush-sender")
        let servers: [MockWebPushServer]
        let loop: EventLoop
        let sender: LoopBoundSender
        let key = [UInt8](repeating: 5, count: 32)

        /// The sender lives on the loop; the test reaches it through `run`.
        final class LoopBoundSender: @unchecked Sendable {
            // @unchecked: touched only inside `loop.submit`/`execute` closures, on the loop thread.
            var sender: WebPushSender?
        }

        init(idlePoolMs: Int = 300_000, servers count: Int = 1, faults: MockWebPushFaultScript = MockWebPushFaultScript()) throws {
            let tls = try MockTLSFiles.generate(in: directory)
            servers = try (0..<count).map { _ in try MockWebPushServer(tls: tls, faults: faults) }
            loop = try EventLoop.startThread(name: "webpush-sender-test")
            sender = LoopBoundSender()
            var settings = WebPushSettings()
            settings.caFile = tls.caFile
            settings.idlePoolMs = idlePoolMs
            let auth = WebPushAuth(vapidKey: base64URLEncoded(key), subject: "mailto:ops@example.com",
                                   policy: PushServicePolicy(hosts: ["127.0.0.1"], allowsIPLiterals: true, allowsPrivateAddresses: true))
            let app = ProviderApp(index: 0, name: "web", auth: auth, credential: try auth.load())
            try loop.submit { [sender, loop, settings] in
                sender.sender = WebPushSender(apps: [app], loop: loop, settings: settings, logger: Logger(component: "test", minimumLevel: .error))
            }
        }

        deinit {
            try? loop.submit { [sender] in sender.sender?.closeAll(); sender.sender = nil }
            loop.stop()
            for server in servers { server.stop() }
            try? FileManager.default.removeItem(atPath: directory)
        }

        func send(_ subscription: MockWebPushSubscription, _ payload: String) throws -> DeliveryResult {
            let message = try WebPushMessage(subscription: PushSubscription.parse(Array(subscription.json.utf8)), payload: Array(payload.utf8), ttl: 60)
            return try send(message)
        }

        func send(_ message: WebPushMessage) throws -> DeliveryResult {
            let outcome = LockedValue<PushOutcome?>(nil)
            loop.execute { [sender] in
                _ = sender.sender?.send(message, app: 0) { result in outcome.withLock { $0 = result } }
            }
            #expect(waitUntil(seconds: 20) { outcome.withLock { $0 != nil } }, "an answer within 20 s")
            return try #require(outcome.withLock { $0 }).result
        }

        func onLoop<T: Sendable>(_ body: @escaping @Sendable (WebPushSender) -> T) throws -> T {
            try loop.submit { [sender] in body(sender.sender!) }
        }
    }

    @Test func aPoolPerOriginDeliversAndTheAnswersLandInTheirClasses() throws {
        let fixture = try Fixture(servers: 2, faults: MockWebPushFaultScript(rules: [MockWebPushRule(subscriptionPrefix: "gone-", fate: .gone)]))
        let first = try fixture.servers[0].subscribe()
        let second = try fixture.servers[1].subscribe()
        let gone = try fixture.servers[0].subscribe(prefix: "gone-")

        let delivered = try fixture.send(first, "one")
        let answer = try #require(delivered.webPush)
        #expect(answer.status == 201)
        #expect(answer.answerClass == .delivered)
        #expect(answer.resultFields.messageName == "1")
        #expect(try fixture.send(second, "two").webPush?.status == 201)
        #expect(try fixture.send(gone, "three").webPush?.answerClass == .dropToken(invalidSince: nil, reason: "Gone"))

        #expect(fixture.servers[0].messages().map(\.plaintext) == [Array("one".utf8)])
        #expect(fixture.servers[0].messages().first?.transport == "h2")
        #expect(fixture.servers[1].messages().map(\.plaintext) == [Array("two".utf8)])
        #expect(try fixture.onLoop { $0.poolCount } == 2)
        let metrics = try fixture.onLoop { sender -> ProviderMetrics in
            var metrics = ProviderMetrics(apps: 1)
            sender.addMetrics(to: &metrics)
            return metrics
        }
        #expect(metrics.pools.map(\.environment) == fixture.servers.map(\.origin).sorted())
        #expect(metrics.tokensSigned == [2], "one VAPID token per origin")
    }

    @Test func anEndpointOffTheAllowListIsRefusedUnsent() throws {
        let fixture = try Fixture()
        let made = try fixture.servers[0].subscribe()
        let foreign = made.json.replacingOccurrences(of: "https://127.0.0.1:", with: "https://localhost:")
        let message = try WebPushMessage(subscription: PushSubscription.parse(Array(foreign.utf8)), payload: [1])
        let result = try fixture.send(message)
        #expect(result.webPush?.status == 0)
        #expect(result.webPush?.reasonName.hasPrefix("EndpointRefused: push service localhost is not on the app's allow-list") == true)
        #expect(fixture.servers[0].stats().requests == 0)
        #expect(try fixture.onLoop { $0.poolCount } == 0)
    }

    @Test func anIdlePoolIsClosed() throws {
        let fixture = try Fixture(idlePoolMs: 200)
        #expect(try fixture.send(fixture.servers[0].subscribe(), "x").webPush?.status == 201)
        #expect(try fixture.onLoop { $0.poolCount } == 1)
        #expect(waitUntil(seconds: 10) { (try? fixture.onLoop { $0.poolCount }) == 0 }, "the idle pool closes")
    }
}

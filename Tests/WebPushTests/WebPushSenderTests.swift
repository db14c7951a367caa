import Basics
import CurlHTTP
import Foundation
import HTTP2
import HeraldTestSupport
import Simulators
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

        /// `http1Only`: which servers speak only HTTP/1.1 (by index); `policy`: the app's, else 127.0.0.1 allowed.
        init(idlePoolMs: Int = 300_000, servers count: Int = 1, faults: MockWebPushFaultScript = MockWebPushFaultScript(),
             http1Only: Set<Int> = [], policy: PushServicePolicy? = nil, requestTimeoutMs: Int? = nil) throws {
            let tls = try MockTLSFiles.generate(in: directory)
            servers = try (0..<count).map { try MockWebPushServer(tls: tls, faults: faults, http1Only: http1Only.contains($0)) }
            loop = try EventLoop.startThread(name: "webpush-sender-test")
            sender = LoopBoundSender()
            var settings = WebPushSettings()
            settings.caFile = tls.caFile
            settings.idlePoolMs = idlePoolMs
            if let requestTimeoutMs { settings.requestTimeoutMs = requestTimeoutMs }
            let auth = WebPushAuth(vapidKey: base64URLEncoded(key), subject: "mailto:ops@example.com",
                                   policy: policy ?? PushServicePolicy(hosts: ["127.0.0.1"], allowsIPLiterals: true, allowsPrivateAddresses: true))
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

    /// A push service whose ALPN refuses h2 gets every message over HTTP/1.1 (keep-alive: a few connections for
    /// many messages), and each answer lands in the class it gets over HTTP/2: the same fates, side by side.
    @Test func aServiceWithoutHTTP2GetsItsMessagesOverHTTP11WithTheSameOutcomes() throws {
        let faults = MockWebPushFaultScript(rules: [
            MockWebPushRule(subscriptionPrefix: "gone-", fate: .gone), MockWebPushRule(subscriptionPrefix: "nf-", fate: .notFound),
            MockWebPushRule(subscriptionPrefix: "big-", fate: .tooLarge), MockWebPushRule(subscriptionPrefix: "slow-", fate: .throttled, retryAfter: 7),
            MockWebPushRule(subscriptionPrefix: "busy-", fate: .unavailable, retryAfter: 3), MockWebPushRule(subscriptionPrefix: "oops-", fate: .internalError),
            MockWebPushRule(subscriptionPrefix: "jwt-", fate: .badJwt),
        ])
        let fixture = try Fixture(servers: 2, faults: faults, http1Only: [1])
        let prefixes = ["ok-", "gone-", "nf-", "big-", "slow-", "busy-", "oops-", "jwt-", "ok-"]
        var outcomes: [[String]] = []
        for server in fixture.servers {
            outcomes.append(try prefixes.map { prefix in
                let answer = try #require(try fixture.send(server.subscribe(prefix: prefix), "to \(prefix)").webPush)
                return "\(answer.status) \(answer.answerClass) \(answer.retryAfterSeconds ?? -1) \(answer.messageID ?? "-")"
            })
        }
        #expect(outcomes[0] == outcomes[1], "HTTP/2 and HTTP/1.1 answers differ")
        #expect(outcomes[1].first?.hasPrefix("201 delivered") == true, "\(outcomes[1])")
        #expect(outcomes[1][4].hasPrefix("429") && outcomes[1][4].contains(" 7 "), "Retry-After read over HTTP/1.1: \(outcomes[1][4])")
        #expect(fixture.servers[0].messages().allSatisfy { $0.transport == "h2" })
        let overHTTP1 = fixture.servers[1].messages()
        #expect(overHTTP1.map(\.plaintext) == [Array("to ok-".utf8), Array("to ok-".utf8)])
        #expect(overHTTP1.allSatisfy { $0.transport == "http/1.1" }, "\(overHTTP1.map(\.transport))")
        let h2Origin = fixture.servers[0].origin, http1Origin = fixture.servers[1].origin
        #expect(try fixture.onLoop { $0.transport(of: http1Origin) } == "http/1.1")
        #expect(try fixture.onLoop { $0.transport(of: h2Origin) } == "h2")
        // One TLS handshake learned the service's choice; the messages then shared keep-alive connections.
        #expect(fixture.servers[1].stats().connectionsAccepted <= 1 + WebPushSettings().http1ConnectionsPerOrigin)
        let metrics = try fixture.onLoop { sender -> ProviderMetrics in
            var metrics = ProviderMetrics(apps: 1)
            sender.addMetrics(to: &metrics)
            return metrics
        }
        #expect(metrics.pools.first { $0.environment == fixture.servers[1].origin }?.connections == WebPushSettings().http1ConnectionsPerOrigin)
    }

    /// A host name on the allow-list that resolves to a loopback address (`localhost`: 127.0.0.1 and ::1) is refused
    /// where the connection opens, on the very addresses resolved (so DNS rebinding cannot slip past): the message
    /// fails unsent with the policy's reason, nothing reaches the service. With private addresses allowed (the
    /// test setting) the same name is sent to.
    @Test func aNameResolvingToALoopbackAddressIsRefusedAtConnectTime() throws {
        // A request timeout shorter than the pool's reconnect back-off: a later message cannot wait for the next
        // connect and fails at once, with the refusal the last connect met.
        let refusing = try Fixture(policy: PushServicePolicy(hosts: ["localhost"]), requestTimeoutMs: 300)
        let made = try refusing.servers[0].subscribe()
        let local = made.json.replacingOccurrences(of: "https://127.0.0.1:", with: "https://localhost:")
        let message = try WebPushMessage(subscription: PushSubscription.parse(Array(local.utf8)), payload: [1])
        let refused = try #require(try refusing.send(message).webPush)
        #expect(refused.status == 0)
        #expect(refused.reasonName == "EndpointRefused: push service localhost is a loopback or private address", "\(refused.reasonName)")
        #expect(refused.answerClass == .fail(reason: refused.reasonName))
        #expect(refusing.servers[0].stats().connectionsAccepted == 0)
        // Issue 54: later messages to the same origin, while its pool backs off, are refused alike (they failed as
        // `ConnectionFailed`: an outage, retried for ever), never an outage.
        for round in 0..<3 {
            let again = try refusing.send(message)
            #expect(again.webPush?.reasonName == refused.reasonName, "round \(round): \(String(describing: again))")
        }
        #expect(refusing.servers[0].stats().connectionsAccepted == 0)

        let allowing = try Fixture(policy: PushServicePolicy(hosts: ["localhost"], allowsPrivateAddresses: true))
        let other = try allowing.servers[0].subscribe()
        let sent = try allowing.send(WebPushMessage(subscription: PushSubscription.parse(Array(other.json.replacingOccurrences(
            of: "https://127.0.0.1:", with: "https://localhost:").utf8)), payload: [1]))
        #expect(sent.webPush.map { $0.status != 0 } == true, "the service answered (its VAPID audience is 127.0.0.1): \(String(describing: sent))")
        #expect(allowing.servers[0].stats().requests == 1)
    }

    /// The HTTP/1.1 path checks addresses too: libcurl's socket callback refuses the address before connecting.
    @Test func theHTTP11PathRefusesAPrivateAddressBeforeConnecting() throws {
        let fixture = try Fixture(http1Only: [0])
        let policy = PushServicePolicy(hosts: ["localhost"])
        let pool = HTTP1OriginPool(loop: fixture.loop, connections: 1, maxQueued: 10, options: CurlPost.Options(caFile: fixture.servers[0].caFile, http1Only: true) {
            WebPushSender.refusal($0, policy: policy, host: "localhost")
        })
        defer { pool.close() }
        let result = LockedValue<Result<HTTP2Response, HTTP2ClientError>?>(nil)
        let url = fixture.servers[0].origin.replacingOccurrences(of: "127.0.0.1", with: "localhost") + "/push/x"
        // On the loop, as the sender sends: the pool holds each completion bound to it.
        #expect(try fixture.loop.submit {
            pool.send(url: url, headers: [], body: [1]) { answer in result.withLock { $0 = answer } }
        })
        #expect(waitUntil(seconds: 10) { result.withLock { $0 != nil } })
        guard case .failure(.addressRefused(let why))? = result.withLock({ $0 }) else {
            Issue.record("not refused: \(String(describing: result.withLock { $0 }))")
            return
        }
        #expect(why == "push service localhost is a loopback or private address")
        #expect(fixture.servers[0].stats().connectionsAccepted == 0)
    }
}

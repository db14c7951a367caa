import Basics
import Foundation
import HeraldTestSupport
import ProviderKit
import PushCore
import Reactor
import Simulators
import Testing
@testable import Expo

/// The sender against `herald mock-expo` over real HTTP/2: one loop turn's messages go as one `push/send` of at most
/// `batch_size`, each job hears its own ticket in its class, and a refused access token is tried once more, then parks the app.
@Suite("Expo sender against the simulator")
struct ExpoSenderTests {
    final class Fixture {
        let directory = makeTemporaryDirectory("expo-sender")
        let server: MockExpoServer
        let loop: EventLoop
        let holder = Holder()

        /// The sender lives on the loop; the test reaches it through `loop.submit`.
        final class Holder: @unchecked Sendable {
            // @unchecked: touched only inside `loop.submit`/`execute` closures, on the loop thread.
            var sender: ExpoSender?
        }

        init(batchSize: Int = 100, tokenGiven: String = "secret-token", dropAfterRequests: Int? = nil) throws {
            var configuration = MockExpoConfiguration()
            configuration.dropAfterRequests = dropAfterRequests
            configuration.tls = try MockTLSFiles.generate(in: directory)
            configuration.accessToken = "secret-token"
            server = try MockExpoServer(configuration: configuration)
            loop = try EventLoop.startThread(name: "expo-sender-test")
            var settings = ExpoSettings()
            settings.pool.url = server.baseURL
            settings.pool.caFile = server.caFile
            settings.batchSize = batchSize
            // One connection, so a connection fault meets the next batch.
            if dropAfterRequests != nil { settings.pool.connectionsPerPool = 1 }
            let file = directory + "/token"
            try Data(tokenGiven.utf8).write(to: URL(fileURLWithPath: file))
            let auth = ExpoAuth(accessTokenFile: file)
            let app = ProviderApp(index: 0, name: "rn", auth: auth, credential: try auth.load())
            try loop.submit { [holder, loop, settings] in
                holder.sender = ExpoSender(apps: [app], loop: loop, expo: settings, logger: Logger(component: "test", minimumLevel: .error))
            }
        }

        deinit {
            try? loop.submit { [holder] in holder.sender?.closeAll(); holder.sender = nil }
            loop.stop()
            server.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// Sends every token in one loop turn; their results in order.
        func send(_ tokens: [String], payload: String = #"{"title":"t","body":"b"}"#) throws -> [DeliveryResult] {
            let results = LockedValue<[Int: DeliveryResult]>([:])
            loop.execute { [holder] in
                for (index, token) in tokens.enumerated() {
                    let notification = PushNotification(deviceToken: token, topic: "", environment: .production, payload: Array(payload.utf8), platform: .expo)
                    _ = holder.sender?.send(notification, to: Destination(app: 0, environment: .production, platform: .expo), afterConnection: 0) { outcome in
                        results.withLock { $0[index] = outcome.result }
                    }
                }
            }
            #expect(waitUntil(seconds: 30) { results.withLock { $0.count } == tokens.count }, "every answer within 30 s")
            return results.withLock { got in tokens.indices.compactMap { got[$0] } }
        }
    }

    @Test func oneLoopTurnIsOneRequestAndEachTokenHearsItsTicket() throws {
        let fixture = try Fixture()
        let fates = ["ok-1", "gone-1", "rate-1", "big-1", "rgone-1", "late-1"]
        let results = try fixture.send(fates.map { "ExponentPushToken[\($0)]" })
        #expect(fixture.server.stats().sendRequests == 1)
        #expect(fixture.server.stats().messages == fates.count)
        let classes = results.map { $0.expo?.answerClass }
        guard case .awaitReceipt(let ticket, 900_000)? = classes[0] else { Issue.record("\(classes[0] as Any)"); return }
        #expect(!ticket.isEmpty)
        #expect(classes[1] == .dropToken(invalidSince: nil, reason: "DeviceNotRegistered"))
        #expect(classes[2] == .throttled(reason: "MessageRateExceeded", retryAfterMilliseconds: 0, slowsDestination: false))
        #expect(classes[3] == .fail(reason: "MessageTooBig"))
        for index in [4, 5] {
            guard case .awaitReceipt? = classes[index] else { Issue.record("\(fates[index]): \(classes[index] as Any)"); continue }
        }
    }

    @Test func batchesHoldAtMostTheBatchSize() throws {
        let fixture = try Fixture(batchSize: 100)
        let results = try fixture.send((0..<250).map { "ExpoPushToken[ok-\($0)]" })
        #expect(results.count == 250)
        #expect(fixture.server.stats().sendRequests == 3)
        #expect(results.allSatisfy { if case .awaitReceipt? = $0.expo?.answerClass { true } else { false } })
        let tickets = Set(results.compactMap { $0.expo?.ticketID })
        #expect(tickets.count == 250, "a ticket of its own for each message")
    }

    /// A connection the service drops with a batch in flight: every job of that batch hears that its outcome is
    /// unknown (the core resends them), and the next batch goes out on a new connection.
    @Test func aDroppedConnectionTellsEveryJobOfItsBatch() throws {
        let fixture = try Fixture(dropAfterRequests: 1)
        let first = try fixture.send(["ExponentPushToken[ok-1]", "ExponentPushToken[ok-2]"])
        #expect(first.allSatisfy { if case .awaitReceipt? = $0.expo?.answerClass { true } else { false } }, "\(first)")
        let second = try fixture.send(["ExponentPushToken[ok-3]", "ExponentPushToken[ok-4]", "ExponentPushToken[ok-5]"])
        #expect(second.count == 3 && second.allSatisfy { !$0.isAnswer }, "\(second)")
        let third = try fixture.send(["ExponentPushToken[ok-6]"])
        #expect(third.first?.expo != nil, "a new connection answers: \(third)")
    }

    @Test func aRefusedAccessTokenIsTriedOnceMoreThenParksTheApp() throws {
        let fixture = try Fixture(tokenGiven: "wrong-token")
        let first = try fixture.send(["ExponentPushToken[ok-1]"])
        #expect(first.first?.expo?.answerClass == .resendNow(freshConnection: false, refreshToken: true))
        let second = try fixture.send(["ExponentPushToken[ok-1]"])
        #expect(second.first?.expo?.answerClass == .deferForConfiguration(reason: "UNAUTHORIZED: access token refused twice"))
        #expect(fixture.server.stats().unauthorized == 2)
    }
}

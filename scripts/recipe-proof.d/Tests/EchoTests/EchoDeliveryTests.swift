import Basics
import Echo
import Foundation
import HeraldTestSupport
import ProviderKit
import PushCore
import Reactor
import Simulators
import Testing

/// The echo provider (scripts/recipe-proof's throwaway, built from docs/adding-a-provider.md): its answers in their
/// classes, its job read from the parser's slices, and its sender against `herald mock-echo`'s server over HTTP/2.
@Suite struct EchoDeliveryTests {
    @Test func everyEchoAnswerLandsInItsClass() {
        #expect(EchoResponse(status: 200).answerClass == .delivered)
        #expect(EchoResponse(status: 410).answerClass == .dropToken(invalidSince: nil, reason: "HTTP 410"))
        #expect(EchoResponse(status: 429).answerClass == .throttled(reason: "HTTP 429", retryAfterMilliseconds: 1000, slowsDestination: false))
        #expect(EchoResponse(status: 503).answerClass == .serverError(reason: "HTTP 503", retryAfterMilliseconds: 0))
        #expect(EchoResponse(status: 400).answerClass == .fail(reason: "HTTP 400"))
    }

    @Test func aJobIsReadWithItsNote() throws {
        let (spec, read) = try EchoProvider.parse(Array(#"{"platform":"echo","token":"aa01","payload":{"a":1},"note":"hi"}"#.utf8))
        #expect(spec.platform == EchoProvider.platform)
        #expect(read == EchoJob(token: "aa01", note: "hi"))
        #expect(throws: JobError.self) { try EchoProvider.parse(Array(#"{"platform":"echo","token":"aa01","payload":{},"note":1}"#.utf8)) }
    }

    final class Holder: @unchecked Sendable {
        // @unchecked: touched only inside `loop.submit`/`execute` closures, on the loop thread.
        var sender: EchoSender?
    }

    @Test func theSenderDeliversAndDropsAgainstTheSimulator() throws {
        let directory = makeTemporaryDirectory("herald-echo")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tls = try MockTLSFiles.generate(in: directory)
        let server = try MockEchoServer(tls: tls)
        defer { server.stop() }
        try "echo-key\n".write(toFile: directory + "/key", atomically: true, encoding: .utf8)
        var settings = EchoSettings()
        settings.pool.url = server.baseURL
        settings.pool.caFile = tls.caFile
        let auth = EchoAuth(keyFile: directory + "/key")
        let app = ProviderApp(index: 0, name: "echo", auth: auth, credential: try auth.load())
        let loop = try EventLoop.startThread(name: "echo-test")
        defer { loop.stop() }
        let holder = Holder()
        try loop.submit { [settings] in
            holder.sender = EchoSender(apps: [app], loop: loop, settings: settings, logger: Logger(component: "test", minimumLevel: .error))
        }
        defer { try? loop.submit { holder.sender?.closeAll(); holder.sender = nil } }
        func send(_ token: String) throws -> AnswerClass? {
            let outcome = LockedValue<PushOutcome?>(nil)
            let notification = PushNotification(deviceToken: token, topic: "", environment: .production, payload: Array(#"{"a":1}"#.utf8),
                                                platform: EchoProvider.platform)
            loop.execute {
                _ = holder.sender?.send(notification, to: Destination(app: 0, environment: .production, platform: EchoProvider.platform),
                                        afterConnection: 0) { result in outcome.withLock { $0 = result } }
            }
            #expect(waitUntil(seconds: 20) { outcome.withLock { $0 != nil } }, "an answer within 20 s")
            return outcome.withLock { $0 }?.result.answer(as: EchoResponse.self)?.answerClass
        }
        #expect(try send("aa01") == .delivered)
        #expect(try send("4100aa") == .dropToken(invalidSince: nil, reason: "HTTP 410"))
        #expect(server.answers() == [200: 1, 410: 1])
    }
}

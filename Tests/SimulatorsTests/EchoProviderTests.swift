import COpenSSL
import Foundation
import HeraldTestSupport
import Testing
@testable import Simulators

/// A generic echo provider, none of Herald's own, plugged into the shared simulator server: what docs/simulators.md
/// says a next provider brings (a request type, a connection handler, a provider and its fault rules) is a whole
/// simulator, with the shared connection, fault script, fault engine and counters doing the rest.
@Suite("a generic echo provider on the shared simulator server")
struct EchoProviderTests {
    final class EchoRequest: MockRequest {
        var path = ""
        var body: [UInt8] = []

        override func setHeader(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
            if UTF8Matching.equal(name, ":path") { path = String(decoding: value, as: UTF8.self) }
        }

        override func append(body chunk: UnsafeBufferPointer<UInt8>) { body.append(contentsOf: chunk) }
    }

    /// Answers `status` for requests to `path`; with `failFirst`, only the first that many per path.
    struct EchoRule: ScriptedRule, Codable, Sendable, Equatable {
        var path: String?
        var failFirst: Int?
        var status = 503
        var rate: Double?
        var latencyMs: MockLatency?

        func matches(_ subject: String) -> Bool { path == nil || path == subject }

        func effect(startMillis: Int64) -> RuleEffect<Int> {
            if let failFirst { return .failFirst(count: failFirst, answer: status) }
            return .verdict(.answer(status))
        }

        func throttled(retryAfter: Int) -> Int { 429 }
    }

    /// Its rule vocabulary, with no fields of its own: the script is the shared `FaultScript`.
    struct EchoFaults: FaultVocabulary {
        typealias Rule = EchoRule
        static func check(_ script: FaultScript<EchoFaults>) throws {}
    }
    typealias EchoScript = FaultScript<EchoFaults>

    /// HTTP/2 over TLS; the body comes back, unless a rule answers first.
    final class EchoProvider: MockProvider {
        let faults: ScriptedFaults<EchoFaults>
        let counters: ConnectionCounters
        let tls: MockTLSFiles

        init(script: EchoScript, tls: MockTLSFiles, counters: ConnectionCounters) {
            faults = ScriptedFaults(script: script, defaultSeed: 1)
            self.tls = tls
            self.counters = counters
        }

        func makeTLSContext() throws -> OpaquePointer? {
            let context = try ServerLoop.makeTLSContext(tls)
            copenssl_mock_ctx_select_h2(context)
            return context
        }
        var connectionSettings: MockConnectionSettings { MockConnectionSettings() }
        var connectionFaults: ConnectionFaults { faults.script.connectionFaults }
        func makeHandler(for connection: MockServerConnection, listener: Int) -> any MockConnectionHandler {
            EchoHandler(connection: connection, provider: self)
        }
        func stopping() {}
    }

    final class EchoHandler: MockConnectionHandler {
        unowned let connection: MockServerConnection
        unowned let provider: EchoProvider

        init(connection: MockServerConnection, provider: EchoProvider) {
            self.connection = connection
            self.provider = provider
        }

        var initialMaxConcurrentStreams: UInt32 { 10 }
        func connectionReady() {}
        func makeRequest(streamID: Int32) -> MockRequest { EchoRequest(streamID: streamID) }

        func requestComplete(_ mockRequest: MockRequest) {
            let request = mockRequest as! EchoRequest
            guard case .admitted = connection.admit(request) else { return }
            let (verdict, delay) = provider.faults.evaluate(key: request.path, request.path)
            connection.after(milliseconds: delay) { [unowned self] in
                switch verdict {
                case .answer(let status)?: connection.respond(request, status: status, headers: [], body: Array("no\n".utf8))
                case .connection(let fault)?: connection.apply(fault, to: request)
                case .accept?, nil: connection.respond(request, status: 200, headers: [("content-type", "text/plain")], body: request.body)
                }
            }
        }
    }

    @Test func aHandlerAndItsFaultRulesAreAWholeSimulator() throws {
        let directory = makeTemporaryDirectory("herald-sim-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tls = try MockTLSFiles.generate(in: directory)
        let script = EchoScript(rules: [EchoRule(path: "/flaky", failFirst: 2)], extras: EchoFaults())
        let simulator = try SimulatorHandle<EchoProvider>(name: "mock-echo", host: "127.0.0.1", ports: [0]) { counters in
            EchoProvider(script: script, tls: tls, counters: counters)
        }
        defer { simulator.stop() }
        let base = "https://127.0.0.1:\(simulator.ports[0])"
        let answers = try curl(caFile: tls.caFile, [(base + "/echo", "POST", [], "hello"), (base + "/flaky", "POST", [], "a"),
                                                    (base + "/flaky", "POST", [], "b"), (base + "/flaky", "POST", [], "c")])
        #expect(answers.map(\.status) == [200, 503, 503, 200])
        #expect(answers[0].body == "hello")
        #expect(answers[3].body == "c")
        #expect(simulator.read(0) { $0.counters.requests } == 4)
        #expect(simulator.read(0) { $0.counters.http2Connections } == 1)
        #expect(simulator.read(0) { $0.counters.connectionsAccepted } == 1)
    }
}

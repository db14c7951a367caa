import COpenSSL
import Foundation

/// The echo service's simulator (scripts/recipe-proof's throwaway provider): HTTP/2 over TLS, `POST /echo` with a
/// bearer token and `{"token":...,"payload":...}`, answered by the token's first three characters when they are
/// one of its statuses (`410...` gone, `429...` throttled, `500...`/`503...` retry, `400...` refused), else 200
/// with the body echoed. On its own loop thread; every method hops onto it.
public final class MockEchoServer: Sendable {
    public let port: Int
    /// `https://127.0.0.1:<port>`: the echo provider's `url`.
    public let baseURL: String
    public let caFile: String?
    private let simulator: SimulatorHandle<MockEchoProvider>

    public init(tls: MockTLSFiles, host: String = "127.0.0.1", port: Int = 0) throws {
        let simulator = try SimulatorHandle(name: "mock-echo", host: host, ports: [port]) { counters in MockEchoProvider(tls: tls, counters: counters) }
        self.simulator = simulator
        self.port = simulator.ports[0]
        baseURL = "https://\(ServerLoop.urlHost(host)):\(self.port)"
        caFile = tls.caFile
    }

    deinit { stop() }

    /// The answers given so far, by status.
    public func answers() -> [Int: Int] { simulator.read([:]) { $0.answers } }

    public func stop() { simulator.stop() }
}

/// The statuses a token's prefix asks for.
let mockEchoStatuses: Set<Int> = [400, 410, 429, 500, 503]

final class MockEchoProvider: MockProvider {
    let tls: MockTLSFiles
    let counters: ConnectionCounters
    var answers: [Int: Int] = [:]

    init(tls: MockTLSFiles, counters: ConnectionCounters) {
        self.tls = tls
        self.counters = counters
    }

    func makeTLSContext() throws -> OpaquePointer? {
        let context = try ServerLoop.makeTLSContext(tls)
        copenssl_mock_ctx_select_h2(context)
        return context
    }
    var connectionSettings: MockConnectionSettings { MockConnectionSettings() }
    var connectionFaults: ConnectionFaults { ConnectionFaults() }
    func makeHandler(for connection: MockServerConnection, listener: Int) -> any MockConnectionHandler {
        MockEchoHandler(connection: connection, provider: self)
    }
    func stopping() {}
}

final class MockEchoRequest: MockRequest {
    var path = ""
    var authorization = ""
    var body: [UInt8] = []

    override func setHeader(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        if UTF8Matching.equal(name, ":path") { path = String(decoding: value, as: UTF8.self) }
        if UTF8Matching.equal(name, "authorization") { authorization = String(decoding: value, as: UTF8.self) }
    }

    override func append(body chunk: UnsafeBufferPointer<UInt8>) { if body.count < 65_536 { body.append(contentsOf: chunk) } }
}

final class MockEchoHandler: MockConnectionHandler {
    unowned let connection: MockServerConnection
    unowned let provider: MockEchoProvider

    init(connection: MockServerConnection, provider: MockEchoProvider) {
        self.connection = connection
        self.provider = provider
    }

    var initialMaxConcurrentStreams: UInt32 { 100 }
    func connectionReady() {}
    func makeRequest(streamID: Int32) -> MockRequest { MockEchoRequest(streamID: streamID) }

    func requestComplete(_ mockRequest: MockRequest) {
        let request = mockRequest as! MockEchoRequest
        guard case .admitted = connection.admit(request) else { return }
        let status = Self.status(request)
        provider.answers[status, default: 0] += 1
        let body = status == 200 ? request.body : Array("{\"status\":\(status)}".utf8)
        connection.respond(request, status: status, headers: [("content-type", "application/json")], body: body)
    }

    /// 404 off `/echo`, 401 without a bearer token, 400 for a body without a token, else the token's prefix.
    static func status(_ request: MockEchoRequest) -> Int {
        guard request.path == "/echo" else { return 404 }
        guard request.authorization.lowercased().hasPrefix("bearer "), request.authorization.utf8.count > 7 else { return 401 }
        guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any],
              let token = object["token"] as? String, object["payload"] != nil else { return 400 }
        let asked = Int(token.prefix(3)) ?? 200
        return mockEchoStatuses.contains(asked) ? asked : 200
    }
}

import Foundation

/// A simulated push service (RFC 8030) on the shared simulator server: it mints subscriptions, checks every
/// message's VAPID header and headers, decrypts its payload with the subscriber's private key and keeps it, and
/// answers by the fault rules (fates by subscription). HTTP/2 and HTTP/1.1 over TLS. Thread-safe.
public final class MockWebPushServer: Sendable {
    public let port: Int
    /// `https://127.0.0.1:<port>`: the origin VAPID tokens must name as `aud`.
    public let origin: String
    public let caFile: String?
    private let simulator: SimulatorHandle<WebPushCore>

    /// `http1Only`: a push service without HTTP/2 (its ALPN refuses h2), as some are.
    public init(tls: MockTLSFiles, host: String = "127.0.0.1", port: Int = 0, faults: MockWebPushFaultScript = MockWebPushFaultScript(),
                http1Only: Bool = false) throws {
        let simulator = try SimulatorHandle(name: "mock-webpush", host: host, ports: [port]) { counters in
            try WebPushCore(tls: tls, script: faults, counters: counters, http1Only: http1Only)
        }
        self.simulator = simulator
        self.port = simulator.ports[0]
        let shownHost = host == "0.0.0.0" || host.isEmpty ? "127.0.0.1" : host.contains(":") ? "[\(host)]" : host
        origin = "https://\(shownHost):\(simulator.ports[0])"
        caFile = tls.caFile
        do { try simulator.run { [origin] in $0.origin = origin } } catch { simulator.stop(); throw error }
    }

    deinit { stop() }

    /// A new subscription (`prefix` starts its id: the fault rules match on it). With `applicationServerKey`
    /// (uncompressed point), only that VAPID key is accepted for it, as a browser binds it.
    public func subscribe(prefix: String = "sub-", applicationServerKey: [UInt8]? = nil) throws -> MockWebPushSubscription {
        let result: Result<MockWebPushSubscription, SimulatorError>? = simulator.read(nil) { core in
            do { return .success(try core.subscribe(prefix: prefix, applicationServerKey: applicationServerKey)) } catch {
                return .failure(error as? SimulatorError ?? .openSSL("\(error)"))
            }
        }
        guard let result else { throw SimulatorError.configuration("the simulator has stopped") }
        return try result.get()
    }

    /// Every message accepted so far, decrypted, in order.
    public func messages() -> [MockWebPushMessage] { simulator.read([]) { $0.messages } }

    public func stats() -> MockWebPushStats { simulator.read(MockWebPushStats()) { $0.snapshot() } }

    public func replaceFaults(_ script: MockWebPushFaultScript) throws {
        try script.check()
        try simulator.run { $0.faults.replace(script, defaultSeed: 23) }
    }

    /// A push service that is down (`true`) or back: while down every new TLS handshake that offers ALPN fails
    /// (connections already open stay).
    public func refuseConnections(_ refusing: Bool) throws {
        try simulator.run { $0.alpn.refusing = refusing }
    }

    public func stop() { simulator.stop() }
}

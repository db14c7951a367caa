/// Expo's push service on the shared simulator server (`ExpoCore`): HTTP/2 and HTTP/1.1 over TLS on one port, on
/// its own loop thread. Thread-safe: every method hops onto the loop.
public final class MockExpoServer: Sendable {
    public let port: Int
    public let configuration: MockExpoConfiguration
    /// `https://<host>:<port>`: in place of `https://exp.host` (Herald's `expo.url`, the SDK's base URL).
    public let baseURL: String
    private let simulator: SimulatorHandle<ExpoCore>

    public var caFile: String? { configuration.tls?.caFile }

    public init(configuration: MockExpoConfiguration) throws {
        self.configuration = configuration
        simulator = try SimulatorHandle(name: "mock-expo", host: configuration.host, ports: [configuration.port]) { _ in
            ExpoCore(configuration: configuration)
        }
        port = simulator.ports[0]
        baseURL = "https://\(ServerLoop.urlHost(configuration.host)):\(port)"
    }

    deinit { stop() }

    public func stats() -> MockExpoStats { simulator.read(MockExpoStats()) { $0.snapshot } }

    public func stop() { simulator.stop() }
}

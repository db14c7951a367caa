import Foundation
import Simulators

/// Herald's APNs simulator in-process for one test: its own temporary directory, TLS files and provider key
/// (KEY1234567 of TEAM123456), accepted notifications recorded. What the simulator's own tests (curl against it)
/// and the HTTP/2 client's tests (a pool against it) both start from. `stop()` ends it and removes the directory.
public final class APNsSimulatorFixture: @unchecked Sendable {
    public static let topic = "com.example.app"
    public let directory: String
    public let key: MockProviderKey
    public let tls: MockTLSFiles
    /// What `server` was started with: a second simulator (another address, same port) starts from it.
    public let configuration: MockAPNsConfiguration
    public let server: MockAPNsServer
    /// One token for the whole test: ES256 signatures differ each time, and a connection that switches tokens
    /// too often gets 429 TooManyProviderTokenUpdates, as on APNs.
    public let bearer: String

    public init(faults: MockFaultScript = MockFaultScript(), extraKeys: [MockProviderKey] = [],
                _ configure: (inout MockAPNsConfiguration) -> Void = { _ in }) throws {
        directory = makeTemporaryDirectory("herald-apns-sim")
        let generated = try MockTLSFiles.generate(in: directory)
        key = try MockProviderKey.generate(keyID: "KEY1234567", teamID: "TEAM123456", directory: directory)
        var configuration = MockAPNsConfiguration()
        configuration.tls = generated
        configuration.keys = [key] + extraKeys
        configuration.faults = faults
        configuration.recordAccepted = true
        configure(&configuration)
        self.configuration = configuration
        tls = configuration.tls ?? generated
        bearer = "bearer " + (try key.makeToken())
        server = try MockAPNsServer(configuration: configuration)
    }

    public func stop() {
        server.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

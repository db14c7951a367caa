import Foundation
import HeraldTestSupport
import Simulators

extension EndToEndWorld {
    /// A `herald mock-expo` on the world's TLS taking `accessToken`, and that token in a file for an Expo app's
    /// `access_token_file`.
    func startExpo(accessToken: String, _ configure: (inout MockExpoConfiguration) -> Void = { _ in }) throws -> (server: MockExpoServer, tokenFile: String) {
        var mock = MockExpoConfiguration()
        mock.tls = tls
        mock.accessToken = accessToken
        configure(&mock)
        let server = try MockExpoServer(configuration: mock)
        let tokenFile = directory + "/expo-token"
        try Data((accessToken + "\n").utf8).write(to: URL(fileURLWithPath: tokenFile))
        return (server, tokenFile)
    }

    /// Adds the Expo app `rn` (its token in `tokenFile`) and an `expo` section pointed at `expo` to the configuration
    /// file at `config`.
    func addExpoApp(to config: String, expo: MockExpoServer, tokenFile: String, settings: [String: Any]) throws {
        var document = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: config))) as? [String: Any] ?? [:]
        document["apps"] = (document["apps"] as? [[String: Any]] ?? []) + [["name": "rn", "expo": ["access_token_file": tokenFile]]]
        document["expo"] = ["url": expo.baseURL, "ca_file": expo.caFile ?? ""].merging(settings) { _, new in new }
        try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys]).write(to: URL(fileURLWithPath: config))
    }
}

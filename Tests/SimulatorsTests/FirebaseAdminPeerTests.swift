import Foundation
import Glibc
import HeraldTestSupport
import Testing
@testable import Simulators

/// Google's own Python SDK (firebase-admin, installed by scripts/setup) against `herald mock-fcm` run as the
/// real command: the SDK signs the assertion, fetches a token from the service account's token_uri, sends,
/// and decodes the answers into its own result and exception classes. SIGTERM then stops the command with 0.
@Suite("firebase-admin against herald mock-fcm")
struct FirebaseAdminPeerTests {
    static var peerScript: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/fcm/firebase_admin_peer.py").path
    }

    /// The first `python3` that can import firebase_admin.
    static func firebasePython() -> String? { python(passing: "import firebase_admin") }

    /// The first `python3` that runs `probe` with exit 0: `HERALD_PYTHON`, then each on PATH, then Debian's.
    /// (pip may have put an SDK into a pyenv or user Python rather than /usr/bin/python3.)
    static func python(passing probe: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        var candidates = ProcessInfo.processInfo.environment["HERALD_PYTHON"].map { [$0] } ?? []
        candidates += path.split(separator: ":").map { "\($0)/python3" } + ["/usr/bin/python3"]
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            if let result = try? runProcess(candidate, ["-c", probe], seconds: 30), result.status == 0 { return candidate }
        }
        return nil
    }

    @Test func theSDKGetsAMessageNameAndItsOwnUnregisteredError() throws {
        let herald = try #require(heraldExecutable(), "the herald executable is built beside the tests")
        let python = try #require(Self.firebasePython(), "no python3 with firebase_admin: run scripts/setup (pip install firebase-admin)")
        let directory = makeTemporaryDirectory("mock-fcm-peer")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try #"{"rules":[{"tokenPrefix":"dead","fate":"unregistered"}]}"#.write(toFile: directory + "/faults.json", atomically: true, encoding: .utf8)
        let server = try ChildProcess(name: "mock-fcm", executable: herald, arguments: [
            "mock-fcm", "--generate-tls", directory, "--config", directory + "/faults.json", "--record", "--ready-file", directory + "/ready.json",
        ])
        defer { server.stop() }
        #expect(waitUntil(seconds: 30) { FileManager.default.fileExists(atPath: directory + "/ready.json") }, "ready line: \(server.output)")
        let ready = try #require(try JSONSerialization.jsonObject(with: try Data(contentsOf: URL(fileURLWithPath: directory + "/ready.json"))) as? [String: Any])
        #expect(ready["pid"] as? Int == Int(server.pid))
        #expect(ready["project_id"] as? String == "herald-mock")
        let caFile = try #require(ready["ca_file"] as? String)
        let accountFile = try #require(ready["service_account_file"] as? String)
        let port = try #require(ready["port"] as? Int)
        let account = try #require(try JSONSerialization.jsonObject(with: try Data(contentsOf: URL(fileURLWithPath: accountFile))) as? [String: Any])
        #expect(account["token_uri"] as? String == "https://127.0.0.1:\(port)/token")
        #expect(account["type"] as? String == "service_account")

        let result = try runProcess(python, [FirebaseAdminPeerTests.peerScript, "--service-account", accountFile, "--ca-file", caFile,
                                             "--base-url", "https://127.0.0.1:\(port)", "--good-token", "good-1", "--unregistered-token", "dead-1"],
                                    seconds: 90)
        #expect(result.status == 0, "peer: \(result.output) \(result.error)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], "\(result.output) \(result.error)")
        let name = try #require(answer["good_name"] as? String)
        #expect(name.hasPrefix("projects/herald-mock/messages/"))
        #expect(answer["unregistered"] as? String == "UnregisteredError")
        #expect(answer["unregistered_status"] as? Int == 404)
        #expect((answer["async_good_name"] as? String)?.hasPrefix("projects/herald-mock/messages/") == true)
        #expect(answer["async_unregistered"] as? String == "UnregisteredError")

        // What the SDK sent is what the simulator recorded (read through the control path, as another process would).
        let accepted = try curl(caFile: caFile, [("https://127.0.0.1:\(port)/_mock/accepted", "GET", [], nil)])[0]
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(accepted.body.utf8)) as? [[String: Any]])
        #expect(entries.count == 2)
        #expect(entries.first?["name"] as? String == name)
        #expect(entries.allSatisfy { $0["token"] as? String == "good-1" })
        #expect(Set(entries.compactMap { $0["transport"] as? String }) == ["http/1.1", "h2"])
        let stats = try curl(caFile: caFile, [("https://127.0.0.1:\(port)/_mock/stats", "GET", [], nil)])[0].json
        #expect(stats["tokensIssued"] as? Int == 1)
        #expect(stats["requests"] as? Int == 4)

        #expect(server.stop(grace: 10) == 0)
    }
}

import Foundation
import Glibc
import HeraldTestSupport
import Testing
@testable import Simulators

/// Huawei's own Python admin SDK (python-huawei-push-admin, installed by scripts/setup) against `herald
/// mock-hms` run as the real command: the SDK fetches a token with its client credentials from the token URL
/// it was given, sends to the push root it was given, and takes the answers into its own result and exception
/// classes. SIGTERM then stops the command with 0.
@Suite("python-huawei-push-admin against herald mock-hms")
struct HuaweiAdminPeerTests {
    static var peerScript: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/hms/hms_admin_peer.py").path
    }

    /// The first `python3` that finds the SDK's `push_admin` package (it cannot be imported bare: see the script).
    static func sdkPython() -> String? {
        FirebaseAdminPeerTests.python(passing: "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('push_admin') else 1)")
    }

    @Test func theSDKGetsSuccessPartialSuccessAndItsOwnErrors() throws {
        let herald = try #require(heraldExecutable(), "the herald executable is built beside the tests")
        let python = try #require(Self.sdkPython(), "no python3 with push_admin: run scripts/setup (pip install python-huawei-push-admin)")
        let directory = makeTemporaryDirectory("mock-hms-peer")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try #"{"invalidTokenPrefixes":["dead"]}"#.write(toFile: directory + "/faults.json", atomically: true, encoding: .utf8)
        let server = try ChildProcess(name: "mock-hms", executable: herald, arguments: [
            "mock-hms", "--generate-tls", directory, "--config", directory + "/faults.json", "--record",
            "--app", "10000001:peer-secret", "--app", "99999999:the-right-one", "--ready-file", directory + "/ready.json",
        ])
        defer { server.stop() }
        #expect(waitUntil(seconds: 30) { FileManager.default.fileExists(atPath: directory + "/ready.json") }, "ready line: \(server.output)")
        let ready = try #require(try JSONSerialization.jsonObject(with: try Data(contentsOf: URL(fileURLWithPath: directory + "/ready.json"))) as? [String: Any])
        #expect(ready["pid"] as? Int == Int(server.pid))
        #expect(ready["app_id"] as? String == "10000001")
        let caFile = try #require(ready["ca_file"] as? String)
        let secretFile = try #require(ready["client_secret_file"] as? String)
        #expect(try String(contentsOfFile: secretFile, encoding: .utf8) == "peer-secret")
        let port = try #require(ready["port"] as? Int)
        let base = "https://127.0.0.1:\(port)"
        #expect(ready["token_url"] as? String == base + "/oauth2/v3/token")
        #expect(ready["send_url"] as? String == base + "/v1/10000001/messages:send")

        let result = try runProcess(python, [Self.peerScript, "--app-id", "10000001", "--client-secret-file", secretFile, "--ca-file", caFile,
                                             "--base-url", base, "--token-url", base + "/oauth2/v3/token",
                                             "--good-token", "good-1", "--bad-token", "dead-1"], seconds: 90)
        #expect(result.status == 0, "peer: \(result.output) \(result.error)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], "\(result.output) \(result.error)")
        let good = try #require(answer["good"] as? [String: Any])
        #expect(good["code"] as? String == "80000000")
        #expect((answer["partial"] as? [String: Any])?["code"] as? String == "80100000")
        let bad = try #require(answer["bad"] as? [String: Any])
        #expect(bad["error"] as? String == "ApiCallError")
        #expect((bad["message"] as? String)?.contains("400") == true)
        #expect((answer["wrong_secret"] as? [String: Any])?["error"] as? String == "ApiCallError")

        // What the SDK sent is what the simulator recorded (read through the control path, as another process would).
        let accepted = try curl(caFile: caFile, [(base + "/_mock/accepted", "GET", [], nil)])[0]
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(accepted.body.utf8)) as? [[String: Any]])
        #expect(entries.map { $0["code"] as? String } == ["80000000", "80100000", "80300007"])
        #expect(entries.first?["request_id"] as? String == good["request_id"] as? String)
        #expect(entries.first?["tokens"] as? [String] == ["good-1"])
        #expect(entries.allSatisfy { $0["transport"] as? String == "http/1.1" && $0["app"] as? String == "10000001" })
        let message = try #require(try JSONSerialization.jsonObject(with: Data(((entries.first?["message"] as? String) ?? "").utf8)) as? [String: Any])
        #expect(message["data"] as? String == #"{"k":"v"}"#)
        #expect((message["android"] as? [String: Any])?["urgency"] as? String == "HIGH")
        let stats = try curl(caFile: caFile, [(base + "/_mock/stats", "GET", [], nil)])[0].json
        #expect(stats["tokensIssued"] as? Int == 1)
        #expect(stats["tokenRequests"] as? Int == 2)
        #expect(stats["requests"] as? Int == 3)

        #expect(server.stop(grace: 10) == 0)
    }
}

import Foundation
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEnd {
    /// `herald channels` and broadcast jobs through `herald enqueue`, as a user runs them, where no APNs is needed:
    /// usage errors, calls refused locally, an unreachable host, and what enqueue lets through. (Talking to the
    /// simulator is BroadcastRun's part.)
    @Suite struct ChannelsCommand {
        static func herald() throws -> String {
            guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
            return herald
        }

        /// A configuration with one token-auth app whose channel host is a closed port.
        static func config(in directory: String) throws -> String {
            let key = try MockProviderKey.generate(keyID: "KEYCHAN001", teamID: "TEAMCHAN01", directory: directory)
            let config: [String: Any] = [
                "apns": ["channels_production_url": "https://127.0.0.1:1", "channels_sandbox_url": "https://127.0.0.1:1", "connect_timeout_ms": 2000],
                "apps": [["name": "scores", "bundle_id": "com.example.scores",
                          "token": ["team_id": "TEAMCHAN01", "key_id": "KEYCHAN001", "key_file": key.privateKeyFile ?? ""]]],
            ]
            let path = directory + "/herald.json"
            try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: path))
            return path
        }

        static func json(_ output: String) -> [String: Any] {
            let line = output.split(separator: "\n").last.map(String.init) ?? ""
            return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
        }

        @Test func usageErrorsLocalRefusalsAndAnUnreachableHost() throws {
            let herald = try Self.herald()
            let directory = makeTemporaryDirectory("herald-channels")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let config = try Self.config(in: directory)

            let help = try HeraldRun.run(herald: herald, ["channels", "--help"])
            #expect(help.status == 0 && help.output.contains("USAGE: herald channels") && help.output.contains("create|get|delete|list"), "\(help.output)")
            for words in [["channels"], ["channels", "rename"], ["channels", "get"], ["channels", "create", "--storage", "forever"],
                          ["channels", "list", "--environment", "staging"]] {
                let run = try HeraldRun.run(herald: herald, words + ["--config", config])
                #expect(run.status == 64, "\(words): exit \(String(describing: run.status)) \(run.output)")
            }

            // Refused before anything is sent, with the reason Apple would give.
            let bad = try HeraldRun.run(herald: herald, ["channels", "delete", "--channel", "no good!", "--config", config])
            #expect(bad.status == 65, "\(bad.output)")
            #expect(Self.json(bad.output)["reason"] as? String == "BadChannelId", "\(bad.output)")
            let badID = try HeraldRun.run(herald: herald, ["channels", "list", "--request-id", "nope", "--config", config])
            #expect(badID.status == 65 && Self.json(badID.output)["reason"] as? String == "BadMessageId", "\(badID.output)")

            // Nobody listens: a failed outcome and exit 1, within the deadline (no hang).
            let unreachable = try HeraldRun.run(herald: herald, ["channels", "list", "--timeout", "3000", "--config", config], seconds: 30)
            #expect(unreachable.status == 1, "\(unreachable.output)")
            #expect(Self.json(unreachable.output)["outcome"] as? String == "failed", "\(unreachable.output)")
        }

        @Test func enqueueChecksBroadcastJobsByTheBroadcastRules() throws {
            let herald = try Self.herald()
            let redis = try RedisServer()
            let directory = makeTemporaryDirectory("herald-channels")
            defer { redis.stop(); try? FileManager.default.removeItem(atPath: directory) }
            let channel = "dHN0LXNyY2gtY2hubA=="
            let big = String(repeating: "x", count: 5000)
            let lines = [
                #"{"channel":"\#(channel)","payload":{"aps":{"event":"update"},"x":"\#(big)"}}"#,  // over 4096, within 5120
                #"{"channel":"\#(channel)","push_type":"alert","payload":{"aps":{}}}"#,
                #"{"channel":"not base64!","payload":{"aps":{}}}"#,
                #"{"channel":"\#(channel)","token":"ab","payload":{"aps":{}}}"#,
                #"{"channel":"\#(channel)","payload":{"aps":{},"x":"\#(big)\#(big)"}}"#,
            ]
            let file = directory + "/jobs.jsonl"
            try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            let run = try HeraldRun.run(herald: herald, ["enqueue", "--redis", redis.url, "--file", file])
            #expect(run.status == 65, "\(run.output)")
            #expect(!run.output.contains("line 1:"), "\(run.output)")
            #expect(run.output.contains("line 2: InvalidPushType"), "\(run.output)")
            #expect(run.output.contains("line 3: bad_channel"), "\(run.output)")
            #expect(run.output.contains("line 4: token_and_channel"), "\(run.output)")
            #expect(run.output.contains("line 5: PayloadTooLarge"), "\(run.output)")
            #expect(run.output.contains("\"pushed\":1"), "\(run.output)")
        }
    }
}

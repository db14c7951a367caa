import Foundation
import HeraldTestSupport
import Simulators
import Testing

/// `herald mock-expo` checked by code nobody here wrote: Expo's Python server SDK (`exponent-server-sdk`, pinned by
/// scripts/setup) sends every fate and reads the receipts, pointed at the simulator by its base URL; curl sends
/// Expo's documented request shapes (one message, a list with a `to` list, a gzip body).
@Suite("Expo SDK and curl against herald mock-expo")
struct ExpoSDKPeerTests {
    final class Fixture {
        let directory = makeTemporaryDirectory("expo-peer")
        let server: MockExpoServer
        let tokenFile: String

        init() throws {
            var configuration = MockExpoConfiguration()
            configuration.tls = try MockTLSFiles.generate(in: directory)
            configuration.accessToken = "peer-token"
            configuration.receiptLateMs = 1500
            server = try MockExpoServer(configuration: configuration)
            tokenFile = directory + "/token"
            try Data("peer-token\n".utf8).write(to: URL(fileURLWithPath: tokenFile))
        }

        deinit {
            server.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// Runs `executable` and returns its standard output; the test fails on a non-zero exit.
        /// requests takes its CA from the environment before a session's `verify` (its documented precedence).
        func run(_ executable: String, _ arguments: [String]) throws -> String {
            let process = try ChildProcess(name: (executable as NSString).lastPathComponent, executable: executable, arguments: arguments,
                                           environment: ["REQUESTS_CA_BUNDLE": server.caFile ?? ""])
            let status = process.waitForExit(seconds: 60)
            #expect(status == 0, "\(executable) \(arguments.joined(separator: " ")): \(process.output)")
            return process.output
        }
    }

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures").path

    @Test func expoSDKSendsEveryFateAndReadsTheReceipts() throws {
        let fixture = try Fixture()
        let output = try fixture.run("/usr/bin/env", ["python3", Self.fixtures + "/expo_sdk_peer.py", fixture.server.baseURL,
                                                      fixture.server.caFile ?? "", fixture.tokenFile, "1.8"])
        let line = try #require(output.split(separator: "\n").last(where: { $0.hasPrefix("{") }), "\(output)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let tickets = try #require(answer["tickets"] as? [String: String])
        #expect(tickets == ["ok": "ok", "gone": "DeviceNotRegistered", "rate": "MessageRateExceeded", "big": "MessageTooBig",
                            "rgone": "ok", "rerr": "ok", "late": "ok", "never": "ok"])
        let receipts = try #require(answer["receipts"] as? [String: Any])
        #expect(receipts["ok"] as? String == "ok" && receipts["late"] as? String == "ok")
        #expect(receipts["rgone"] as? String == "DeviceNotRegistered" && receipts["rerr"] as? String == "InvalidCredentials")
        #expect(receipts["never"] is NSNull, "a never- token's receipt never comes: \(receipts)")
        #expect(answer["wrong_token"] as? String != "accepted")
        #expect(fixture.server.stats().unauthorized == 1)
    }

    @Test func curlSendsExposDocumentedShapesGzipIncluded() throws {
        let fixture = try Fixture()
        let server = fixture.server
        let common = ["-s", "--cacert", server.caFile ?? "", "-H", "Authorization: Bearer peer-token", "-H", "Content-Type: application/json"]
        let single = try fixture.run("/usr/bin/curl", common + [server.baseURL + "/--/api/v2/push/send",
                                                               "-d", #"{"to":"ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]","title":"hello","body":"world"}"#])
        let one = try #require(try JSONSerialization.jsonObject(with: Data(single.utf8)) as? [String: Any])
        #expect((one["data"] as? [String: Any])?["status"] as? String == "ok", "\(single)")
        let list = try fixture.run("/usr/bin/curl", common + [server.baseURL + "/--/api/v2/push/send", "-d",
            #"[{"to":"ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]","sound":"default","body":"Hello world!"},{"to":["ExpoPushToken[yyy]","ExponentPushToken[gone-z]"],"body":"You've got mail"}]"#])
        let answers = try #require((try JSONSerialization.jsonObject(with: Data(list.utf8)) as? [String: Any])?["data"] as? [[String: Any]], "\(list)")
        #expect(answers.map { $0["status"] as? String } == ["ok", "ok", "error"])
        // A gzip body, as Expo's SDKs send a large request.
        let body = fixture.directory + "/body.json"
        let messages = (0..<50).map { #"{"to":"ExponentPushToken[ok-\#($0)]","body":"\#(String(repeating: "b", count: 100))"}"# }
        try Data(("[" + messages.joined(separator: ",") + "]").utf8).write(to: URL(fileURLWithPath: body))
        _ = try fixture.run("/usr/bin/gzip", ["-kf", body])
        let zipped = try fixture.run("/usr/bin/curl", common + ["-H", "Content-Encoding: gzip", "--data-binary", "@" + body + ".gz",
                                                               server.baseURL + "/--/api/v2/push/send"])
        let tickets = try #require((try JSONSerialization.jsonObject(with: Data(zipped.utf8)) as? [String: Any])?["data"] as? [[String: Any]], "\(zipped)")
        #expect(tickets.count == 50 && tickets.allSatisfy { $0["status"] as? String == "ok" })
        #expect(server.stats().gzipRequests == 1)
        let ids = tickets.compactMap { $0["id"] as? String }
        let receipts = try fixture.run("/usr/bin/curl", common + [server.baseURL + "/--/api/v2/push/getReceipts", "-d",
                                                                 String(decoding: try JSONSerialization.data(withJSONObject: ["ids": ids]), as: UTF8.self)])
        let data = try #require((try JSONSerialization.jsonObject(with: Data(receipts.utf8)) as? [String: Any])?["data"] as? [String: Any], "\(receipts)")
        #expect(data.count == 50)
    }
}

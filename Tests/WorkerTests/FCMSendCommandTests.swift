import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import Testing

extension EndToEnd {
    /// `herald send --platform fcm` against the FCM simulator, as a user runs it.
    @Suite struct FCMSendCommand {
        @Test func sendsOneFCMMessageAndReportsFCMsAnswer() throws {
            guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
            ignoreBrokenPipes()
            let directory = makeTemporaryDirectory("herald-fcm-send")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var configuration = MockFCMConfiguration()
            configuration.tls = try MockTLSFiles.generate(in: directory)
            configuration.recordAccepted = true
            configuration.faults = MockFCMFaultScript(rules: [MockFCMRule(fate: .unregistered, tokenPrefix: "gone-")])
            let server = try MockFCMServer(configuration: configuration)
            defer { server.stop() }
            let base = ["send", "--platform", "fcm", "--service-account", server.serviceAccountFile, "--url", server.baseURL,
                        "--ca-file", server.caFile!]
            func json(_ output: String) -> [String: Any] {
                let line = output.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
                return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
            }

            let message = #"{"token":"phone-1:APA91b","notification":{"title":"hi","body":"there"},"data":{"n":"1"}}"#
            let ok = try HeraldRun.run(herald: herald, base + ["--message", message])
            #expect(ok.status == 0, "\(ok.output)")
            let answer = json(ok.output)
            #expect(answer["outcome"] as? String == "delivered" && answer["status"] as? Int == 200)
            #expect((answer["name"] as? String)?.hasPrefix("projects/\(server.projectID)/messages/") == true, "\(ok.output)")
            #expect(server.acceptedMessages().map(\.message) == [message], "the message reached FCM byte for byte")
            #expect(!ok.output.contains("ya29."), "the access token was printed")

            let gone = try HeraldRun.run(herald: herald, base + ["--message", #"{"token":"gone-2:APA91b"}"#])
            #expect(gone.status == 1 && json(gone.output)["reason"] as? String == "UNREGISTERED", "\(gone.output)")
            let refused = try HeraldRun.run(herald: herald, base + ["--message", #"{"token":"t","data":{"n":1}}"#])
            #expect(refused.status == 65 && json(refused.output)["reason"] as? String == "INVALID_ARGUMENT", "\(refused.output)")
            #expect(server.stats().requests == 2, "the locally refused message was not sent")
        }
    }
}

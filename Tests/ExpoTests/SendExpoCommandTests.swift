import Foundation
import HeraldTestSupport
import Simulators
import Testing

/// `herald send --platform expo` as an operator runs it, against the simulator: a ticket for a good token, a ticket
/// error for a gone one, a local refusal for a token that is not Expo's.
@Suite("herald send --platform expo")
struct SendExpoCommandTests {
    @Test func aTicketForAGoodTokenTheErrorForAGoneOneAndABadTokenRefusedLocally() throws {
        let herald = try #require(heraldExecutable(), "the herald executable is built beside the tests")
        let fixture = try ExpoSDKPeerTests.Fixture()
        let server = fixture.server
        let base = ["send", "--platform", "expo", "--access-token-file", fixture.tokenFile, "--url", server.baseURL, "--ca-file", server.caFile ?? "",
                    "--payload", #"{"title":"hi","body":"from the cli","data":{"k":1}}"#]
        func run(_ token: String) throws -> (Int32?, [String: Any]) {
            let process = try ChildProcess(name: "send-expo", executable: herald, arguments: base + ["--token", token])
            let status = process.waitForExit(seconds: 30)
            let line = process.output.split(separator: "\n").last(where: { $0.hasPrefix("{") }) ?? ""
            return (status, (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? ["output": process.output])
        }
        let (sent, answer) = try run("ExponentPushToken[ok-cli]")
        #expect(sent == 0 && answer["outcome"] as? String == "accepted" && !((answer["ticket"] as? String) ?? "").isEmpty, "\(answer)")
        let (gone, refused) = try run("ExponentPushToken[gone-cli]")
        #expect(gone == 1 && refused["reason"] as? String == "DeviceNotRegistered", "\(refused)")
        let (bad, local) = try run("7b1f00aa")
        #expect(bad == 65 && (local["reason"] as? String ?? "").hasPrefix("bad_expo_token"), "\(local)")
        #expect(server.stats().messages == 2, "the bad token never reached the service")
        #expect(!(answer.description.contains("peer-token")), "the access token is never printed")
    }
}

import Foundation
import HeraldTestSupport
import Testing

/// `herald send --platform harmony` against the simulator: the one-message tool signs its JWT from the key file and
/// prints Push Kit's answer; a message Push Kit would refuse is refused locally with its code (exit 65).
@Suite(.serialized) struct SendHarmonyTests {
    func send(_ fixture: HarmonyFixture, _ extra: [String]) throws -> (status: Int32, json: [String: Any]) {
        let herald = try #require(heraldExecutable(), "build herald first")
        let child = try ChildProcess(name: "herald-send-harmony", executable: herald, arguments: [
            "send", "--platform", "harmony", "--service-account", fixture.keyFile, "--url", fixture.server.baseURL, "--ca-file", fixture.caFile,
        ] + extra, errorsApart: true)
        guard let status = child.waitForExit(seconds: 60) else { _ = child.stop(); throw HarmonyPeerFailure(description: "herald send timed out") }
        let json = (try? JSONSerialization.jsonObject(with: Data(child.output.utf8)) as? [String: Any]) ?? [:]
        return (status, json)
    }

    @Test func sendsOneMessageAndRefusesWhatPushKitWould() throws {
        let fixture = try HarmonyFixture()
        let payload = #"{"notification":{"category":"MARKETING","title":"hi","body":"there","clickAction":{"actionType":0}}}"#
        let sent = try send(fixture, ["--token", "MAMz-send", "--push-type", "background", "--payload", payload, "--push-options", #"{"ttl":30}"#])
        #expect(sent.status == 0 && sent.json["code"] as? String == "80000000" && sent.json["outcome"] as? String == "delivered", "\(sent)")
        let accepted = try #require(fixture.server.acceptedMessages().first)
        #expect(accepted.payload == payload && accepted.pushType == 6 && accepted.pushOptions == #"{"ttl":30}"#)
        let refused = try send(fixture, ["--token", "t", "--payload", payload, "--push-options", #"{"ttl":9999999}"#])
        #expect(refused.status == 65 && (refused.json["reason"] as? String ?? "").hasPrefix("80100001 "), "\(refused)")
    }
}

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

    /// `herald check-config` reads the key file and signs a JWT with it; a key that is no RSA key fails it.
    @Test func checkConfigProvesTheKeySigns() throws {
        let fixture = try HarmonyFixture()
        let herald = try #require(heraldExecutable(), "build herald first")
        let bad = fixture.directory + "/bad.json"
        try Data(#"{"project_id":"1","key_id":"k","sub_account":"s","private_key":"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}"#.utf8)
            .write(to: URL(fileURLWithPath: bad))
        for (file, ok) in [(fixture.keyFile, true), (bad, false)] {
            let config = fixture.directory + "/herald-\(ok).json"
            let document: [String: Any] = ["redis": ["url": "redis://127.0.0.1:1/0"], "harmony": ["url": fixture.server.baseURL, "ca_file": fixture.caFile],
                                           "apps": [["name": "harmony", "harmony": ["service_account_file": file]]]]
            try JSONSerialization.data(withJSONObject: document).write(to: URL(fileURLWithPath: config))
            let child = try ChildProcess(name: "herald-check-config", executable: herald, arguments: ["check-config", "--config", config, "--skip-redis"])
            guard let status = child.waitForExit(seconds: 60) else { _ = child.stop(); Issue.record("check-config timed out"); return }
            #expect((status == 0) == ok, "\(child.output)")
            if ok { #expect(child.output.contains("(harmony, project \(fixture.server.account.projectID), key \(fixture.server.account.keyID)): key read, PS256 JWT signed"), "\(child.output)") }
            #expect(!child.output.contains("PRIVATE KEY"))
        }
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

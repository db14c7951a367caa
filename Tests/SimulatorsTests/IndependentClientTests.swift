import Foundation
import HeraldTestSupport
import Testing
@testable import Simulators

/// Debian's python3-aioapns is a real APNs client: with the key the simulator wrote out it must get 200,
/// with certificate auth too, and the error reasons it decodes must be Apple's.
@Suite("aioapns and certificate auth")
struct IndependentClientTests {
    static let script = #"""
import asyncio, json, ssl, sys
import aioapns.connection as c
from aioapns import APNs, NotificationRequest, PushType
args = json.load(open(sys.argv[1]))
for cls in (c.APNsTLSClientProtocol, c.APNsProductionClientProtocol, c.APNsDevelopmentClientProtocol):
    cls.APNS_SERVER = "127.0.0.1"
    cls.APNS_PORT = args["port"]
ctx = ssl.create_default_context(cafile=args["ca"])
ctx.set_alpn_protocols(["h2"])
async def main():
    if args.get("cert"):
        ctx.load_cert_chain(args["cert"], args["cert_key"])
        apns = APNs(client_cert=args["cert"], topic=args["topic"], ssl_context=ctx, max_connection_attempts=1)
    else:
        apns = APNs(key=args["key"], key_id=args["key_id"], team_id=args["team_id"], topic=args["topic"],
                    ssl_context=ctx, max_connection_attempts=1)
    results = []
    for token in args["tokens"]:
        request = NotificationRequest(device_token=token, message={"aps": {"alert": "hello"}}, push_type=PushType.ALERT)
        r = await asyncio.wait_for(apns.send_notification(request), 10)
        results.append({"status": str(r.status), "description": r.description, "id": r.notification_id,
                        "sent_id": request.notification_id})
    print(json.dumps(results))
asyncio.run(main())
"""#

    struct Result: Decodable {
        let status: String
        let description: String?
        let id: String
        let sent_id: String
    }

    static func run(_ fixture: Fixture, tokens: [String], key: MockProviderKey? = nil, certificate: (String, String)? = nil) throws -> [Result] {
        let directory = makeTemporaryDirectory("herald-sim-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try script.write(toFile: directory + "/client.py", atomically: true, encoding: .utf8)
        let signing = key ?? fixture.key
        var arguments: [String: Any] = ["port": fixture.server.port, "ca": fixture.tls.caFile!, "topic": Fixture.topic, "tokens": tokens,
                                        "key": signing.privateKeyFile ?? "", "key_id": signing.keyID, "team_id": signing.teamID]
        if let certificate {
            // aioapns loads one PEM with certificate and key together.
            let combined = directory + "/client-combined.pem"
            let text = (try String(contentsOfFile: certificate.0, encoding: .utf8)) + (try String(contentsOfFile: certificate.1, encoding: .utf8))
            try text.write(toFile: combined, atomically: true, encoding: .utf8)
            arguments["cert"] = combined
            arguments["cert_key"] = combined
        }
        try JSONSerialization.data(withJSONObject: arguments).write(to: URL(fileURLWithPath: directory + "/args.json"))
        let result = try runProcess("/usr/bin/python3", [directory + "/client.py", directory + "/args.json"], seconds: 40)
        guard result.status == 0 else { throw ProcessError.failed("aioapns exit \(result.status): \(result.error)") }
        return try JSONDecoder().decode([Result].self, from: Data(result.output.utf8))
    }

    @Test func aioapnsDeliversWithTheGeneratedKey() throws {
        let fixture = try Fixture(faults: MockFaultScript(rules: [MockFaultRule(fate: .unregistered, tokenPrefix: "dead")]))
        defer { fixture.stop() }
        let results = try Self.run(fixture, tokens: [Fixture.token, Fixture.token, "deadbeef"])
        #expect(results.map(\.status) == ["200", "200", "410"])
        #expect(results[0].id == results[0].sent_id)
        #expect(results[2].description == "Unregistered")
        #expect(fixture.server.acceptedNotifications().count == 2)
        // aioapns makes one token per connection: verified once, reused afterwards.
        #expect(fixture.server.stats().tokenVerifications == 1)
    }

    @Test func aioapnsWithAWrongKeyGetsInvalidProviderToken() throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let directory = makeTemporaryDirectory("herald-sim-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let impostor = try MockProviderKey.generate(keyID: fixture.key.keyID, teamID: fixture.key.teamID, directory: directory)
        let results = try Self.run(fixture, tokens: [Fixture.token], key: impostor)
        #expect(results.map(\.status) == ["403"])
        #expect(results.first?.description == "InvalidProviderToken")
    }

    @Test func certificateAuthNeedsNoTokenAndChecksTheTopic() throws {
        let directory = makeTemporaryDirectory("herald-sim-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tls = try MockTLSFiles.generate(in: directory)
        let fixture = try Fixture { $0.tls = tls; $0.clientCAFile = tls.caFile }
        defer { fixture.stop() }
        let client = try tls.issueClientCertificate(bundleID: Fixture.topic, name: "client", in: directory)
        let viaPython = try Self.run(fixture, tokens: [Fixture.token], certificate: client)
        #expect(viaPython.map(\.status) == ["200"])
        let certArgs = ["--cacert", tls.caFile!, "--cert", client.certificateFile, "--key", client.keyFile]
        // curl with a client certificate; the fixture's CA file is the same one.
        let answers = try curl(fixture, [
            (fixture.deviceURL(), "POST", ["apns-push-type: alert", "apns-topic: com.example.app"], #"{"aps":{}}"#),
            (fixture.deviceURL(), "POST", ["apns-push-type: voip", "apns-topic: com.example.app.voip"], #"{"aps":{}}"#),
            (fixture.deviceURL(), "POST", ["apns-push-type: alert"], #"{"aps":{}}"#),
            (fixture.deviceURL(), "POST", ["apns-push-type: alert", "apns-topic: com.example.other"], #"{"aps":{}}"#),
        ], extra: certArgs)
        #expect(answers.map(\.status) == [200, 200, 200, 403])
        #expect(answers.last?.reason == "TopicMismatch")
        // Without a certificate the same request needs a token.
        #expect(try push(fixture, headers: ["apns-push-type: alert", "apns-topic: com.example.app"]).reason == "MissingProviderToken")
    }
}

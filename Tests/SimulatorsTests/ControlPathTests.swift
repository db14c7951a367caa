import Foundation
import HeraldTestSupport
import Testing
@testable import Simulators

/// The `/_mock/...` control paths (not part of APNs), the accepted log file and the command's flag parsing.
@Suite("control paths and command")
struct ControlPathTests {
    @Test func statsConfigAndResetOverHTTP() throws {
        let directory = makeTemporaryDirectory("herald-sim-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let logFile = directory + "/accepted.jsonl"
        let fixture = try Fixture { $0.logFile = logFile; $0.logPayloads = true }
        defer { fixture.stop() }
        #expect(try push(fixture).status == 200)
        #expect(try push(fixture, token: "dead00").status == 200)
        let stats = try curl(fixture, [(fixture.url + "/_mock/stats", "GET", [], nil)])[0]
        #expect(stats.status == 200)
        let decoded = try JSONDecoder().decode(MockAPNsStats.self, from: Data(stats.body.utf8))
        #expect(decoded.accepted == 2)
        #expect(decoded.requests == 2)
        #expect(decoded.connectionsAccepted >= 2)

        let config = #"{"rules":[{"tokenPrefix":"dead","fate":"unregistered","timestamp":5}]}"#
        let loaded = try curl(fixture, [(fixture.url + "/_mock/config", "POST", ["content-type: application/json"], config)])[0]
        #expect(loaded.status == 200)
        let gone = try push(fixture, token: "dead00")
        #expect(gone.status == 410)
        #expect(gone.body == #"{"reason":"Unregistered","timestamp":5}"#)
        #expect(fixture.server.faults().rules.count == 1)

        let bad = try curl(fixture, [(fixture.url + "/_mock/config", "POST", [], #"{"rules":[{"fate":"nope"}]}"#)])[0]
        #expect(bad.status == 400)
        #expect(fixture.server.faults().rules.count == 1)

        let lines = try String(contentsOfFile: logFile, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
        let first = try JSONDecoder().decode(MockAcceptedNotification.self, from: Data(lines[0].utf8))
        #expect(first.token == Fixture.token)
        #expect(first.topic == Fixture.topic)
        #expect(first.payload == #"{"aps":{"alert":"hi"}}"#)

        #expect(try curl(fixture, [(fixture.url + "/_mock/reset", "POST", [], nil)])[0].status == 200)
        let reset = fixture.server.stats()
        #expect(reset.requests == 0)
        #expect(fixture.server.acceptedNotifications().isEmpty)
    }

    @Test func silenceAfterRequestsStopsAnswering() throws {
        let fixture = try Fixture(faults: MockFaultScript(silenceAfterRequests: 1))
        defer { fixture.stop() }
        let report = try H2Peer.run(fixture, [try H2Peer.push(fixture), try H2Peer.push(fixture, timeout: 0.5)])
        #expect(report.stream(1)?.status == 200)
        #expect(report.timeouts == [3])
    }

    @Test func commandUsage() throws {
        #expect(MockAPNsCommand.main(arguments: ["--bogus"]) == 64)
        #expect(MockAPNsCommand.main(arguments: ["--port"]) == 64)
        #expect(MockAPNsCommand.main(arguments: ["--port", "99999"]) == 64)
        #expect(MockAPNsCommand.main(arguments: ["--cert", "a.pem"]) == 64)
        #expect(MockAPNsCommand.main(arguments: ["mock-apns", "--environment", "mars"]) == 64)
        let options = try MockAPNsOptions.parse(["--port=8443", "--topics", "a.b, c.d", "--max-streams", "5", "--sandbox", "--no-auth"])
        #expect(options.server.port == 8443)
        #expect(options.topics == ["a.b", "c.d"])
        #expect(options.maxStreams == 5)
        #expect(options.sandbox && options.noAuth)
    }

    @Test func jsonShape() {
        #expect(JSONShape.isObject(Array(#"{"aps":{"alert":{"title":"a\"b","n":[1,-2.5e3,true,false,null]}}}"#.utf8)))
        #expect(JSONShape.isObject(Array(" { } ".utf8)))
        #expect(!JSONShape.isObject(Array("[]".utf8)))
        #expect(!JSONShape.isObject(Array(#"{"a":01}"#.utf8)))
        #expect(!JSONShape.isObject(Array(#"{"a":1,}"#.utf8)))
        #expect(!JSONShape.isObject(Array(#"{"a":1} x"#.utf8)))
        #expect(!JSONShape.isObject(Array(#"{"a":"\x"}"#.utf8)))
        let long = String(repeating: "abcdefgh", count: 20)
        #expect(JSONShape.isObject(Array(#"{"a":"\#(long)\"\#(long)\\\#(long)\u00e9"}"#.utf8)))
        #expect(!JSONShape.isObject(Array("{\"a\":\"\(long)\u{01}\(long)\"}".utf8)))
        #expect(!JSONShape.isObject(Array("{\"a\":\"\(long)".utf8)))
    }

    /// Payloads written by JSONSerialization are objects; every proper prefix of one is not.
    @Test func jsonShapeAgreesWithFoundation() throws {
        var random = SeededRandom(seed: 99)
        let alphabet = Array("abcXYZ 0123456789\"\\/\u{01}\u{1f}\té€😀-_.:,{}[]")
        func text() -> String { String((0..<random.between(0, 40)).map { _ in alphabet[random.between(0, alphabet.count - 1)] }) }
        for _ in 0..<200 {
            var object: [String: Any] = [:]
            for _ in 0..<random.between(0, 6) {
                switch random.between(0, 4) {
                case 0: object[text()] = text()
                case 1: object[text()] = random.between(-1_000_000, 1_000_000)
                case 2: object[text()] = [text(), 1.5, true, NSNull()] as [Any]
                case 3: object[text()] = ["aps": ["alert": text(), "badge": 3]]
                default: object[text()] = false
                }
            }
            let bytes = [UInt8](try JSONSerialization.data(withJSONObject: object))
            #expect(JSONShape.isObject(bytes), "\(String(decoding: bytes, as: UTF8.self))")
            let cut = random.between(0, bytes.count - 1)
            #expect(!JSONShape.isObject(Array(bytes[0..<cut])), "\(String(decoding: bytes[0..<cut], as: UTF8.self))")
        }
    }
}

import Foundation
import HeraldTestSupport
import Testing
@testable import Simulators

/// The FCM simulator's HTTP/1.1 side at the byte level, with Python's ssl module as the client: pipelined
/// requests answered in order, no ALPN at all meaning HTTP/1.1, and garbage answered 400 without harm.
@Suite struct FCMWireTests {
    static let script = #"""
import json, socket, ssl, sys
args = json.load(open(sys.argv[1]))
def exchange(payload, alpn):
    ctx = ssl.create_default_context(cafile=args["ca"])
    if alpn:
        ctx.set_alpn_protocols(alpn)
    with socket.create_connection(("127.0.0.1", args["port"]), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(payload.encode())
            data = b""
            while True:
                try:
                    chunk = tls.recv(65536)
                except (ssl.SSLError, ConnectionResetError):
                    break
                if not chunk:
                    break
                data += chunk
            return data.decode("utf-8", "replace")
body = '{"to":"x"}'
pipelined = ("GET /_mock/stats HTTP/1.1\r\nHost: x\r\n\r\n"
             "POST /fcm/send HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
             "POST /v1/projects/herald-mock/messages:send HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}") % (len(body), body)
out = {
    "pipelined": exchange(pipelined, ["http/1.1"]),
    "no_alpn": exchange("POST /fcm/send HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", None),
    "garbage": exchange("\x01\x02 what is this\r\n\r\nmore", ["http/1.1"]),
    "bad_length": exchange("POST /token HTTP/1.1\r\nContent-Length: -4\r\n\r\n", ["http/1.1"]),
    "chunked": exchange("POST /token HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", ["http/1.1"]),
}
print(json.dumps(out))
"""#

    @Test func pipelinedRequestsAreAnsweredInOrderAndGarbageGetsA400() throws {
        let fixture = try FCMFixture()
        defer { fixture.stop() }
        let directory = makeTemporaryDirectory("herald-sim-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.script.write(toFile: directory + "/wire.py", atomically: true, encoding: .utf8)
        let args = try JSONSerialization.data(withJSONObject: ["port": fixture.server.port, "ca": fixture.caFile])
        try args.write(to: URL(fileURLWithPath: directory + "/args.json"))
        let result = try runProcess("/usr/bin/python3", [directory + "/wire.py", directory + "/args.json"], seconds: 40)
        #expect(result.status == 0, "\(result.error)")
        let out = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: String], "\(result.output)")

        let pipelined = try #require(out["pipelined"])
        // Bodies have no trailing newline, so a status line may follow one directly: find them anywhere.
        let regex = try NSRegularExpression(pattern: "HTTP/1\\.1 [0-9]{3} [A-Za-z ]+(?=\r\n)")
        let statusLines = regex.matches(in: pipelined, range: NSRange(pipelined.startIndex..., in: pipelined))
            .map { String(pipelined[Range($0.range, in: pipelined)!]) }
        #expect(statusLines == ["HTTP/1.1 200 OK", "HTTP/1.1 404 Not Found", "HTTP/1.1 401 Unauthorized"])
        #expect(pipelined.contains("connection: close"))
        #expect(out["no_alpn"]?.hasPrefix("HTTP/1.1 404 Not Found") == true)
        #expect(out["garbage"]?.hasPrefix("HTTP/1.1 400 Bad Request") == true)
        #expect(out["bad_length"]?.hasPrefix("HTTP/1.1 400 Bad Request") == true)
        #expect(out["chunked"]?.hasPrefix("HTTP/1.1 411 Length Required") == true)

        // Still serving, and the byte-level clients counted as HTTP/1.1 connections.
        #expect(try fixture.send(FCMFixture.message(), bearer: try fixture.accessToken()).status == 200)
        #expect(fixture.server.stats().http1Connections >= 6)
        #expect(fixture.server.stats().connectionsOpen <= 1)
    }
}

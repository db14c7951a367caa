import Foundation
import HeraldTestSupport
import Testing
@testable import Simulators

/// A hand-made HTTP/2 peer in Debian's python3-h2, for what curl cannot show: SETTINGS values as they change,
/// RST_STREAM codes, GOAWAY's last-stream-id and debug data, silence and abrupt closes.
struct H2Peer {
    struct Request: Encodable {
        var headers: [[String]]
        var body: String
        /// Wait for this stream's end before sending the next request.
        var wait: Bool = true
        /// Pause before sending (seconds).
        var pause: Double = 0
        /// How long to wait for this stream's answer (nil: the run's timeout).
        var timeout: Double? = nil
    }

    struct Stream: Decodable {
        var status: Int?
        var headers: [String: String]?
        var body: String?
        var reset: Int?
    }

    struct GoAway: Decodable {
        var last_stream_id: Int
        var error_code: Int
        var data: String
    }

    struct Report: Decodable {
        var settings: [Int]
        var streams: [String: Stream]
        var goaway: GoAway?
        var closed: Bool
        var timeouts: [Int]

        func stream(_ id: Int) -> Stream? { streams[String(id)] }
    }

    static let script = #"""
import json, socket, ssl, sys, time
import h2.config, h2.connection, h2.events, h2.exceptions, h2.settings
args = json.load(open(sys.argv[1]))
ctx = ssl.create_default_context(cafile=args["ca"])
ctx.set_alpn_protocols(["h2"])
raw = socket.create_connection(("127.0.0.1", args["port"]), timeout=5)
sock = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
conn.initiate_connection()
sock.sendall(conn.data_to_send())
report = {"settings": [], "streams": {}, "goaway": None, "closed": False, "timeouts": []}
done = set()
def pump(until, deadline):
    while not until() and time.time() < deadline and not report["closed"]:
        sock.settimeout(max(0.01, deadline - time.time()))
        try:
            data = sock.recv(65536)
        except socket.timeout:
            return
        except (ssl.SSLError, OSError):
            report["closed"] = True
            return
        if not data:
            report["closed"] = True
            return
        try:
            events = conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            report["closed"] = report["goaway"] is None
            return
        for event in events:
            if isinstance(event, h2.events.RemoteSettingsChanged):
                changed = event.changed_settings.get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
                if changed is not None:
                    report["settings"].append(changed.new_value)
            elif isinstance(event, h2.events.ResponseReceived):
                s = report["streams"].setdefault(str(event.stream_id), {})
                s["headers"] = dict(event.headers)
                s["status"] = int(s["headers"].get(":status", "0"))
            elif isinstance(event, h2.events.DataReceived):
                s = report["streams"].setdefault(str(event.stream_id), {})
                s["body"] = s.get("body", "") + event.data.decode()
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                done.add(event.stream_id)
            elif isinstance(event, h2.events.StreamReset):
                report["streams"].setdefault(str(event.stream_id), {})["reset"] = int(event.error_code)
                done.add(event.stream_id)
            elif isinstance(event, h2.events.ConnectionTerminated):
                report["goaway"] = {"last_stream_id": event.last_stream_id, "error_code": int(event.error_code),
                                    "data": (event.additional_data or b"").decode()}
        out = conn.data_to_send()
        if out:
            try:
                sock.sendall(out)
            except OSError:
                report["closed"] = True
pump(lambda: len(report["settings"]) > 0, time.time() + 3)
sent = []
for request in args["requests"]:
    if request["pause"]:
        pump(lambda: False, time.time() + request["pause"])
    if report["goaway"] is not None or report["closed"]:
        break
    sid = conn.get_next_available_stream_id()
    body = request["body"].encode()
    conn.send_headers(sid, [tuple(h) for h in request["headers"]], end_stream=not body)
    if body:
        conn.send_data(sid, body, end_stream=True)
    sock.sendall(conn.data_to_send())
    sent.append(sid)
    if request["wait"]:
        pump(lambda: sid in done, time.time() + (request.get("timeout") or args["timeout"]))
        if sid not in done and not report["closed"]:
            report["timeouts"].append(sid)
pump(lambda: all(s in done for s in sent), time.time() + min([args["timeout"]] + [r["timeout"] for r in args["requests"] if r.get("timeout")]))
for s in sent:
    if s not in done and s not in report["timeouts"] and not report["closed"]:
        report["timeouts"].append(s)
print(json.dumps(report))
"""#

    /// Runs the requests on one TLS connection and reports what the server did.
    static func run(_ fixture: Fixture, _ requests: [Request], timeout: Double = 5) throws -> Report {
        let directory = makeTemporaryDirectory("herald-sim-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try script.write(toFile: directory + "/peer.py", atomically: true, encoding: .utf8)
        struct Arguments: Encodable { let ca: String; let port: Int; let timeout: Double; let requests: [Request] }
        let arguments = Arguments(ca: fixture.tls.caFile!, port: fixture.server.port, timeout: timeout, requests: requests)
        try JSONEncoder().encode(arguments).write(to: URL(fileURLWithPath: directory + "/args.json"))
        let result = try runProcess("/usr/bin/python3", [directory + "/peer.py", directory + "/args.json"], seconds: 30)
        guard result.status == 0, let data = result.output.data(using: .utf8) else {
            throw ProcessError.failed("peer exit \(result.status): \(result.error)")
        }
        return try JSONDecoder().decode(Report.self, from: data)
    }

    /// A valid push's headers for the peer.
    static func pushHeaders(_ fixture: Fixture, token: String = Fixture.token, authorization: String? = nil, extra: [[String]] = []) throws -> [[String]] {
        [[":method", "POST"], [":scheme", "https"], [":authority", "127.0.0.1"], [":path", "/3/device/\(token)"],
         ["authorization", authorization ?? fixture.defaultBearer], ["apns-topic", Fixture.topic], ["apns-push-type", "alert"]] + extra
    }

    static func push(_ fixture: Fixture, token: String = Fixture.token, authorization: String? = nil, wait: Bool = true, pause: Double = 0,
                     timeout: Double? = nil) throws -> Request {
        Request(headers: try pushHeaders(fixture, token: token, authorization: authorization), body: #"{"aps":{"alert":"x"}}"#, wait: wait,
                pause: pause, timeout: timeout)
    }
}

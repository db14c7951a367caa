import CurlHTTP
import Foundation
import HeraldTestSupport
import Testing
@testable import WebPush

/// Issue 54: over HTTP/1.1 (libcurl), a push service that takes a request on a kept-alive connection and then
/// cuts it without an answer made libcurl send the request again on a new connection, behind Herald's back: a
/// push delivered twice, no attempt counted, a lost 429's Retry-After ignored. Python's own HTTP/1.1 server
/// (nobody here wrote it) plays the service: its second request is read and the connection closed unanswered.
@Suite struct CurlResendTests {
    static let server = #"""
    import http.server, sys
    count = 0
    class Service(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_POST(self):
            global count
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            count += 1
            print("request", count, flush=True)
            if count == 2:
                self.close_connection = True
                return
            self.send_response(201)
            self.send_header("Content-Length", "0")
            self.end_headers()
        def log_message(self, *args):
            pass
    server = http.server.HTTPServer(("127.0.0.1", 0), Service)
    print("port", server.server_address[1], flush=True)
    server.serve_forever()
    """#

    @Test func libcurlsOwnResendOfARequestAlreadySentIsRefusedAndTheOutcomeIsUnknown() throws {
        let service = try ChildProcess(name: "cutting-service", executable: "/usr/bin/python3", arguments: ["-c", Self.server])
        defer { _ = service.stop(grace: 1) }
        #expect(waitUntil(seconds: 10) { service.output.contains("port ") })
        let port = try #require(service.output.split(separator: "\n").first { $0.hasPrefix("port ") }.flatMap { Int($0.dropFirst(5)) })
        let session = try #require(CurlSession(CurlPost.Options(timeoutMilliseconds: 5000, connectTimeoutMilliseconds: 2000), keepBodyBytes: 1024))
        let url = "http://127.0.0.1:\(port)/push/a"
        #expect(try session.post(url: url, headers: [], body: [1]).get().status == 201)
        // The second goes out on the kept-alive connection, which the service closes unanswered.
        guard case .failure(let failure) = session.post(url: url, headers: [], body: [2]) else {
            Issue.record("libcurl sent it again and returned that answer: \(service.output)")
            return
        }
        #expect(!failure.neverSent && !failure.timedOut && failure.refusedAddress == nil, "\(failure)")
        guard case .failure(.connectionLost) = HTTP1OriginPool.response(.failure(failure)) else {
            Issue.record("not an unknown outcome (connection lost): \(failure)")
            return
        }
        usleep(300_000)
        #expect(!service.output.contains("request 3"), "sent once, not again by libcurl: \(service.output)")
        // The next post opens a fresh connection, as it may: nothing of it had been sent.
        #expect(try session.post(url: url, headers: [], body: [3]).get().status == 201)
        #expect(service.output.contains("request 3"))
    }
}

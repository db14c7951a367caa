import Foundation
import Glibc
import HeraldTestSupport
import Reactor
import Testing
@testable import Worker

/// The metrics listener faces whatever connects to its port: garbage, oversized heads, silent clients and
/// floods must each get an answer or a close, and the listener must keep serving afterwards.
@Suite struct MetricsListenerTests {
    /// A listener on its own loop answering "hi" to every GET, with small limits so the test is quick.
    final class Rig: @unchecked Sendable {
        let loop: EventLoop
        let listener: LoopBound<HTTPListener>
        let port: Int

        init(timeoutMilliseconds: Int = 400, maxConnections: Int = 8) throws {
            loop = try EventLoop.startThread(name: "metrics-listener-test")
            var limits = HTTPListener.Limits()
            limits.maxRequestBytes = 1024
            limits.timeoutMilliseconds = timeoutMilliseconds
            limits.maxConnections = maxConnections
            let loop = self.loop
            let chosen = limits
            listener = try loop.submit {
                LoopBound(try HTTPListener(loop: loop, host: "127.0.0.1", port: 0, limits: chosen) { request, respond in
                    respond(.init(status: 200, body: "hi \(request.path)"))
                }, loop: loop)
            }
            let bound = listener
            port = try loop.submit { bound.value.port }
        }

        func stop() {
            let bound = listener
            try? loop.submit { bound.value.close() }
            loop.stop()
            loop.waitUntilStopped()
        }
    }

    @Test func garbageOversizedAndWrongMethodsGetErrorsAndTheListenerKeepsServing() throws {
        let rig = try Rig()
        defer { rig.stop() }
        #expect(try httpExchange(port: rig.port, request: Array("\u{1}\u{2} nonsense\r\n\r\n".utf8)).status == 400)
        #expect(try httpExchange(port: rig.port, request: Array("GET nopath HTTP/1.1\r\n\r\n".utf8)).status == 400)
        #expect(try httpExchange(port: rig.port, request: [UInt8](repeating: 0x41, count: 5000)).status == 431)
        #expect(try httpExchange(port: rig.port, request: Array("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n".utf8)).status == 405)
        let ok = try httpGet(port: rig.port, "/metrics?x=1")
        #expect(ok.status == 200)
        #expect(ok.body == "hi /metrics")
    }

    @Test func aSilentClientIsClosedAfterTheTimeoutAndOthersAreServedMeanwhile() throws {
        let rig = try Rig(timeoutMilliseconds: 400)
        defer { rig.stop() }
        // Half a request head, then silence: the listener must close it rather than wait for ever.
        let silent = try openIdle(port: rig.port)
        defer { close(silent) }
        let half = Array("GET /metrics HTTP/1.1\r\n".utf8)
        #expect(half.withUnsafeBytes { send(silent, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == half.count)
        #expect(try httpGet(port: rig.port, "/healthz").status == 200)
        // End of file, not our own 5 s receive timeout: the listener closed it.
        #expect(readsEndOfFile(silent))
    }

    @Test func connectionsBeyondTheLimitAreClosedAndServingResumesWhenTheyGo() throws {
        let rig = try Rig(timeoutMilliseconds: 20_000, maxConnections: 4)
        defer { rig.stop() }
        var idle: [Int32] = []
        for _ in 0..<6 { idle.append(try openIdle(port: rig.port)) }
        // Two over the limit: the two oldest without a request head make room for them at once (within our 5 s
        // receive timeout, long before the 20 s one), so a newcomer such as a health probe is never shut out.
        var closedEarly = 0
        for fd in idle.prefix(2) where readsEndOfFile(fd) { closedEarly += 1 }
        #expect(closedEarly == 2)
        var byte: UInt8 = 0
        #expect(idle.suffix(4).allSatisfy { recv($0, &byte, 1, Int32(MSG_DONTWAIT)) == -1 && errno == EAGAIN }, "the four newest stay open")
        for fd in idle { close(fd) }
        #expect(waitUntil(seconds: 10) { (try? httpGet(port: rig.port, "/x").status) == 200 })
    }

    /// Issue 30: a head over the limit that arrived whole, blank line and all, was answered 404, not 431.
    @Test func aWholeHeadOverTheLimitGets431() throws {
        let rig = try Rig()
        defer { rig.stop() }
        let head = "GET /metrics HTTP/1.1\r\nX-Filler: " + String(repeating: "a", count: 1100) + "\r\n\r\n"
        #expect(try httpExchange(port: rig.port, request: Array(head.utf8)).status == 431)
        let fits = "GET /metrics HTTP/1.1\r\nX-Filler: " + String(repeating: "a", count: 900) + "\r\n\r\n"
        #expect(try httpExchange(port: rig.port, request: Array(fits.utf8)).status == 200)
    }

    /// Issue 30: slow sockets holding every slot (a slowloris) made every /healthz fail. 300 of them, each with
    /// half a head, against 16 slots and a 20 s timeout: every probe still gets its answer within 2 s.
    @Test(.timeLimit(.minutes(1)))
    func healthProbesAreAnsweredWhileSlowSocketsHoldEverySlot() throws {
        let rig = try Rig(timeoutMilliseconds: 20_000, maxConnections: 16)
        defer { rig.stop() }
        var slow: [Int32] = []
        defer { for fd in slow { close(fd) } }
        let half = Array("GET /metrics HTTP/1.1\r\nX-Slow: ".utf8)
        func openSlow() throws {
            let fd = try openIdle(port: rig.port, settle: false)
            _ = half.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            slow.append(fd)
        }
        for _ in 0..<300 { try openSlow() }
        // Past the grace period every slot is held by a slow socket; more keep arriving meanwhile.
        let start = monotonicNanos()
        while monotonicNanos() &- start < 1_500_000_000 { try openSlow(); usleep(20_000) }
        for _ in 0..<5 {
            let asked = monotonicNanos()
            #expect(try httpGet(port: rig.port, "/healthz", timeoutSeconds: 2).status == 200)
            #expect(monotonicNanos() &- asked < 2_000_000_000)
            for _ in 0..<10 { try openSlow() }
        }
    }

    /// Requests are read by the API's `HTTP1Parser` (its own tests cover it byte by byte): well-formed ones reach the
    /// handler with the path without its query, HEAD without a body; the rest get the parser's status and words.
    @Test(arguments: [
        ("GET /metrics?a=b HTTP/1.1", 200, "hi /metrics"), ("HEAD /metrics?a=b HTTP/1.0", 200, ""),
        ("", 400, "the request line is not METHOD SP target SP HTTP/1.x\n"), ("GET", 400, nil), ("GET /", 400, nil),
        ("GET  / HTTP/1.1", 400, nil), ("GET /\u{7f} HTTP/1.1", 400, "the request target must be an absolute path\n"),
        ("GET x HTTP/1.1", 400, nil), ("GET / HTTP/1.1\nHost: x", 400, "a bare LF in the request head (lines end with CRLF)\n"),
        ("GET / HTTP/1.1\r\nHost : x", 400, "bad header field name\n"), ("GET / HTTP/2", 505, nil), ("get / HTTP/1.1", 405, "only GET and HEAD\n"),
    ] as [(String, Int, String?)])
    func requestsAreAnsweredAsTheOneHTTP1ParserReadsThem(head: String, status: Int, body: String?) throws {
        let rig = try Rig()
        defer { rig.stop() }
        let answer = try httpExchange(port: rig.port, request: Array((head + "\r\n\r\n").utf8))
        #expect(answer.status == status)
        if let body { #expect(answer.body == body) }
        #expect(answer.headers.contains("Connection: close"))
    }

    /// A method other than GET and HEAD is refused once its (small) body is in, as before the parser was shared; a
    /// body past `maxRequestBytes` is refused as too large.
    @Test func otherMethodsGet405AfterTheirBodyAndTooLargeABodyGets413() throws {
        let rig = try Rig()
        defer { rig.stop() }
        let post = try httpExchange(port: rig.port, request: Array("POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello".utf8))
        #expect(post.status == 405)
        #expect(post.headers.contains("Allow: GET, HEAD"))
        let large = "POST /metrics HTTP/1.1\r\nContent-Length: 2000\r\n\r\n"
        #expect(try httpExchange(port: rig.port, request: Array(large.utf8)).status == 413)
    }

    private func openIdle(port: Int, settle: Bool = true) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { throw TestSupportError("connect failed") }
        if settle { usleep(30_000) }
        return fd
    }

    private func readsEndOfFile(_ fd: Int32) -> Bool {
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 0
    }
}

/// The text format as Prometheus reads it: HELP and TYPE per family, cumulative buckets ending in +Inf
/// equal to _count, label values escaped.
@Suite struct PrometheusTextTests {
    @Test func histogramsAreCumulativeAndEveryFamilyHasHelpAndType() throws {
        let metrics = DeliveryMetrics(appNames: ["a\"pp"])
        for ms: UInt64 in [1, 7, 30, 30, 700, 90_000] { metrics.jobFinished(.apns, afterNanoseconds: ms * 1_000_000) }
        metrics.job(.apns, app: 0, .delivered)
        metrics.job(.apns, app: nil, .rejected)
        let text = WorkerMetricsText.render(metrics.values)
        let lines = text.split(separator: "\n").map(String.init)
        var typed = Set<String>()
        var helped = Set<String>()
        for line in lines {
            let parts = line.split(separator: " ")
            if line.hasPrefix("# HELP ") { helped.insert(String(parts[2])) } else if line.hasPrefix("# TYPE ") { typed.insert(String(parts[2])) }
        }
        #expect(typed == helped)
        for line in lines where !line.hasPrefix("#") {
            let name = String(line.prefix { $0 != "{" && $0 != " " })
            let family = ["_bucket", "_sum", "_count"].reduce(name) { name, suffix in
                typed.contains(name) ? name : (name.hasSuffix(suffix) ? String(name.dropLast(suffix.count)) : name)
            }
            #expect(typed.contains(family), "\(name) has no TYPE line")
            #expect(name.hasPrefix("herald_") || name.hasPrefix("process_"))
        }
        // One platform's series (each platform's buckets are cumulative on their own).
        let buckets = lines.filter { $0.hasPrefix("herald_job_latency_seconds_bucket{platform=\"apns\"") }.map { Double($0.split(separator: " ").last!)! }
        #expect(buckets == buckets.sorted(), "buckets are cumulative")
        #expect(buckets.last == 6)
        #expect(lines.contains("herald_job_latency_seconds_bucket{platform=\"apns\",le=\"0.01\"} 2"))
        #expect(lines.contains("herald_job_latency_seconds_count{platform=\"apns\"} 6"))
        #expect(lines.contains("herald_results_total{app=\"a\\\"pp\",platform=\"apns\",outcome=\"delivered\"} 1"))
        #expect(lines.contains("herald_results_total{app=\"unknown\",platform=\"apns\",outcome=\"rejected\"} 1"))
    }

    @Test func quantilesInterpolateWithinTheirBucket() {
        var histogram = LatencyHistogram()
        for _ in 0..<100 { histogram.observe(20_000_000) }  // 20 ms: the (0.01, 0.025] bucket
        let p50 = histogram.quantileSeconds(0.5)!
        #expect(p50 > 0.01 && p50 <= 0.025)
        #expect(LatencyHistogram().quantileSeconds(0.5) == nil)
    }

    @Test func listenAddressesParseAndBadOnesAreRefused() {
        #expect(ListenAddress("127.0.0.1:9464") == ListenAddress("127.0.0.1:9464"))
        #expect(ListenAddress(":9464")?.host == "0.0.0.0")
        #expect(ListenAddress("[::1]:80")?.host == "::1")
        #expect(ListenAddress("localhost") == nil)
        #expect(ListenAddress("host:99999") == nil)
    }
}

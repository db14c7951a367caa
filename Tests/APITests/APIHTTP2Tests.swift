import Foundation
import HeraldTestSupport
import Testing

/// `herald api` over HTTP/2 as clients nobody here wrote speak it: curl (h2c with prior knowledge, h2 over TLS by
/// ALPN), Python httpx with h2, and h2load and wrk as load; the answers are the HTTP/1.1 ones, byte for byte.
@Suite(.serialized) struct APIHTTP2Tests {
    /// curl with the protocol version and status on the last line: (version, status, headers and body).
    func versionedCurl(_ arguments: [String]) throws -> (version: String, status: Int, text: String) {
        let (output, _) = try run("curl", ["-s", "-w", "\n%{http_version} %{http_code}"] + arguments)
        var lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        let last = (lines.popLast() ?? "").split(separator: " ")
        return (last.first.map(String.init) ?? "", Int(last.last ?? "") ?? 0, lines.joined(separator: "\n"))
    }

    @Test func h2cWithPriorKnowledgeGetsTheSameAnswersAsHTTP1OnTheSamePortUnderTheSameLimits() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url, api: #"{"max_body_bytes": 4096, "max_head_bytes": 2048}"#)
        let tooBig = "{\"app\":\"shop\",\"token\":\"\(APIProcess.token)\",\"payload\":{\"pad\":\"\(String(repeating: "x", count: 5000))\"}}"
        let requests: [(name: String, arguments: [String])] = [
            ("batch", ["--data-binary", "{\"jobs\":[\(APIProcess.job(id: "P-1")), {\"token\":\"zz\"}]}", api.url + "v1/jobs"]),
            ("no route", [api.url + "v2/nothing"]),
            ("wrong method", ["-D", "-", api.url + "v1/jobs"]),
            ("body too large", ["--data-binary", tooBig, api.url + "v1/jobs"]),
            ("head too large", ["-H", "X-Pad: \(String(repeating: "p", count: 3000))", api.url + "healthz"]),
            ("HEAD", ["-I", api.url + "healthz"]),
        ]
        for (name, arguments) in requests {
            let one = try versionedCurl(["--http1.1"] + arguments.map { $0.replacingOccurrences(of: "P-1", with: "h1-1") })
            let two = try versionedCurl(["--http2-prior-knowledge"] + arguments.map { $0.replacingOccurrences(of: "P-1", with: "h2-1") })
            #expect(one.version == "1.1" && two.version == "2", "\(name)")
            #expect(one.status == two.status, "\(name): \(one.status) over HTTP/1.1, \(two.status) over h2")
            // Bodies alike (headers differ in case and framing: compared below where they matter).
            let body = { (text: String) in text.components(separatedBy: "\r\n\r\n").last!.replacingOccurrences(of: "h1-1", with: "h2-1") }
            #expect(body(one.text) == body(two.text), "\(name)")
            switch name {
            case "batch": #expect(two.status == 202 && two.text.contains("bad_token"))
            case "wrong method": #expect(two.status == 405 && two.text.contains("allow: POST"))
            case "body too large": #expect(two.status == 413 && two.text.contains("request body larger than 4096 bytes"))
            case "head too large": #expect(two.status == 431 && two.text.contains("request head larger than 2048 bytes"))
            case "HEAD": #expect(two.status == 200 && two.text.contains("content-length: 15"))
            default: #expect(two.status == 404)
            }
        }
        #expect(Set(try listElements(redis.url, "herald:queue").compactMap(jobID)) == ["h1-1", "h2-1"])
        // httpx with h2 (prior knowledge on cleartext): many requests, one connection.
        let script = """
            import httpx, sys, json
            with httpx.Client(http1=False, http2=True) as c:
                rs = [c.post(sys.argv[1] + "v1/jobs", content=sys.argv[2].replace("ID", "x%d" % n)) for n in range(20)]
            print(sorted({r.http_version for r in rs}), sorted({r.status_code for r in rs}), len({r.json()["accepted"][0]["id"] for r in rs}))
            """
        let (output, status) = try run("python3", ["-c", script, api.url, APIProcess.job(id: "ID")])
        #expect(status == 0)
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == "['HTTP/2'] [202] 20")
        #expect(try listElements(redis.url, "herald:queue").count == 22)
    }

    @Test func overTLSALPNChoosesH2ForClientsThatOfferItAndHTTP1ForTheRest() throws {
        let dir = try makeTestCertificates()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url, api: #"{"tls": {"cert_file": "\#(dir)/server.pem", "key_file": "\#(dir)/server.key"}}"#)
        let two = try versionedCurl(["--http2", "--cacert", "\(dir)/ca.pem", "--data-binary", APIProcess.job(id: "tls-h2"), api.url + "v1/jobs"])
        #expect(two.version == "2" && two.status == 202, "\(two)")
        let one = try versionedCurl(["--http1.1", "--cacert", "\(dir)/ca.pem", "--data-binary", APIProcess.job(id: "tls-h1"), api.url + "v1/jobs"])
        #expect(one.version == "1.1" && one.status == 202, "\(one)")
        let script = """
            import httpx, ssl, sys
            context = ssl.create_default_context(cafile=sys.argv[2])
            with httpx.Client(http2=True, verify=context) as c:
                rs = [c.post(sys.argv[1] + "v1/jobs", content=sys.argv[3].replace("ID", "httpx-%d" % n)) for n in range(10)]
            print(sorted({r.http_version for r in rs}), sorted({r.status_code for r in rs}))
            """
        let (output, status) = try run("python3", ["-c", script, api.url, "\(dir)/ca.pem", APIProcess.job(id: "ID")])
        #expect(status == 0)
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == "['HTTP/2'] [202]")
        #expect(try listElements(redis.url, "herald:queue").count == 12)
    }

    @Test func anH2cConnectionPastTheStreamLimitIsRefusedTheExtraStreamAndClosedAtTheRequestTimeout() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url, api: #"{"request_timeout_ms": 800}"#)
        // Python's h2 (Debian's python3-h2) over a plain socket: 101 requests begun and never finished.
        let script = """
            import h2.connection, h2.config, h2.events, socket, sys, time
            host, port = sys.argv[1].split("//")[1].rstrip("/").split(":")
            s = socket.create_connection((host, int(port)), timeout=5)
            c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
            c.initiate_connection()
            for n in range(101):
                c.send_headers(1 + 2 * n, [(":method", "POST"), (":path", "/v1/jobs"), (":scheme", "http"), (":authority", "x")])
            s.sendall(c.data_to_send())
            refused, started, closed_after = [], time.monotonic(), None
            while closed_after is None:
                data = s.recv(65536)
                if not data:
                    closed_after = time.monotonic() - started
                    break
                for event in c.receive_data(data):
                    if isinstance(event, h2.events.StreamReset): refused.append((event.stream_id, int(event.error_code)))
                s.sendall(c.data_to_send())
            print(refused, 0.5 < closed_after < 4)
            """
        let (output, status) = try run("python3", ["-c", script, api.url])
        #expect(status == 0)
        // Stream 201 is the 101st: REFUSED_STREAM (7); the other 100 wait until the request timeout closes them all.
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == "[(201, 7)] True")
        #expect(try listElements(redis.url, "herald:queue").isEmpty)
    }

    @Test func h2loadAndWrkLoadsAreAnsweredInFullAndEveryAcceptedJobIsInRedis() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url)
        let dir = makeTemporaryDirectory("herald-api-load")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try APIProcess.job().write(toFile: "\(dir)/job.json", atomically: true, encoding: .utf8)
        // h2c, 4 connections of 10 streams each.
        let (h2load, _) = try run("h2load", ["-n", "2000", "-c", "4", "-m", "10", "-d", "\(dir)/job.json", api.url + "v1/jobs"], seconds: 60)
        #expect(h2load.contains("requests: 2000 total, 2000 started, 2000 done, 2000 succeeded"), "\(h2load)")
        #expect(h2load.contains("status codes: 2000 2xx"), "\(h2load)")
        #expect(try listElements(redis.url, "herald:queue").count == 2000)
        // HTTP/1.1 keep-alive for a second: every answer a 202, and as many jobs queued (those in flight when wrk
        // stopped may be queued without being counted).
        let lua = "wrk.method = \"POST\"\nwrk.body = [[\(APIProcess.job())]]\nwrk.headers[\"Content-Type\"] = \"application/json\"\n"
        try lua.write(toFile: "\(dir)/post.lua", atomically: true, encoding: .utf8)
        let (wrk, _) = try run("wrk", ["-t", "1", "-c", "8", "-d", "1s", "-s", "\(dir)/post.lua", api.url + "v1/jobs"], seconds: 30)
        let answered = wrk.split(separator: "\n").first { $0.contains("requests in") }.flatMap { Int($0.split(separator: " ").first ?? "") } ?? 0
        #expect(answered > 100, "\(wrk)")
        #expect(!wrk.contains("Non-2xx") && !wrk.contains("Socket errors"), "\(wrk)")
        let queued = try listElements(redis.url, "herald:queue").count - 2000
        #expect(queued >= answered && queued <= answered + 8, "\(answered) answered, \(queued) queued")
    }
}

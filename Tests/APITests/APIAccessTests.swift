import Foundation
import HeraldTestSupport
import Testing

/// API keys (stored as SHA-256), their apps, queues and rates, and HTTPS with and without client certificates.
@Suite(.serialized) struct APIAccessTests {
    static let secret = "s3cret-key-for-tests"
    static var secretHash: String {
        (try? run("sha256sum", [], input: secret).output.split(separator: " ").first.map(String.init)) ?? ""
    }

    private func keyed(_ redis: RedisServer, key: String) throws -> APIProcess {
        try APIProcess(redisURL: redis.url, redisExtra: #", "queues": ["herald:queue", "herald:queue:bulk"]"#,
                       api: #"{"keys": [\#(key)]}"#, apps: APIProcess.shopApp + "," + APIProcess.app("other"))
    }

    @Test func withKeysConfiguredARequestWithoutAKnownKeyIs401AndQueuesNothing() throws {
        let redis = try RedisServer()
        let api = try keyed(redis, key: #"{"name": "shop-backend", "sha256": "\#(Self.secretHash)"}"#)
        let (missing, missingBody) = try curl(["--data-binary", APIProcess.job(), api.url + "v1/jobs"])
        #expect(missing == 401)
        #expect((jsonObject(missingBody)["error"] as? [String: Any])?["code"] as? String == "unauthenticated")
        let (wrong, _) = try curl(["-H", "Authorization: Bearer not-the-key", "--data-binary", APIProcess.job(), api.url + "v1/jobs"])
        #expect(wrong == 401)
        // The hash itself is not the key.
        let (hash, _) = try curl(["-H", "X-API-Key: \(Self.secretHash)", "--data-binary", APIProcess.job(), api.url + "v1/jobs"])
        #expect(hash == 401)
        #expect(try listElements(redis.url, "herald:queue").isEmpty)
        let (bearer, _) = try curl(["-H", "Authorization: Bearer \(Self.secret)", "--data-binary", APIProcess.job(), api.url + "v1/jobs"])
        #expect(bearer == 202)
        let (header, _) = try curl(["-H", "X-API-Key: \(Self.secret)", "--data-binary", APIProcess.job(), api.url + "v1/jobs"])
        #expect(header == 202)
        #expect(try listElements(redis.url, "herald:queue").count == 2)
        // Probes need no key.
        #expect(try curl([api.url + "healthz"]).status == 200)
        // gorush's stat route is an `/api` route like the others (issue 52: it answered without a key).
        #expect(try curl([api.url + "api/stat/app"]).status == 401)
        #expect(try curl(["-H", "Authorization: Bearer \(Self.secret)", api.url + "api/stat/app"]).status == 200)
        #expect(try curl([api.url + "api/stat/go"]).status == 401)
        #expect(try curl(["-H", "Authorization: Bearer \(Self.secret)", api.url + "api/stat/go"]).status == 200)
    }

    @Test func aKeyLimitedToAppsAndQueuesIs403ElsewhereAndNothingOfThatRequestIsQueued() throws {
        let redis = try RedisServer()
        let api = try keyed(redis, key: #"{"name": "shop-only", "sha256": "\#(Self.secretHash)", "apps": ["shop"], "queues": ["herald:queue"]}"#)
        let auth = ["-H", "Authorization: Bearer \(Self.secret)"]
        let otherJob = APIProcess.job().replacingOccurrences(of: "\"app\":\"shop\"", with: "\"app\":\"other\"")
        let (app, appBody) = try curl(auth + ["--data-binary", "{\"jobs\":[\(APIProcess.job()),\(otherJob)]}", api.url + "v1/jobs"])
        #expect(app == 403)
        let message = (jsonObject(appBody)["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(message.contains("job 1 (app 'other')"))
        let (queue, _) = try curl(auth + ["--data-binary", APIProcess.job(), api.url + "v1/jobs?queue=herald:queue:bulk"])
        #expect(queue == 403)
        #expect(try listElements(redis.url, "herald:queue").isEmpty)
        #expect(try listElements(redis.url, "herald:queue:bulk").isEmpty)
        let (ok, _) = try curl(auth + ["--data-binary", APIProcess.job(), api.url + "v1/jobs?queue=herald:queue"])
        #expect(ok == 202)
    }

    @Test func aKeyOverItsRateGets429WithRetryAfter() throws {
        let redis = try RedisServer()
        let api = try keyed(redis, key: #"{"name": "slow", "sha256": "\#(Self.secretHash)", "rate_per_second": 1, "burst": 3}"#)
        let auth = ["-H", "Authorization: Bearer \(Self.secret)"]
        let three = "{\"jobs\":[" + Array(repeating: APIProcess.job(), count: 3).joined(separator: ",") + "]}"
        #expect(try curl(auth + ["--data-binary", three, api.url + "v1/jobs"]).status == 202)
        let (output, _) = try run("curl", ["-s", "-i"] + auth + ["--data-binary", APIProcess.job(), api.url + "v1/jobs"])
        #expect(output.hasPrefix("HTTP/1.1 429"))
        #expect(output.lowercased().contains("retry-after: 1\r\n"))
        #expect(try listElements(redis.url, "herald:queue").count == 3)
    }

    /// Issue 51, item 2: a request that would carry jobs is decided on from its head. Without a key (or with a queue
    /// that is not configured) it is answered at once, with no `100 Continue` and without waiting for the body the
    /// client holds back (it answered `100 Continue` and buffered up to 8 MiB first); a body for a route that reads
    /// none (any other) is refused likewise; with the key the body is asked for and read as before. Over HTTP/1.1
    /// and h2c (HEADERS answered before any DATA).
    @Test func aRequestWithoutAKeyIsRefusedFromItsHeadBeforeItsBodyIsRead() throws {
        let redis = try RedisServer()
        let api = try keyed(redis, key: #"{"name": "shop-backend", "sha256": "\#(Self.secretHash)"}"#)
        let script = """
            import h2.config, h2.connection, h2.events, socket, sys
            host, port = sys.argv[1].split("//")[1].rstrip("/").split(":")
            key, job = sys.argv[2], sys.argv[3].encode()
            def head(target, extra):
                s = socket.create_connection((host, int(port)), timeout=5)
                s.sendall((f"POST {target} HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 8000000\\r\\n{extra}\\r\\n").encode() + b"{" * 65536)
                answer = b""
                while b"\\r\\n\\r\\n" not in answer:
                    chunk = s.recv(65536)
                    if not chunk: break
                    answer += chunk
                return s, answer.split(b"\\r\\n")[0].decode(), b"connection: close" in answer.lower()
            for target, extra in [("/v1/jobs", "Expect: 100-continue\\r\\n"), ("/v1/jobs", ""), ("/api/push", ""), ("/healthz", ""),
                                  ("/v1/jobs?queue=nope", f"X-API-Key: {key}\\r\\nExpect: 100-continue\\r\\n")]:
                s, line, closes = head(target, extra)
                print(target, line, closes)
                s.close()
            s = socket.create_connection((host, int(port)), timeout=5)
            s.sendall((f"POST /v1/jobs HTTP/1.1\\r\\nHost: x\\r\\nX-API-Key: {key}\\r\\nExpect: 100-continue\\r\\nContent-Length: {len(job)}\\r\\n\\r\\n").encode())
            print("keyed", s.recv(65536).split(b"\\r\\n")[0].decode())
            s.sendall(job)
            print("keyed", s.recv(65536).split(b"\\r\\n")[0].decode())
            s = socket.create_connection((host, int(port)), timeout=5)
            c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
            c.initiate_connection()
            c.send_headers(1, [(":method", "POST"), (":path", "/v1/jobs"), (":scheme", "http"), (":authority", "x"), ("content-length", "8000000")])
            def status_of(stream_id):
                s.sendall(c.data_to_send())
                status = None
                while status is None:
                    data = s.recv(65536)
                    if not data: break
                    for event in c.receive_data(data):
                        if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream_id: status = dict(event.headers)[b":status"].decode()
                    s.sendall(c.data_to_send())
                return status
            print("h2", status_of(1))
            # A body on a route that reads none, declared by no content-length, only by HEADERS without END_STREAM:
            # refused from the head all the same (it was buffered up to max_body_bytes).
            c.send_headers(3, [(":method", "GET"), (":path", "/healthz"), (":scheme", "http"), (":authority", "x")])
            print("h2 healthz with a body", status_of(3))
            """
        let (output, status) = try run("python3", ["-c", script, api.url, Self.secret, APIProcess.job(id: "from-head")])
        #expect(status == 0, "\(output)")
        #expect(output.split(separator: "\n").map(String.init) == [
            "/v1/jobs HTTP/1.1 401 Unauthorized True", "/v1/jobs HTTP/1.1 401 Unauthorized True", "/api/push HTTP/1.1 401 Unauthorized True",
            "/healthz HTTP/1.1 413 Content Too Large True",
            "/v1/jobs?queue=nope HTTP/1.1 400 Bad Request True", "keyed HTTP/1.1 100 Continue", "keyed HTTP/1.1 202 Accepted", "h2 401",
            "h2 healthz with a body 413",
        ], "\(output)")
        // Only the keyed job was queued (under its key's tenant, `<tenant>/from-head`).
        let queued = try listElements(redis.url, "herald:queue").compactMap(jobID)
        #expect(queued.count == 1 && queued.first?.hasSuffix("/from-head") == true, "\(queued)")
    }

    /// Issue 51, item 5: `herald api` answers 400 to a repeated `chunked`, two `Authorization` fields (even the same
    /// key twice), a missing or repeated `Host` (it took them all) and a head of bare LFs (it never answered), and
    /// queues nothing of them.
    @Test func repeatedChunkedAuthorizationOrHostAndAMissingHostAre400() throws {
        let redis = try RedisServer()
        let api = try keyed(redis, key: #"{"name": "shop-backend", "sha256": "\#(Self.secretHash)"}"#)
        let job = APIProcess.job()
        let chunk = String(job.utf8.count, radix: 16) + "\r\n" + job + "\r\n0\r\n\r\n"
        let auth = "Authorization: Bearer \(Self.secret)\r\n"
        let requests = [
            "Host: x\r\n\(auth)Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk,
            "Host: x\r\n\(auth)\(auth)Content-Length: \(job.utf8.count)\r\n\r\n" + job,
            "Host: x\r\nHost: x\r\n\(auth)Content-Length: \(job.utf8.count)\r\n\r\n" + job,
            "\(auth)Content-Length: \(job.utf8.count)\r\n\r\n" + job,
            // Bare LFs: answered at once (it was left to the request timeout).
            "Host: x\n\(auth)\n",
            // The same request well formed: 202.
            "Host: x\r\n\(auth)Transfer-Encoding: chunked\r\n\r\n" + chunk,
        ]
        let script = """
            import socket, sys
            host, port = sys.argv[1].split("//")[1].rstrip("/").split(":")
            for rest in sys.argv[2:]:
                s = socket.create_connection((host, int(port)), timeout=5)
                s.sendall(("POST /v1/jobs HTTP/1.1\\r\\n" + rest).encode())
                print(s.recv(65536).split(b"\\r\\n")[0].decode())
                s.close()
            """
        let (output, status) = try run("python3", ["-c", script, api.url] + requests)
        #expect(status == 0, "\(output)")
        #expect(output.split(separator: "\n").map(String.init) == Array(repeating: "HTTP/1.1 400 Bad Request", count: 5) + ["HTTP/1.1 202 Accepted"], "\(output)")
        #expect(try listElements(redis.url, "herald:queue").count == 1)
        // Each refusal counted by its reason and logged (they were neither).
        let metrics = Set(try curl([api.url + "metrics"]).body.split(separator: "\n").map(String.init))
        for reason in ["chunked_twice", "authorization_twice", "host_twice", "host_missing", "bare_lf"] {
            #expect(metrics.contains(#"herald_api_requests_rejected_total{reason="\#(reason)"} 1"#), "\(reason)")
        }
        #expect(api.child.output.components(separatedBy: #""request refused""#).count - 1 == 5, "\(api.child.output)")
    }

    /// Issue 51, item 4: a key's rate and burst count sends, one per device token (a multicast of 200 tokens was one).
    @Test func aKeysRateCountsSendsNotJobs() throws {
        let redis = try RedisServer()
        let api = try keyed(redis, key: #"{"name": "slow", "sha256": "\#(Self.secretHash)", "rate_per_second": 1, "burst": 3}"#)
        let auth = ["-H", "Authorization: Bearer \(Self.secret)"]
        func multicast(_ count: Int) -> String {
            let tokens = (0..<count).map { "\"" + String(repeating: String(format: "%02x", $0 + 1), count: 32) + "\"" }
            return #"{"app":"shop","tokens":[\#(tokens.joined(separator: ","))],"payload":{"aps":{"alert":"m"}}}"#
        }
        let (four, fourBody) = try curl(auth + ["--data-binary", multicast(4), api.url + "v1/jobs"])
        #expect(four == 413 && fourBody.contains("these jobs make 4"), "\(fourBody)")
        #expect(try curl(auth + ["--data-binary", multicast(3), api.url + "v1/jobs"]).status == 202)
        // The bucket is empty: one more send waits.
        let (output, _) = try run("curl", ["-s", "-i"] + auth + ["--data-binary", APIProcess.job(), api.url + "v1/jobs"])
        #expect(output.hasPrefix("HTTP/1.1 429"), "\(output)")
        #expect(try listElements(redis.url, "herald:queue").count == 1)
    }

    @Test func servesHTTPSAndWithAClientCARefusesClientsWithoutACertificate() throws {
        let dir = try makeTestCertificates()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url, api: #"{"tls": {"cert_file": "\#(dir)/server.pem", "key_file": "\#(dir)/server.key", "client_ca_file": "\#(dir)/ca.pem"}}"#)
        #expect(api.url.hasPrefix("https://127.0.0.1:"))
        let (withCert, body) = try curl(["--cacert", "\(dir)/ca.pem", "--cert", "\(dir)/client.pem", "--key", "\(dir)/client.key",
                                         "--data-binary", APIProcess.job(id: "over-tls"), api.url + "v1/jobs"])
        #expect(withCert == 202, "\(body)")
        let (withoutCert, _) = try curl(["--cacert", "\(dir)/ca.pem", "--data-binary", APIProcess.job(id: "no-cert"), api.url + "v1/jobs"])
        #expect(withoutCert == 0)
        #expect(try listElements(redis.url, "herald:queue").compactMap(jobID) == ["over-tls"])
        // Keep-alive over TLS, with Python's own TLS stack.
        let script = """
            import requests, sys
            s = requests.Session()
            # Per request: REQUESTS_CA_BUNDLE in the environment would override a session's `verify`.
            tls = dict(verify=sys.argv[2], cert=(sys.argv[3], sys.argv[4]))
            print(sum(s.get(sys.argv[1] + "healthz", **tls).status_code == 200 for _ in range(5)))
            """
        let (python, _) = try run("python3", ["-c", script, api.url, "\(dir)/ca.pem", "\(dir)/client.pem", "\(dir)/client.key"])
        #expect(python.trimmingCharacters(in: .whitespacesAndNewlines) == "5")
    }
}

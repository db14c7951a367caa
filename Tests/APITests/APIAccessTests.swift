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

import Foundation
import Glibc
import HeraldTestSupport
import RedisQueue

/// A `herald api` process of the test's own against a Redis, with the URL it printed.
final class APIProcess {
    let child: ChildProcess
    let url: String
    let configPath: String

    static let token = String(repeating: "ab", count: 32)
    /// A job every configured app accepts, with `id` when given.
    static func job(id: String? = nil, alert: String = "hi") -> String {
        let idMember = id.map { "\"id\":\"\($0)\"," } ?? ""
        return "{\(idMember)\"app\":\"shop\",\"token\":\"\(token)\",\"payload\":{\"aps\":{\"alert\":\"\(alert)\"}}}"
    }

    static let shopApp = #"{"name": "shop", "bundle_id": "com.example.shop", "token": {"team_id": "ABCDE12345", "key_id": "KEY1234567", "key_file": "/nonexistent/AuthKey.p8"}}"#
    static func app(_ name: String) -> String {
        #"{"name": "\#(name)", "bundle_id": "com.example.\#(name)", "token": {"team_id": "ABCDE12345", "key_id": "KEY1234567", "key_file": "/nonexistent/AuthKey.p8"}}"#
    }

    /// `sections`: more top-level members of the configuration (`"results": {...}`), after a comma. `openFiles`:
    /// run it under that open-file limit, soft and hard (prlimit).
    init(redisURL: String, redisExtra: String = "", api: String = "{}", apps: String = APIProcess.shopApp, sections: String = "",
         arguments: [String] = [], openFiles: Int? = nil) throws {
        guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is not beside the test bundle: run `swift build` first") }
        configPath = try writeConfigurationFile("""
            {"redis": {"url": "\(redisURL)"\(redisExtra)}, "api": \(api), "apps": [\(apps)]\(sections.isEmpty ? "" : ", " + sections)}
            """)
        let command = [herald, "api", "--config", configPath, "--listen", "127.0.0.1:0"] + arguments
        let child = try openFiles.map { try ChildProcess(name: "api", executable: "/usr/bin/prlimit", arguments: ["--nofile=\($0):\($0)", "--"] + command) }
            ?? ChildProcess(name: "api", executable: herald, arguments: Array(command.dropFirst()))
        self.child = child
        var found: String?
        _ = waitUntil(seconds: 20) {
            found = child.output.split(separator: "\n").first { $0.hasPrefix("api: ") }.map { String($0.dropFirst(5)) }
            return found != nil || !child.isRunning
        }
        guard let found else { throw TestSupportError("herald api did not start: \(child.output)") }
        url = found
    }

    deinit { _ = child.stop(grace: 5) }
}

/// Runs a program (found on PATH) to its end with a deadline: what it printed on stdout and its exit status.
func run(_ program: String, _ arguments: [String], input: String? = nil, seconds: Double = 30) throws -> (output: String, status: Int32) {
    let result = try runProgram(program, arguments, input: input, errorsApart: true, seconds: seconds)
    return (result.output, result.status)
}

/// `curl` with the status code on the last line: (status, body).
func curl(_ arguments: [String]) throws -> (status: Int, body: String) {
    let (output, _) = try run("curl", ["-s", "-w", "\n%{http_code}"] + arguments)
    var lines = output.split(separator: "\n", omittingEmptySubsequences: false)
    let status = Int(lines.popLast() ?? "") ?? 0
    return (status, lines.joined(separator: "\n"))
}

func jsonObject(_ text: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
}

/// Every element of a Redis list.
func listElements(_ redisURL: String, _ key: String) throws -> [String] {
    let redis = try BlockingRedis(url: try RedisURL(parsing: redisURL))
    defer { redis.close() }
    return try redis.command(["LRANGE", key, "0", "-1"]).array?.compactMap(\.string) ?? []
}

/// The `id` of a queued job.
func jobID(_ job: String) -> String? { jsonObject(job)["id"] as? String }

/// A directory with a CA (`ca.pem`), a server certificate for 127.0.0.1 (`server.pem`, `server.key`) and a client
/// certificate (`client.pem`, `client.key`), all made by the openssl tool. The caller removes it.
func makeTestCertificates() throws -> String {
    let dir = makeTemporaryDirectory("herald-api-tls")
    for step in [
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(dir)/ca.key", "-out", "\(dir)/ca.pem", "-days", "2", "-subj", "/CN=test CA"],
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(dir)/server.key", "-out", "\(dir)/server.csr", "-subj", "/CN=127.0.0.1"],
        ["x509", "-req", "-in", "\(dir)/server.csr", "-CA", "\(dir)/ca.pem", "-CAkey", "\(dir)/ca.key", "-CAcreateserial", "-out", "\(dir)/server.pem",
         "-days", "2", "-extfile", "\(dir)/san.cnf"],
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(dir)/client.key", "-out", "\(dir)/client.csr", "-subj", "/CN=producer"],
        ["x509", "-req", "-in", "\(dir)/client.csr", "-CA", "\(dir)/ca.pem", "-CAkey", "\(dir)/ca.key", "-CAcreateserial", "-out", "\(dir)/client.pem", "-days", "2",
         "-extfile", "\(dir)/client.cnf"],
    ] {
        // What strict verifiers (Python 3.13's VERIFY_X509_STRICT) want of a leaf: its issuer's key id, not a CA.
        let leaf = "authorityKeyIdentifier=keyid,issuer\nbasicConstraints=CA:FALSE\n"
        try (leaf + "subjectAltName=IP:127.0.0.1\n").write(toFile: "\(dir)/san.cnf", atomically: true, encoding: .utf8)
        try leaf.write(toFile: "\(dir)/client.cnf", atomically: true, encoding: .utf8)
        let (_, status) = try run("openssl", step)
        guard status == 0 else { throw TestSupportError("openssl \(step) failed") }
    }
    return dir
}

import Foundation
import Glibc
import HeraldTestSupport
import HTTP2
import Reactor

/// Errors of the test fixtures themselves (a missing tool, a server that never came up).
struct FixtureError: Error, CustomStringConvertible {
    let description: String
}

/// A throwaway CA and a server certificate for 127.0.0.1 / localhost, made with the `openssl` CLI.
final class TestCertificates: Sendable {
    let directory: String
    var caCertificate: String { directory + "/ca.pem" }
    var serverCertificate: String { directory + "/server.pem" }
    var serverKey: String { directory + "/server.key" }

    init() throws {
        directory = NSTemporaryDirectory() + "herald-h2-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let d = directory
        try runTool("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", d + "/ca.key", "-out", d + "/ca.pem", "-days", "2", "-subj", "/CN=Herald Test CA"])
        try runTool("/usr/bin/openssl", ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", d + "/server.key", "-out", d + "/server.csr", "-subj", "/CN=localhost"])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: d + "/ext.cnf", atomically: true, encoding: .utf8)
        try runTool("/usr/bin/openssl", ["x509", "-req", "-in", d + "/server.csr", "-CA", d + "/ca.pem", "-CAkey", d + "/ca.key",
            "-CAcreateserial", "-out", d + "/server.pem", "-days", "2", "-extfile", d + "/ext.cnf"])
    }

    var clientCertificate: String { directory + "/client.pem" }
    var clientKey: String { directory + "/client.key" }
    var clientPKCS12: String { directory + "/client.p12" }
    static let pkcs12Password = "secret"

    /// A client certificate from the same CA, as PEM and as password-protected PKCS#12.
    func makeClientCertificate() throws {
        let d = directory
        try runTool("/usr/bin/openssl", ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", d + "/client.key", "-out", d + "/client.csr", "-subj", "/CN=Herald Test Client"])
        try runTool("/usr/bin/openssl", ["x509", "-req", "-in", d + "/client.csr", "-CA", d + "/ca.pem", "-CAkey", d + "/ca.key",
            "-CAcreateserial", "-out", d + "/client.pem", "-days", "2"])
        try runTool("/usr/bin/openssl", ["pkcs12", "-export", "-in", d + "/client.pem", "-inkey", d + "/client.key",
            "-certfile", d + "/ca.pem", "-out", d + "/client.p12", "-passout", "pass:" + Self.pkcs12Password])
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
}

/// Runs a tool to completion (deadline 30 s) and throws when it fails.
func runTool(_ path: String, _ arguments: [String]) throws {
    let result = try runProgram(path, arguments, seconds: 30)
    guard result.status == 0 else { throw FixtureError(description: "\(path) \(arguments) failed: \(result.output)") }
}

/// A server process the test started (a `ChildProcess`); `stop()` (also in deinit) ends it by its pid.
final class ServerProcess: @unchecked Sendable {
    let child: ChildProcess
    let port: Int

    init(child: ChildProcess, port: Int) {
        self.child = child
        self.port = port
    }

    /// SIGKILL by default: nothing of a throwaway server needs a clean exit. SIGKILL after 5 s if it is still there.
    func stop(signal: Int32 = SIGKILL) {
        child.signal(signal)
        if child.waitForExit(seconds: 5) == nil {
            child.signal(SIGKILL)
            _ = child.waitForExit(seconds: 5)
        }
    }

    deinit { stop(signal: SIGKILL) }

    /// nghttpd serving `docroot` over TLS on 127.0.0.1:`port`; returns once it accepts connections.
    static func nghttpd(port: Int, docroot: String, certificates: TestCertificates, extra: [String] = []) throws -> ServerProcess {
        let executable = ["/usr/sbin/nghttpd", "/usr/bin/nghttpd"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "nghttpd"
        let child = try ChildProcess(name: "nghttpd", executable: executable, arguments: ["--address=127.0.0.1", "-d", docroot] + extra
            + [String(port), certificates.serverKey, certificates.serverCertificate])
        let server = ServerProcess(child: child, port: port)
        if waitUntil(seconds: 10, { loopbackAccepts(port: port) || !processIsAlive(child.pid) }), processIsAlive(child.pid) { return server }
        server.stop()
        throw FixtureError(description: "nghttpd did not start on port \(port): \(child.output)")
    }

    /// The scripted python3-h2 peer (Fixtures/h2_peer.py) in `mode`; reads the port it prints (`PORT n`).
    static func peer(mode: String, certificates: TestCertificates, extra: [String] = []) throws -> ServerProcess {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/h2_peer.py").path
        let child = try ChildProcess(name: "h2-peer", executable: "/usr/bin/python3",
                                     arguments: [script, "--mode", mode, "--cert", certificates.serverCertificate, "--key", certificates.serverKey] + extra,
                                     errorsApart: true)
        var port: Int?
        _ = waitUntil(seconds: 10) {
            port = child.output.split(separator: "\n").first { $0.hasPrefix("PORT ") }.flatMap { Int($0.dropFirst(5).trimmingCharacters(in: .whitespaces)) }
            return port != nil || !processIsAlive(child.pid)
        }
        guard let port else {
            child.signal(SIGKILL)
            throw FixtureError(description: "h2_peer.py (\(mode)) did not report its port: \(child.errorOutput)")
        }
        return ServerProcess(child: child, port: port)
    }
}

/// A directory with one small file, for nghttpd to answer POSTs to `/device` with 200.
/// nghttpd that a test kills and starts again on the same port and docroot (removed by `stop`).
final class RestartableNghttpd {
    let port = freeLoopbackPort()
    let docroot: String
    private let certificates: TestCertificates
    private var server: ServerProcess?

    init(certificates: TestCertificates) throws {
        self.certificates = certificates
        docroot = try makeDocroot()
        try start()
    }

    func start() throws { server = try ServerProcess.nghttpd(port: port, docroot: docroot, certificates: certificates) }

    /// SIGKILL: the connections die without a word.
    func kill() {
        server?.stop(signal: SIGKILL)
        server = nil
    }

    func stop() {
        kill()
        try? FileManager.default.removeItem(atPath: docroot)
    }
}

func makeDocroot() throws -> String {
    let directory = NSTemporaryDirectory() + "herald-h2-docroot-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    try "ok\n".write(toFile: directory + "/device", atomically: true, encoding: .utf8)
    return directory
}

/// Collects completions (appended on the loop's thread) and lets the test thread wait for them with a deadline.
final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [Int: [Result<HTTP2Response, HTTP2ClientError>]] = [:]
    private var total = 0
    private let expected: Int
    private let done = DispatchSemaphore(value: 0)

    init(expected: Int) { self.expected = expected }

    func record(_ index: Int, _ result: Result<HTTP2Response, HTTP2ClientError>) {
        let finished = lock.withLock { () -> Bool in
            results[index, default: []].append(result)
            total += 1
            return total == expected
        }
        if finished { done.signal() }
    }

    /// True when `expected` completions arrived before the deadline.
    func wait(seconds: Double) -> Bool { done.wait(timeout: .now() + seconds) == .success }

    var all: [Int: [Result<HTTP2Response, HTTP2ClientError>]] { lock.withLock { results } }

    var completedOnceEach: Bool { lock.withLock { results.count == expected && results.values.allSatisfy { $0.count == 1 } } }

    var successes: [HTTP2Response] {
        lock.withLock { results.values.flatMap { $0 }.compactMap { try? $0.get() } }
    }

    var failures: [HTTP2ClientError] {
        lock.withLock {
            results.values.flatMap { $0 }.compactMap { if case let .failure(error) = $0 { return error } else { return nil } }
        }
    }
}

/// Pool and connection events seen so far, readable from the test thread.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [HTTP2PoolEvent] = []
    func append(_ event: HTTP2PoolEvent) { lock.withLock { events.append(event) } }
    var all: [HTTP2PoolEvent] { lock.withLock { events } }
}

func postRequest(timeoutMilliseconds: Int = 20_000) -> HTTP2Request {
    HTTP2Request(
        method: "POST", path: "/device",
        headers: [HTTP2Header(name: "authorization", value: "bearer test", neverIndex: true),
                  HTTP2Header(name: "apns-topic", value: "com.example.app")],
        body: Array(#"{"aps":{"alert":"hello"}}"#.utf8), timeoutMilliseconds: timeoutMilliseconds)
}

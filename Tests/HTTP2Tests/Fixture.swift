import Foundation
import Glibc
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
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    let deadline = Date().addingTimeInterval(30)
    while ServerProcess.alive(process.processIdentifier) && Date() < deadline { usleep(5_000) }
    if ServerProcess.alive(process.processIdentifier) {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw FixtureError(description: "\(path) did not finish")
    }
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw FixtureError(description: "\(path) \(arguments) failed") }
}

/// A port nobody listens on right now (bound, read, closed).
func freePort() throws -> Int {
    let fd = try Sockets.listen(host: "127.0.0.1", port: 0)
    defer { close(fd) }
    return Sockets.localPort(fd)
}

/// A server process the test started; `stop()` (also in deinit) ends it by its pid.
final class ServerProcess: @unchecked Sendable {
    let process: Process
    let port: Int

    init(process: Process, port: Int) {
        self.process = process
        self.port = port
    }

    /// SIGKILL by default: children started from a test thread inherit its blocked-signal mask, so SIGTERM may wait.
    func stop(signal: Int32 = SIGKILL) {
        guard Self.alive(process.processIdentifier) else { process.waitUntilExit(); return }
        let pid = process.processIdentifier
        kill(pid, signal)
        let deadline = Date().addingTimeInterval(5)
        while Self.alive(pid) && Date() < deadline { usleep(10_000) }
        if Self.alive(pid) { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    /// Foundation's `isRunning` learns of an exit late; /proc knows at once (a zombie counts as gone).
    static func alive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
        return state != "Z" && state != "X"
    }

    deinit { stop(signal: SIGKILL) }

    /// nghttpd serving `docroot` over TLS on 127.0.0.1:`port`; returns once it accepts connections.
    static func nghttpd(port: Int, docroot: String, certificates: TestCertificates, extra: [String] = []) throws -> ServerProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ["/usr/sbin/nghttpd", "/usr/bin/nghttpd"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "nghttpd")
        process.arguments = ["--address=127.0.0.1", "-d", docroot] + extra
            + [String(port), certificates.serverKey, certificates.serverCertificate]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = ServerProcess(process: process, port: port)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if canConnect(port: port) { return server }
            if !alive(process.processIdentifier) { break }
            usleep(20_000)
        }
        server.stop()
        throw FixtureError(description: "nghttpd did not start on port \(port)")
    }

    /// The scripted python3-h2 peer (Fixtures/h2_peer.py) in `mode`; reads the port it prints.
    static func peer(mode: String, certificates: TestCertificates, extra: [String] = []) throws -> ServerProcess {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/h2_peer.py").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script, "--mode", mode, "--cert", certificates.serverCertificate, "--key", certificates.serverKey] + extra
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let line = LineBox()
        let got = DispatchSemaphore(value: 0)
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread {
            var bytes: [UInt8] = []
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                bytes.append(contentsOf: chunk)
                if bytes.contains(10) { break }
            }
            line.set(String(decoding: bytes, as: UTF8.self))
            got.signal()
        }
        let server: ServerProcess
        if got.wait(timeout: .now() + 10) == .success, let text = line.get(),
           let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "PORT ", with: "")) {
            server = ServerProcess(process: process, port: port)
        } else {
            kill(process.processIdentifier, SIGKILL)
            throw FixtureError(description: "h2_peer.py (\(mode)) did not report its port")
        }
        return server
    }
}

private final class LineBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: String?
    func set(_ text: String) { lock.withLock { value = text } }
    func get() -> String? { lock.withLock { value } }
}

func canConnect(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

/// A directory with one small file, for nghttpd to answer POSTs to `/device` with 200.
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

/// Polls `condition` until true or the deadline passes.
func eventually(seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return try condition()
}

func postRequest(timeoutMilliseconds: Int = 20_000) -> HTTP2Request {
    HTTP2Request(
        method: "POST", path: "/device",
        headers: [HTTP2Header(name: "authorization", value: "bearer test", neverIndex: true),
                  HTTP2Header(name: "apns-topic", value: "com.example.app")],
        body: Array(#"{"aps":{"alert":"hello"}}"#.utf8), timeoutMilliseconds: timeoutMilliseconds)
}

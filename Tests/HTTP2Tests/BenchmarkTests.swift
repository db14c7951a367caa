import Foundation
import Glibc
import HeraldTestSupport
import HTTP2
import Reactor
import Testing

/// Not a speed assertion: prints this client's request rate next to h2load's against the same nghttpd.
/// Run with HERALD_HTTP2_BENCH=1 (ideally `-c release`); skipped otherwise.
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["HERALD_HTTP2_BENCH"] != nil))
final class BenchmarkTests {
    @Test(arguments: [1, 4]) func requestRateAgainstH2load(connections: Int) throws {
        let total = Int(ProcessInfo.processInfo.environment["HERALD_HTTP2_BENCH_REQUESTS"] ?? "") ?? 100_000
        let certificates = try TestCertificates()
        let docroot = try makeDocroot()
        defer { try? FileManager.default.removeItem(atPath: docroot) }
        let server = try ServerProcess.nghttpd(port: freeLoopbackPort(), docroot: docroot, certificates: certificates)
        defer { server.stop() }
        let body = #"{"aps":{"alert":"hello"}}"#
        try body.write(toFile: docroot + "/body.json", atomically: true, encoding: .utf8)

        let h2loadRate = try h2load(port: server.port, total: total, connections: connections, bodyFile: docroot + "/body.json")

        let loop = try EventLoop.startThread(name: "bench")
        defer { loop.stop(); loop.waitUntilStopped() }
        let tls = try TLSContext(TLSConfiguration(caFile: certificates.caCertificate))
        let pool = try loop.submit {
            let pool = HTTP2ConnectionPool(loop: loop, endpoint: HTTP2Endpoint(host: "127.0.0.1", port: server.port), tls: tls,
                                           options: HTTP2PoolOptions(connectionCount: connections))
            pool.start()
            return LoopBound(pool, loop: loop)
        }
        _ = waitUntil(seconds: 10) { (try? loop.submit { pool.value.liveConnections }) == connections }
        let runner = BoundedRunner(total: total, window: 100 * connections, request: postRequest())
        let started = Date()
        try loop.submit { runner.start(pool.value) }
        #expect(runner.done.wait(timeout: .now() + 300) == .success)
        let seconds = Date().timeIntervalSince(started)
        let ours = Double(total) / seconds
        #expect(runner.failures == 0)
        print("BENCH connections=\(connections) h2load=\(Int(h2loadRate)) req/s herald=\(Int(ours)) req/s ratio=\(String(format: "%.2f", ours / h2loadRate))")
        try loop.submit { pool.value.close(graceful: false) }
    }

    private func h2load(port: Int, total: Int, connections: Int, bodyFile: String) throws -> Double {
        let output = try runProgram("/usr/bin/h2load", ["-n", String(total), "-c", String(connections), "-m", "100", "-d", bodyFile,
                                                         "-H", "authorization: bearer test", "-H", "apns-topic: com.example.app",
                                                         "https://127.0.0.1:\(port)/device"], errorsApart: true, seconds: 300).output
        // "finished in 1.23s, 81234.56 req/s, ..."
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
              let rate = line.split(separator: ",").dropFirst().first?.split(separator: " ").first.flatMap({ Double($0) }) else {
            throw FixtureError(description: "h2load output not understood: \(output)")
        }
        return rate
    }
}

/// Keeps `window` requests outstanding until `total` completed: the shape the worker uses.
private final class BoundedRunner: @unchecked Sendable {
    let total: Int
    let window: Int
    let request: HTTP2Request
    var sent = 0
    var completed = 0
    var failures = 0
    let done = DispatchSemaphore(value: 0)

    init(total: Int, window: Int, request: HTTP2Request) {
        self.total = total
        self.window = window
        self.request = request
    }

    func start(_ pool: HTTP2ConnectionPool) {
        for _ in 0..<min(window, total) { sendOne(pool) }
    }

    private func sendOne(_ pool: HTTP2ConnectionPool) {
        sent += 1
        let accepted = pool.send(request) { [self] result in
            completed += 1
            if case .failure = result { failures += 1 }
            if sent < total { sendOne(pool) }
            if completed == total { done.signal() }
        }
        if !accepted {
            failures += 1
            completed += 1
        }
    }
}

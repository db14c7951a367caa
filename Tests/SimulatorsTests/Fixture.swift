import Foundation
import Glibc
import HeraldTestSupport
@testable import Simulators

/// A running APNs simulator (HeraldTestSupport's `APNsSimulatorFixture`) with what curl needs to talk to it.
/// `stop()` ends the server and removes the directory; every test calls it (via `defer`).
final class Fixture: @unchecked Sendable {
    let simulator: APNsSimulatorFixture
    var tls: MockTLSFiles { simulator.tls }
    var key: MockProviderKey { simulator.key }
    var server: MockAPNsServer { simulator.server }
    var defaultBearer: String { simulator.bearer }
    static let topic = APNsSimulatorFixture.topic
    static let token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

    init(faults: MockFaultScript = MockFaultScript(), extraKeys: [MockProviderKey] = [],
         _ configure: (inout MockAPNsConfiguration) -> Void = { _ in }) throws {
        simulator = try APNsSimulatorFixture(faults: faults, extraKeys: extraKeys, configure)
    }

    func stop() { simulator.stop() }

    var url: String { "https://127.0.0.1:\(server.port)" }
    func deviceURL(_ token: String = Fixture.token) -> String { "\(url)/3/device/\(token)" }

    func bearer(_ key: MockProviderKey? = nil, issuedAt: Int64 = wallClockSeconds()) throws -> String {
        "bearer \(try (key ?? self.key).makeToken(issuedAt: issuedAt))"
    }

    /// Standard headers of a valid alert push.
    func headers(authorization: String? = nil, topic: String? = Fixture.topic, pushType: String? = "alert") throws -> [String] {
        var list: [String] = []
        list.append("authorization: \(authorization ?? defaultBearer)")
        if let topic { list.append("apns-topic: \(topic)") }
        if let pushType { list.append("apns-push-type: \(pushType)") }
        return list
    }
}

/// One answer as curl saw it.
struct CurlAnswer {
    let status: Int
    let headers: [String: String]
    let body: String

    var reason: String? {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["reason"] as? String
    }
    var json: [String: Any] {
        ((try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]) ?? [:]
    }
}

enum ProcessError: Error { case failed(String) }

/// Runs a program to its end with a deadline (HeraldTestSupport's `runProgram`), stdout and stderr apart.
func runProcess(_ executable: String, _ arguments: [String], environment: [String: String] = [:], seconds: Double = 20) throws -> (status: Int32, output: String, error: String) {
    let result = try runProgram(executable, arguments, environment: environment, errorsApart: true, seconds: seconds)
    return (result.status, result.output, result.errorOutput)
}

/// Sends one or more requests with Debian's curl over one HTTP/2 connection (`--next` between transfers).
/// Each transfer: headers, body (nil = none), method.
func curl(_ fixture: Fixture, _ transfers: [(url: String, method: String, headers: [String], body: String?)],
          extra: [String] = []) throws -> [CurlAnswer] {
    try curl(caFile: fixture.tls.caFile!, transfers, extra: extra)
}

/// The same against any server: `caFile` nil means cleartext (pass `--http2-prior-knowledge` in `extra`).
func curl(caFile: String?, _ transfers: [(url: String, method: String, headers: [String], body: String?)],
          extra: [String] = []) throws -> [CurlAnswer] {
    let directory = makeTemporaryDirectory("herald-sim-test")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var arguments: [String] = []
    for (index, transfer) in transfers.enumerated() {
        if index > 0 { arguments.append("--next") }
        arguments += ["-s", "--max-time", "10", "-X", transfer.method, "-D", "\(directory)/h\(index)", "-o", "\(directory)/b\(index)"]
        arguments += (caFile.map { ["--http2", "--cacert", $0] } ?? []) + extra
        for header in transfer.headers { arguments += ["-H", header] }
        if let body = transfer.body { arguments += ["--data-binary", body] }
        arguments.append(transfer.url)
    }
    let result = try runProcess("/usr/bin/curl", arguments)
    var answers: [CurlAnswer] = []
    for index in transfers.indices {
        let headerText = (try? String(contentsOfFile: "\(directory)/h\(index)", encoding: .utf8)) ?? ""
        let body = (try? String(contentsOfFile: "\(directory)/b\(index)", encoding: .utf8)) ?? ""
        var status = 0
        var headers: [String: String] = [:]
        for line in headerText.split(whereSeparator: { $0 == "\r\n" || $0 == "\n" }) {
            if line.hasPrefix("HTTP/") {
                status = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
            } else if let colon = line.firstIndex(of: ":") {
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        if status == 0 && result.status != 0 && answers.isEmpty && transfers.count == 1 {
            throw ProcessError.failed("curl exit \(result.status): \(result.error)")
        }
        answers.append(CurlAnswer(status: status, headers: headers, body: body))
    }
    return answers
}

/// Convenience: one POST to a device.
func push(_ fixture: Fixture, token: String = Fixture.token, headers: [String]? = nil, body: String? = #"{"aps":{"alert":"hi"}}"#,
          extraHeaders: [String] = [], method: String = "POST", path: String? = nil) throws -> CurlAnswer {
    let url = path.map { fixture.url + $0 } ?? fixture.deviceURL(token)
    return try curl(fixture, [(url, method, (try headers ?? fixture.headers()) + extraHeaders, body)])[0]
}

/// Seconds since the UNIX epoch, as JWT `iat` uses (a test helper: the simulator reads the clock itself).
func wallClockSeconds() -> Int64 { Int64(Date().timeIntervalSince1970) }

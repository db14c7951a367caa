import Foundation
import Glibc
import HeraldTestSupport
import Testing
@testable import Simulators

/// The command's wiring (flags to server, ready file, config, reload, log file), run in-process with a
/// stop trigger instead of signals; plus cleartext mode and garbage on the wire.
@Suite("command and robustness")
struct CommandTests {
    final class Outcome: @unchecked Sendable {
        var status: Int32?
        let finished = DispatchSemaphore(value: 0)
        let stop = DispatchSemaphore(value: 0)
        var server: MockAPNsServer?
    }

    @Test func commandServesWithGeneratedMaterialAndReloads() throws {
        let directory = makeTemporaryDirectory("herald-sim-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configFile = directory + "/faults.json"
        try #"{"rules":[{"tokenPrefix":"dead","fate":"unregistered","timestamp":9}]}"#.write(toFile: configFile, atomically: true, encoding: .utf8)
        let options = try MockAPNsOptions.parse([
            "--generate-tls", directory, "--ready-file", directory + "/ready.json", "--print-token", "--config", configFile,
            "--log-file", directory + "/accepted.jsonl", "--sandbox", "--key-id", "CLIKEY0001", "--team-id", "CLITEAM001",
        ])
        let outcome = Outcome()
        let thread = Thread {
            outcome.status = MockAPNsCommand.run(options) { server, _ in
                outcome.server = server
                outcome.stop.wait()
            }
            outcome.finished.signal()
        }
        thread.start()
        var stopped = false
        defer {
            if !stopped {
                outcome.stop.signal()
                _ = outcome.finished.wait(timeout: .now() + 10)
            }
        }
        let deadline = Date().addingTimeInterval(15)
        while !FileManager.default.fileExists(atPath: directory + "/ready.json") && Date() < deadline { usleep(20_000) }
        let readyData = try #require(FileManager.default.contents(atPath: directory + "/ready.json"))
        let ready = try #require(try JSONSerialization.jsonObject(with: readyData) as? [String: Any])
        let port = try #require(ready["port"] as? Int)
        let caFile = try #require(ready["ca_file"] as? String)
        let token = try #require(ready["token"] as? String)
        #expect(ready["key_id"] as? String == "CLIKEY0001")
        #expect(ready["team_id"] as? String == "CLITEAM001")
        #expect(ready["key_file"] as? String == directory + "/AuthKey_CLIKEY0001.p8")
        #expect(caFile == directory + "/ca.pem")

        let headers = ["authorization: bearer \(token)", "apns-topic: com.example.app", "apns-push-type: alert"]
        let base = "https://127.0.0.1:\(port)/3/device/"
        let answers = try curl(caFile: caFile, [(base + "abcd", "POST", headers, "{}"), (base + "dead", "POST", headers, "{}")])
        #expect(answers.map(\.status) == [200, 410])
        #expect(answers[0].headers["apns-unique-id"] != nil)
        #expect(answers[1].body == #"{"reason":"Unregistered","timestamp":9}"#)

        // SIGHUP's reload: a bad file keeps the old config, a good one replaces it.
        let server = try #require(outcome.server)
        try "{nope".write(toFile: configFile, atomically: true, encoding: .utf8)
        #expect(!MockAPNsCommand.reload(server, from: configFile))
        #expect(server.faults().rules.count == 1)
        try #"{"rules":[]}"#.write(toFile: configFile, atomically: true, encoding: .utf8)
        #expect(MockAPNsCommand.reload(server, from: configFile))
        #expect(try curl(caFile: caFile, [(base + "dead", "POST", headers, "{}")])[0].status == 200)

        let log = try String(contentsOfFile: directory + "/accepted.jsonl", encoding: .utf8)
        #expect(log.split(separator: "\n").count == 2)

        stopped = true
        outcome.stop.signal()
        #expect(outcome.finished.wait(timeout: .now() + 10) == .success)
        #expect(outcome.status == 0)
    }

    @Test func badConfigFileIsAConfigError() throws {
        let directory = makeTemporaryDirectory("herald-sim-test")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try #"{"rules":[{"fate":"throttle"}]}"#.write(toFile: directory + "/bad.json", atomically: true, encoding: .utf8)
        let options = try MockAPNsOptions.parse(["--config", directory + "/bad.json", "--generate-tls", directory])
        let status = MockAPNsCommand.run(options) { _, _ in Issue.record("must not start") }
        #expect(status == 78)
    }

    @Test func cleartextPriorKnowledgeAndGarbageOnTheWire() throws {
        let fixture = try Fixture { $0.cleartext = true; $0.tls = nil; $0.requireAuthentication = false; $0.maxConcurrentStreams = 50 }
        defer { fixture.stop() }
        let url = "http://127.0.0.1:\(fixture.server.port)/3/device/abcd"
        let headers = ["apns-topic: com.example.app", "apns-push-type: alert"]
        // Garbage instead of an HTTP/2 preface: the connection is closed, the server lives on.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(fixture.server.port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        #expect(connected == 0)
        let garbage = [UInt8](repeating: 0xff, count: 4096)
        _ = garbage.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        var total = 0
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            total += n
        }
        close(fd)
        #expect(total < 4096)  // at most SETTINGS and a GOAWAY, then EOF
        let answers = try curl(caFile: nil, [(url, "POST", headers, #"{"aps":{}}"#)], extra: ["--http2-prior-knowledge"])
        #expect(answers.first?.status == 200)
    }

    @Test func clientWithoutH2IsRefused() throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let result = try runProcess("/usr/bin/curl", ["-s", "--http1.1", "--max-time", "5", "--cacert", fixture.tls.caFile!, "-o", "/dev/null",
                                                      "-w", "%{http_code}", "-X", "POST", fixture.deviceURL()])
        #expect(result.status != 0)
        #expect(result.output != "200")
        #expect(fixture.server.stats().handshakeFailures == 1)
    }
}

import Foundation
import Glibc
import HeraldTestSupport
import Testing

/// `herald mock-webpush` run as its own process, as the Compose demo and scripts/bench run it: minted
/// subscriptions on file, fates from --config (reloaded on SIGHUP), pywebpush and `herald send --platform webpush`
/// answered, the counters at GET /_mock/stats, a subscription from POST /_mock/subscribe; stopped by its pid.
@Suite("herald mock-webpush")
struct MockWebPushCommandTests {
    /// `herald mock-webpush` with `arguments` and a ready file in `directory`, once it is ready, and its ready line.
    static func start(_ herald: String, _ arguments: [String], in directory: String) throws -> (ChildProcess, [String: Any]) {
        let simulator = try ChildProcess(name: "mock-webpush", executable: herald,
                                         arguments: ["mock-webpush"] + arguments + ["--ready-file", directory + "/ready.json"])
        #expect(waitUntil(seconds: 20) { FileManager.default.fileExists(atPath: directory + "/ready.json") || !simulator.isRunning },
                "no ready file:\n\(simulator.output)")
        let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/ready.json"))
        let ready = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(simulator.output)")
        return (simulator, ready)
    }

    @Test(.timeLimit(.minutes(1)))
    func standaloneSimulatorMintsAnswersByFateAndCounts() throws {
        let herald = try #require(heraldExecutable(), "build herald first")
        let directory = makeTemporaryDirectory("mock-webpush-cmd")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try #"{"rules":[{"subscriptionPrefix":"gone-","fate":"gone"}]}"#.write(toFile: directory + "/faults.json", atomically: true, encoding: .utf8)
        let (simulator, ready) = try Self.start(herald, [
            "--generate-tls", directory + "/tls", "--config", directory + "/faults.json", "--mint", "ok-:2", "--mint", "gone-:1",
            "--subscriptions-file", directory + "/subscriptions.jsonl", "--jobs-file", directory + "/jobs.jsonl", "--jobs-app", "web",
        ], in: directory)
        defer { _ = simulator.stop() }
        let origin = try #require(ready["origin"] as? String)
        let caFile = try #require(ready["ca_file"] as? String)
        #expect(ready["pid"] as? Int == Int(simulator.pid))
        #expect(ready["subscriptions"] as? Int == 3)

        let lines = try String(contentsOfFile: directory + "/subscriptions.jsonl", encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        let endpoints = try lines.map { line -> String in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let keys = try #require(object["keys"] as? [String: Any])
            #expect(keys["p256dh"] is String && keys["auth"] is String)
            return try #require(object["endpoint"] as? String)
        }
        #expect(endpoints == [origin + "/push/ok-1", origin + "/push/ok-2", origin + "/push/gone-3"])
        let jobs = try String(contentsOfFile: directory + "/jobs.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(jobs.count == 3 && jobs.allSatisfy { $0.contains(#""app":"web","platform":"webpush","subscription":{"endpoint":"\#(origin)/push/"#) })

        // pywebpush (PyPI) to a good subscription and to a gone one; Herald's own sender to the second good one.
        let vapid = try WebPushPeer.run(["vapid-key"])
        let raw = try #require(vapid["private_raw"] as? String)
        let environment = ["REQUESTS_CA_BUNDLE": caFile]
        let peerOK = try WebPushPeer.run(["send", lines[0], "hello", raw, "mailto:peer@example.com"], environment: environment)
        #expect(peerOK["status"] as? Int == 201, "\(peerOK)")
        let peerGone = try WebPushPeer.run(["send", lines[2], "hello", raw, "mailto:peer@example.com"], environment: environment)
        #expect(peerGone["status"] as? Int == 410, "\(peerGone)")
        let send = try ChildProcess(name: "send-webpush", executable: herald, arguments: [
            "send", "--platform", "webpush", "--subscription", lines[1], "--payload", #"{"title":"hi"}"#, "--vapid-key", raw,
            "--subject", "mailto:send@example.com", "--push-service-hosts", "127.0.0.1", "--allow-local", "--ca-file", caFile,
        ])
        #expect(send.waitForExit(seconds: 30) == 0, "\(send.output)")
        #expect(send.output.contains(#""outcome":"delivered""#) && send.output.contains(#""status":201"#), "\(send.output)")

        // The control paths, with curl (loopback, the simulator's CA).
        let curl = try #require(which("curl"))
        let subscribe = try ChildProcess(name: "curl-subscribe", executable: curl, arguments: [
            "-sS", "--cacert", caFile, "-X", "POST", "-d", #"{"prefix":"new-"}"#, origin + "/_mock/subscribe"])
        #expect(subscribe.waitForExit(seconds: 20) == 0)
        #expect(subscribe.output.contains(#""endpoint":"\#(origin)/push/new-4""#), "\(subscribe.output)")
        let statsCall = try ChildProcess(name: "curl-stats", executable: curl, arguments: ["-sS", "--cacert", caFile, origin + "/_mock/stats"])
        #expect(statsCall.waitForExit(seconds: 20) == 0)
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(statsCall.output.utf8)) as? [String: Any], "\(statsCall.output)")
        #expect(stats["requests"] as? Int == 3, "\(stats)")
        #expect(stats["delivered"] as? Int == 2, "\(stats)")
        #expect(stats["vapidRefused"] as? Int == 0 && stats["decryptionFailures"] as? Int == 0, "\(stats)")
        #expect(stats["subscriptionsMinted"] as? Int == 4, "\(stats)")

        // SIGHUP reloads --config: without the rule the gone subscription is delivered to.
        try #"{"rules":[]}"#.write(toFile: directory + "/faults.json", atomically: true, encoding: .utf8)
        simulator.signal(SIGHUP)
        #expect(waitUntil(seconds: 10) { simulator.output.contains("herald mock-webpush: reloaded") }, "\(simulator.output)")
        let afterReload = try WebPushPeer.run(["send", lines[2], "hello again", raw, "mailto:peer@example.com"], environment: environment)
        #expect(afterReload["status"] as? Int == 201, "\(afterReload)")

        simulator.signal(SIGTERM)
        #expect(simulator.waitForExit(seconds: 10) == 0, "\(simulator.output)")
    }

    /// `--http1-only`: a push service whose ALPN never picks h2; Herald's sender still delivers, over HTTP/1.1.
    @Test(.timeLimit(.minutes(1)))
    func http1OnlySimulatorIsReachedOverHTTP1() throws {
        let herald = try #require(heraldExecutable(), "build herald first")
        let directory = makeTemporaryDirectory("mock-webpush-h1")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (simulator, ready) = try Self.start(herald, [
            "--generate-tls", directory + "/tls", "--http1-only", "--mint", "1", "--subscriptions-file", directory + "/subscriptions.jsonl",
        ], in: directory)
        defer { _ = simulator.stop() }
        #expect(ready["http1_only"] as? Bool == true)
        let caFile = try #require(ready["ca_file"] as? String)
        let subscription = try String(contentsOfFile: directory + "/subscriptions.jsonl", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let send = try ChildProcess(name: "send-webpush-h1", executable: herald, arguments: [
            "send", "--platform", "webpush", "--subscription", subscription, "--payload", "hi",
            "--vapid-key", "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA", "--subject", "mailto:send@example.com",
            "--push-service-hosts", "127.0.0.1", "--allow-local", "--ca-file", caFile,
        ])
        #expect(send.waitForExit(seconds: 30) == 0, "\(send.output)")
        #expect(send.output.contains(#""status":201"#), "\(send.output)")
        let curl = try #require(which("curl"))
        let version = try ChildProcess(name: "curl-h1", executable: curl, arguments: [
            "-sS", "--http2", "--cacert", caFile, "-o", "/dev/null", "-w", "%{http_version}", try #require(ready["stats_url"] as? String)])
        #expect(version.waitForExit(seconds: 20) == 0)
        #expect(version.output == "1.1", "\(version.output)")
        simulator.signal(SIGTERM)
        #expect(simulator.waitForExit(seconds: 10) == 0, "\(simulator.output)")
    }

    @Test func badFlagsAndABadConfigAreRefusedWithTheirExitCodes() throws {
        let herald = try #require(heraldExecutable(), "build herald first")
        let directory = makeTemporaryDirectory("mock-webpush-bad")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try #"{"rules":[{"fate":"sometimes"}]}"#.write(toFile: directory + "/faults.json", atomically: true, encoding: .utf8)
        for (arguments, status, says) in [
            (["--mint", "x:0"], Int32(64), "--mint takes"),
            (["--subscriptions-file", directory + "/s.jsonl"], 64, "need --mint"),
            (["--application-server-key", "AAAA"], 64, "--application-server-key"),
            (["--generate-tls", directory + "/tls", "--config", directory + "/faults.json"], 78, "fate"),
        ] {
            let child = try ChildProcess(name: "mock-webpush-bad", executable: herald, arguments: ["mock-webpush"] + arguments)
            defer { _ = child.stop() }
            #expect(child.waitForExit(seconds: 20) == status, "\(arguments): \(child.output)")
            #expect(child.output.contains(says), "\(arguments): \(child.output)")
        }
    }
}

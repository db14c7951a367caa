import Forwarder
import Foundation
import Glibc
import HeraldTestSupport
import RedisQueue
import Testing

@Suite struct BodyTests {
    @Test func signatureIsHMACSHA256OfTheBody() {
        // RFC 4231, test case 2.
        #expect(BodySignature.hmacSHA256Hex(key: Array("Jefe".utf8), body: Array("what do ya want for nothing?".utf8))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func bodyNamesTheStreamAndKeepsNumbersAsNumbers() throws {
        let body = ForwardBody.encode(stream: "herald:results", entries: [
            StreamEntry(id: "1-0", fields: [("id", "a"), ("outcome", "delivered"), ("status", "200"), ("attempt", "2"), ("token", "0123")]),
        ])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        #expect(object["stream"] as? String == "herald:results")
        let entry = try #require((object["entries"] as? [[String: Any]])?.first)
        #expect(entry["stream_id"] as? String == "1-0")
        #expect(entry["status"] as? Int == 200 && entry["attempt"] as? Int == 2)
        #expect(entry["token"] as? String == "0123", "a token of digits stays text")
    }
}

/// `herald forward` processes against a real Redis and the example receiver (a Python http.server on loopback).
@Suite(.serialized) struct ForwardCommandTests {
    /// A receiver that answers 503 three times, two forwarders sharing a group, and a third that read a batch,
    /// could not post it and was killed: every entry of both streams arrives at least once, all acknowledged.
    @Test(.timeLimit(.minutes(2)))
    func receiverThatFailsThenRecoversGetsEveryEntryAtLeastOnceFromForwardersSharingTheWork() throws {
        guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is not built") }
        guard let python = which("python3") else { throw TestSupportError("python3 is not installed") }
        let directory = makeTemporaryDirectory("herald-forward")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let redisServer = try RedisServer()
        defer { redisServer.stop() }
        let redis = try BlockingRedis(url: try RedisURL(parsing: redisServer.url))
        let keys = try QueueKeys(prefix: "fw")
        func add(results range: Range<Int>) throws {
            _ = try redis.pipeline(range.map { ["XADD", keys.results, "*", "id", "job-\($0)", "outcome", "delivered", "status", "200", "attempt", "1", "worker", "w"] })
        }
        try add(results: 0..<200)
        _ = try redis.pipeline((0..<40).map { ["XADD", keys.droppedTokens, "*", "token", "tok-\($0)", "topic", "t", "environment", "production", "reason", "Unregistered"] })

        let keyFile = directory + "/hmac.key"
        try "s3cret-key\n".write(toFile: keyFile, atomically: true, encoding: .utf8)
        let common = ["forward", "--redis", redisServer.url, "--prefix", "fw", "--group", "hook", "--batch", "50",
                      "--from-start", "--claim-idle-seconds", "2", "--hmac-key-file", keyFile, "--timeout-ms", "3000"]

        // A forwarder whose receiver is down (nothing listens): it reads a batch of each stream, cannot post, dies.
        let deadPort = freeLoopbackPort()
        let doomed = try ChildProcess(name: "forward-doomed", executable: herald,
                                      arguments: common + ["--url", "http://127.0.0.1:\(deadPort)/hook", "--consumer", "doomed"])
        let readByDoomed = waitUntil(seconds: 30) { (try? pendingCount(redis, keys.results)) ?? 0 > 0 && (try? pendingCount(redis, keys.droppedTokens)) ?? 0 > 0 }
        #expect(readByDoomed, "the doomed forwarder read nothing:\n\(doomed.output)")
        doomed.signal(SIGKILL)
        _ = doomed.waitForExit(seconds: 10)

        let record = directory + "/received.txt"
        let receiver = try ChildProcess(name: "receiver", executable: python, arguments: [
            examplesDirectory() + "/webhook-receiver.py", "--port", "0", "--fail-first", "3", "--record", record, "--hmac-key-file", keyFile,
        ])
        defer { receiver.stop() }
        var port = 0
        #expect(waitUntil(seconds: 20) {
            port = Int(receiver.output.split(separator: "\n").first ?? "") ?? 0
            return port > 0
        }, "the receiver did not start: \(receiver.output)")
        let url = "http://127.0.0.1:\(port)/hook"
        let first = try ChildProcess(name: "forward-1", executable: herald, arguments: common + ["--url", url, "--consumer", "one"])
        let second = try ChildProcess(name: "forward-2", executable: herald, arguments: common + ["--url", url, "--consumer", "two"])
        defer { first.stop(); second.stop() }
        try add(results: 200..<300)

        let expected = 300 + 40
        var received: [String: Int] = [:]
        let done = try waitUntil(seconds: 60, interval: 0.2) {
            received = receivedCounts(record)
            let pending = try pendingCount(redis, keys.results) + pendingCount(redis, keys.droppedTokens)
            return received.count == expected && pending == 0
        }
        #expect(done, "received \(received.count) of \(expected) distinct entries\n\(first.output)\n\(second.output)")
        let ids = try streamIDs(redis, keys.results) + streamIDs(redis, keys.droppedTokens)
        #expect(Set(received.keys) == Set(ids), "exactly the entries of both streams")
        #expect(first.output.contains("503") || second.output.contains("503"), "the receiver's failures were seen and retried")
        #expect((first.output + second.output).contains("took over"), "the dead forwarder's pending entries were taken over")
        #expect(first.stop() == 0 && second.stop() == 0)
    }
}

private func pendingCount(_ redis: any BlockingRedisCommands, _ stream: String) throws -> Int {
    Int(try redis.command(["XPENDING", stream, "hook"]).array?.first?.int ?? -1)
}

private func streamIDs(_ redis: any BlockingRedisCommands, _ stream: String) throws -> [String] {
    StreamEntry.entries(try redis.command(["XRANGE", stream, "-", "+"])).map { "\(stream) \($0.id)" }
}

/// Lines "<stream> <stream id>" the receiver recorded, with how often each came.
private func receivedCounts(_ path: String) -> [String: Int] {
    let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    var counts: [String: Int] = [:]
    for line in text.split(separator: "\n") { counts[String(line), default: 0] += 1 }
    return counts
}

/// The repository's examples/ folder, from this file's path.
private func examplesDirectory(file: String = #filePath) -> String {
    URL(fileURLWithPath: file).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("examples").path
}

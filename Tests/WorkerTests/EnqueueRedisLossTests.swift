import Foundation
import HeraldTestSupport
import RedisQueue
import Testing

/// Issue 30, item 4: `herald enqueue` that loses Redis part way said only `Redis error: ...`, so a re-run pushed
/// again what had been pushed. Here the redis-server (append-only, fsync always) is killed by its pid while a
/// large enqueue runs: the tool names the lines pushed, the batch in doubt and the first line not pushed, exits
/// 69, and what Redis kept after its restart agrees with it.
@Suite struct EnqueueRedisLossTests {
    @Test(.timeLimit(.minutes(2)))
    func anEnqueueThatLosesRedisNamesThePushedInDoubtAndUnpushedLines() throws {
        guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is not built") }
        let server = try RedisServer(appendOnly: true)
        defer { server.stop() }
        let total = 400_000
        let token = String(repeating: "ab", count: 32)
        // Line n carries the id "loss-n"; line 2 is not a job (refused, never pushed).
        var text = ""
        text.reserveCapacity(total * 90)
        for n in 1...total {
            text += n == 2 ? "not json\n" : #"{"id":"loss-\#(n)","token":"\#(token)","payload":{"aps":{"alert":"hi"}}}"# + "\n"
        }
        let file = makeTemporaryDirectory("herald-enqueue-loss") + "/jobs.jsonl"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: (file as NSString).deletingLastPathComponent) }

        let enqueue = try ChildProcess(name: "enqueue-loss", executable: herald,
                                       arguments: ["enqueue", "--redis", server.url, "--file", file, "--batch", "500", "--quiet"])
        let redis = try BlockingRedis(url: try RedisURL(parsing: server.url))
        var queuedAtKill = 0
        let underway = waitUntil(seconds: 60, interval: 0.005) {
            queuedAtKill = Int((try? redis.command(["LLEN", "herald:queue"]).int) ?? 0)
            return queuedAtKill >= 5_000
        }
        #expect(underway, "the enqueue never got going: \(enqueue.output)")
        server.crash()
        let status = enqueue.waitForExit(seconds: 30)
        #expect(status == 69, "\(enqueue.output)")
        let summaryLine = try #require(enqueue.output.split(separator: "\n").first { $0.hasPrefix("{") }, "\(enqueue.output)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(summaryLine.utf8)) as? [String: Any])
        let pushed = try #require(summary["pushed"] as? Int)
        let from = try #require(summary["not_pushed_from_line"] as? Int)
        let pushedLines = try #require(summary["pushed_lines"] as? String)
        let inDoubt = try #require(summary["in_doubt_lines"] as? String)
        #expect(pushedLines.hasPrefix("1,3-"), "line 2 was refused: \(pushedLines)")
        #expect(from < total, "stopped part way: \(summaryLine)")
        #expect(enqueue.output.contains("tail -n +\(from)"), "\(enqueue.output)")
        let doubt = inDoubt.split(separator: "-").compactMap { Int($0) }
        #expect(doubt.count == 2 && doubt[1] == from - 1 && doubt[1] - doubt[0] < 500, "one batch in doubt, just before the first unpushed line: \(inDoubt)")
        // What Redis held just before the kill was sent: reported pushed or in doubt (a reply can die with Redis).
        #expect(from - 2 >= queuedAtKill, "lines before \(from) (one refused) cover the \(queuedAtKill) Redis held")

        // What Redis kept (every acknowledged LPUSH was fsynced): each pushed line, perhaps some of the batch in
        // doubt, nothing from `from` on.
        try server.start()
        let after = try BlockingRedis(url: try RedisURL(parsing: server.url))
        let kept = try after.command(["LRANGE", "herald:queue", "0", "-1"]).array?.compactMap(\.string) ?? []
        let keptLines = Set(kept.compactMap { job -> Int? in
            guard let start = job.range(of: #""id":"loss-"#)?.upperBound, let end = job[start...].firstIndex(of: "\"") else { return nil }
            return Int(job[start..<end])
        })
        #expect(keptLines.count == kept.count, "each line once")
        let confirmed = Set(ranges(pushedLines).flatMap { Array($0) })
        #expect(confirmed.count == pushed)
        #expect(confirmed.isSubset(of: keptLines), "every line reported pushed is queued")
        #expect(keptLines.subtracting(confirmed).allSatisfy { $0 >= doubt[0] && $0 <= doubt[1] }, "anything else queued is in doubt")
        #expect(keptLines.allSatisfy { $0 < from })
        print("enqueue lost Redis: \(pushed) pushed (lines \(pushedLines)), in doubt \(inDoubt) (\(keptLines.count - confirmed.count) of them kept), not pushed from line \(from)")
    }

    private func ranges(_ text: String) -> [ClosedRange<Int>] {
        text.split(separator: ",").compactMap { part in
            let bounds = part.split(separator: "-").compactMap { Int($0) }
            return bounds.count == 2 ? bounds[0]...bounds[1] : bounds.first.map { $0...$0 }
        }
    }
}

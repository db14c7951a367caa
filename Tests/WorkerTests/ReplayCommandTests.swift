import Foundation
import HeraldTestSupport
import RedisQueue
import Testing

/// `herald replay` as an operator runs it, against a real Redis holding an archive the completion script wrote.
@Suite struct ReplayCommandTests {
    @Test(.timeLimit(.minutes(1)))
    func replayListsOnDryRunAndPutsTheChosenJobBackOnItsQueue() throws {
        guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is not built") }
        let server = try RedisServer()
        defer { server.stop() }
        let redis = try BlockingRedis(url: try RedisURL(parsing: server.url))
        let keys = try QueueKeys(prefix: "rp")
        let queueKey = keys.queue(named: "login")
        _ = try redis.command(["LPUSH", queueKey] + (0..<3).map { #"{"id":"code-\#($0)","token":"t","payload":{}}"# })
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w", queueKeys: [queueKey])
        let leases = try queue.claim(max: 3)
        let reasons = ["MaxAttempts:ServiceUnavailable", "MaxAttempts:ServiceUnavailable", "Expired"]
        _ = try queue.complete(zip(leases, reasons).map { lease, reason in
            let id = String(String(decoding: lease.job, as: UTF8.self).dropFirst(7).prefix { $0 != "\"" })
            var completion = JobCompletion(lease: lease, result: ResultEntry(id: id, outcome: .failed, reason: reason, worker: "w"))
            completion.archived = ArchivedJob(id: id, outcome: .failed, reason: reason, queue: lease.queueKey, app: "shop", attempt: 3, job: lease.job)
            return completion
        })
        // The login queue is configured: replay pushes only onto a queue some worker reads.
        let config = makeTemporaryDirectory("herald-replay") + "/herald.json"
        try Data(#"{"redis":{"prefix":"rp","queues":["rp:queue:login"]}}"#.utf8).write(to: URL(fileURLWithPath: config))
        let common = ["replay", "--config", config, "--redis", server.url, "--prefix", "rp"]

        let unfiltered = try HeraldRun.run(herald: herald, common)
        #expect(unfiltered.status == 64 && unfiltered.output.contains("give a filter"))

        let dry = try HeraldRun.run(herald: herald, common + ["--reason", "MaxAttempts", "--dry-run"])
        #expect(dry.status == 0)
        #expect(dry.output.contains("id=code-0") && dry.output.contains("id=code-1") && !dry.output.contains("id=code-2"))
        #expect(dry.output.contains("2 job(s) would be replayed"))
        #expect(try redis.command(["LLEN", queueKey]).int == 0, "a dry run changes nothing")

        let real = try HeraldRun.run(herald: herald, common + ["--reason", "Expired", "--since", "1h"])
        #expect(real.status == 0 && real.output.contains("1 job(s) replayed"), "\(real.output)")
        let queued = try #require(try redis.command(["LRANGE", queueKey, "0", "-1"]).array?.compactMap(\.bytes))
        #expect(queued.count == 1)
        #expect(JobEnvelope.unwrap(queued[0]).id == "code-2" && JobEnvelope.unwrap(queued[0]).attempt == 1)
        #expect(try redis.command(["XLEN", keys.archive]).int == 2)

        let help = try HeraldRun.run(herald: herald, ["replay", "--help"])
        #expect(help.status == 0 && help.output.contains("--dry-run") && help.output.contains("--since <time>"))
        let forwardHelp = try HeraldRun.run(herald: herald, ["forward", "--help"])
        #expect(forwardHelp.status == 0 && forwardHelp.output.contains("--url <url>") && forwardHelp.output.contains("HERALD_FORWARD_HMAC_KEY"))
    }

    /// Issue 30: replay pushed a job onto whatever queue its archive entry named, configured or not, where no
    /// worker read it; and its time options passed Redis's raw error through (exit 1) or took impossible dates.
    @Test(.timeLimit(.minutes(1)))
    func replayRefusesAnUnconfiguredQueueAndBadTimesAsUsageErrors() throws {
        guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is not built") }
        let server = try RedisServer()
        defer { server.stop() }
        let redis = try BlockingRedis(url: try RedisURL(parsing: server.url))
        let keys = try QueueKeys(prefix: "rq")
        let gone = keys.queue(named: "retired")
        _ = try redis.command(["LPUSH", gone, #"{"id":"old-1","token":"t","payload":{}}"#])
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "w", queueKeys: [gone])
        let lease = try #require(try queue.claim(max: 1).first)
        var completion = JobCompletion(lease: lease, result: ResultEntry(id: "old-1", outcome: .failed, reason: "Expired", worker: "w"))
        completion.archived = ArchivedJob(id: "old-1", outcome: .failed, reason: "Expired", queue: gone, app: "shop", attempt: 1, job: lease.job)
        _ = try queue.complete([completion])
        let common = ["replay", "--redis", server.url, "--prefix", "rq"]

        let refused = try HeraldRun.run(herald: herald, common + ["--all"])
        #expect(refused.status == 1, "\(refused.output)")
        #expect(refused.output.contains("nothing replayed") && refused.output.contains("rq:queue:retired (1 job(s))"), "\(refused.output)")
        #expect(try redis.command(["LLEN", gone]).int == 0)
        #expect(try redis.command(["XLEN", keys.archive]).int == 1, "the job stays archived")

        for (arguments, says) in [(["--since", "-5"], "before 1970"), (["--since", "99999d"], "before 1970"),
                                  (["--since", "999999999999999d"], "before 1970"),
                                  (["--since", "2026-02-30T00:00:00Z"], "RFC 3339"), (["--until", "2026-03-01T00:00:00+25:00"], "RFC 3339"),
                                  (["--reason", ""], "--reason needs a reason prefix")] {
            let run = try HeraldRun.run(herald: herald, common + arguments)
            #expect(run.status == 64, "\(arguments): \(run.output)")
            #expect(run.output.contains(says), "\(arguments): \(run.output)")
        }
        let offset = try HeraldRun.run(herald: herald, common + ["--since", "2026-03-01T00:00:00+01:00", "--dry-run"])
        #expect(offset.status == 0 && offset.output.contains("1 job(s) would be replayed"), "a valid offset: \(offset.output)")
        #expect(offset.output.contains("but not onto a queue no worker is configured to read: rq:queue:retired"), "\(offset.output)")
    }
}

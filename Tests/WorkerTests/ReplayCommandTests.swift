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
        let common = ["replay", "--redis", server.url, "--prefix", "rp"]

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
}

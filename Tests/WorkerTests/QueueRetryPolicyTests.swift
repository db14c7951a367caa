import APNs
import PushCore
import RedisQueue
import Testing
@testable import Worker

/// Per-queue retry policies in the delivery core, driven by hand with `CoreRig`.
@Suite struct QueueRetryPolicyTests {
    /// The login-code policy of docs/configuration.md: 5xx retried after 30 s, at most 3 attempts, give up after 2 min.
    static func loginRig() -> CoreRig {
        CoreRig { settings in
            var login = settings.retry
            login.serverErrorBaseSeconds = 30
            login.maxAttempts = 3
            login.giveUpAfterSeconds = 120
            settings.queueRetry = ["login": login]
        }
    }

    /// A job of `queue`: fresh, or a retry envelope as the scheduler marked it (attempt and first-attempt time believed).
    static func lease(_ n: Int, queue: String, attempt: Int? = nil, since: Int64? = nil) -> Lease {
        let job = Array(#"{"id":"j\#(n)","app":"shop","token":"\#(CoreRig.token(n))","payload":{"aps":{"alert":"hi"}}}"#.utf8)
        guard let attempt else { return Lease(id: "l\(n)", queueKey: queue, raw: job, epoch: "e1") }
        let envelope = String(decoding: JobEnvelope.wrap(job: job, attempt: attempt, id: "j\(n)", queue: queue, since: since), as: UTF8.self)
        let marked = envelope.replacingOccurrences(of: #"},"job":"#, with: #","epoch":"e1"},"job":"#, options: [], range: envelope.range(of: #"},"job":"#))
        return Lease(id: "l\(n)", queueKey: queue, raw: Array(marked.utf8), epoch: "e1")
    }

    /// Answers every send with 500 and returns the completions written, by job id.
    static func answerAllWith500(_ rig: CoreRig, _ leases: [Lease]) -> [String: JobCompletion] {
        rig.start()
        rig.answerClaim(leases)
        // The first job is the destination's probe; the others follow once it is answered.
        var sent = rig.takeSends()
        while !sent.isEmpty {
            for job in sent { rig.answer(job, status: 500, reason: "InternalServerError") }
            sent = rig.takeSends()
        }
        rig.advance(milliseconds: 10)
        let completions = rig.batches.flatMap(\.completions)
        return Dictionary(completions.map { ($0.result!.id, $0) }, uniquingKeysWith: { a, _ in a })
    }

    @Test func aQueuesOwnBackOffDecidesItsJobsRetryWhileOtherQueuesKeepTheDefault() throws {
        let rig = Self.loginRig()
        let wall = rig.clock.wallMillis
        let done = Self.answerAllWith500(rig, [Self.lease(1, queue: "login"), Self.lease(2, queue: "q")])
        let login = try #require(done["j1"]?.retry)
        let other = try #require(done["j2"]?.retry)
        #expect(login.dueAt == wall + 30_000, "the login queue's 30 s")
        #expect(other.dueAt == wall + 900_000, "the card's 15 minutes for every other queue")
        #expect(JobEnvelope.unwrap(login.envelope).since == wall, "the first attempt's time travels with the retry")
    }

    @Test func aQueuesMaxAttemptsFailsItsJobsEarlierAndArchivesThem() throws {
        let rig = Self.loginRig()
        let wall = rig.clock.wallMillis
        let done = Self.answerAllWith500(rig, [Self.lease(1, queue: "login", attempt: 3, since: wall - 5_000),
                                              Self.lease(2, queue: "q", attempt: 3, since: wall - 5_000)])
        let login = try #require(done["j1"])
        #expect(login.result?.outcome == .failed)
        #expect(login.result?.reason == "MaxAttempts:InternalServerError")
        #expect(login.archived?.reason == "MaxAttempts:InternalServerError")
        #expect(login.archived?.queue == "login")
        #expect(login.archived?.job == login.lease.job, "the producer's bytes, without the retry envelope")
        #expect(done["j2"]?.result?.outcome == .retrying, "8 attempts by default")
        #expect(done["j2"]?.archived == nil)
    }

    @Test func aQueuesGiveUpLimitFailsARetryThatWouldFallPastItButNotOneInside() throws {
        let rig = Self.loginRig()
        let wall = rig.clock.wallMillis
        // Attempt 2 retries after 60 s: 100 s + 60 s is past the 2 minutes; 10 s + 60 s is not.
        let done = Self.answerAllWith500(rig, [Self.lease(1, queue: "login", attempt: 2, since: wall - 100_000),
                                              Self.lease(2, queue: "login", attempt: 2, since: wall - 10_000),
                                              Self.lease(3, queue: "q", attempt: 2, since: wall - 100_000_000)])
        #expect(done["j1"]?.result?.outcome == .failed)
        #expect(done["j1"]?.result?.reason == "GaveUp:InternalServerError")
        let kept = try #require(done["j2"]?.retry)
        #expect(kept.dueAt == wall + 60_000)
        #expect(JobEnvelope.unwrap(kept.envelope).since == wall - 10_000, "the first attempt's time is kept, not reset")
        #expect(done["j3"]?.result?.outcome == .retrying, "the default policy has no give-up limit")
    }

    /// Issue 30: the limit compared a now truncated to whole seconds with a first attempt in milliseconds, so a
    /// retry that falls 500 ms past the limit, 900 ms into a second, was retried instead of giving up.
    @Test func theGiveUpLimitIsComparedToTheMillisecond() throws {
        let rig = Self.loginRig()
        rig.clock.advance(milliseconds: 900)
        let wall = rig.clock.wallMillis
        // Attempt 2 retries after 60 s: 60.5 s + 60 s is 500 ms past the 2 minutes; 59.5 s + 60 s is 500 ms inside.
        let done = Self.answerAllWith500(rig, [Self.lease(1, queue: "login", attempt: 2, since: wall - 60_500),
                                              Self.lease(2, queue: "login", attempt: 2, since: wall - 59_500)])
        #expect(done["j1"]?.result?.reason == "GaveUp:InternalServerError")
        #expect(done["j2"]?.result?.outcome == .retrying)
    }

    @Test func aDroppedTokenIsArchivedAndADeliveredJobIsNotNorAnOversizedOne() throws {
        let rig = CoreRig()
        rig.start()
        // An unknown field makes job 3 larger than the archive keeps; it is dropped all the same.
        let padding = #","note":""# + String(repeating: "x", count: ArchivedJob.maxJobBytes) + "\""
        rig.answerClaim([rig.job(1), rig.job(2), rig.job(3, extra: padding)])
        let probe = rig.takeSends()
        rig.answer(probe[0], status: 200)
        for job in rig.takeSends() { rig.answer(job, status: 410, reason: "Unregistered") }
        rig.advance(milliseconds: 10)
        let completions = rig.batches.flatMap(\.completions)
        #expect(completions.count == 3)
        #expect(completions.first { $0.result?.id == "j1" }?.archived == nil)
        let oversized = try #require(completions.first { $0.result?.id == "j3" })
        #expect(oversized.result?.outcome == .tokenDropped && oversized.archived == nil)
        let dropped = try #require(completions.first { $0.result?.id == "j2" }?.archived)
        #expect(dropped.outcome == .tokenDropped && dropped.reason == "Unregistered" && dropped.app == "shop")
    }
}

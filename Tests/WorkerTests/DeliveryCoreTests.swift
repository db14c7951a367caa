import APNs
import HeraldProviders
import HeraldTestSupport
import PushCore
import RedisQueue
import Testing
@testable import Worker

/// Drives a `DeliveryCore` by hand: no loop, no Redis, no APNs. Collects what the core asks for so a test can
/// answer claims, sends and batches the way the real source and sender would.
final class CoreRig {
    let clock = ManualClock()
    let core: DeliveryCore
    var claims: [Int] = []
    var sends: [JobAttempt] = []
    var batches: [RecordBatch] = []
    var reloads: [Int] = []
    var logs: [(LogLevel, String)] = []
    var drained: [RecordBatch?] = []
    var onceBatches: [OnceBatch] = []
    var budgetBatches: [BudgetBatch] = []
    var connects: [Destination] = []
    private var leaseCounter = 0

    static let apps: [Configuration.AppSettings] = {
        var both = Configuration.AppSettings(name: "both", bundleID: "com.example.both")
        both.environmentFallback = true
        var single = Configuration.AppSettings(name: "single", bundleID: "com.example.single")
        single.environmentFallback = true
        single.environments = ["production"]
        return [Configuration.AppSettings(name: "shop", bundleID: "com.example.shop"),
                Configuration.AppSettings(name: "news", bundleID: "com.example.news"), both, single]
    }()

    init(apps: [Configuration.AppSettings] = CoreRig.apps, _ adjust: (inout DeliverySettings) -> Void = { _ in }) {
        var settings = DeliverySettings(workerID: "w1")
        settings.providers = heraldProviders
        settings.maxInFlight = 100
        settings.claimBatch = 10
        settings.flushBatch = 1000
        settings.retry.jitterFraction = 0
        settings.idPrefix = "t"
        adjust(&settings)
        core = DeliveryCore(settings: settings, apps: apps, clock: clock, random: { 0.5 })
    }

    /// Takes the core's actions into the lists above, the way the pipeline would run them.
    @discardableResult
    func drain() -> [DeliveryAction] {
        let actions = core.takeActions()
        for action in actions {
            switch action {
            case .claim(let n): claims.append(n)
            case .send(let jobs): sends.append(contentsOf: jobs)
            case .record(let batch): batches.append(batch)
            case .reloadCredentials(let app): reloads.append(app)
            case .log(let level, let message, _): logs.append((level, message))
            case .drained(let final): drained.append(final)
            case .claimOnce(let batch): onceBatches.append(batch)
            case .checkBudgets(let batch): budgetBatches.append(batch)
            case .connectNow(let destination): connects.append(destination)
            }
        }
        return actions
    }

    func start() {
        core.start()
        drain()
    }

    static func token(_ n: Int) -> String { String(repeating: "0", count: 64 - String(n, radix: 16).count) + String(n, radix: 16) }

    func lease(_ json: String) -> Lease {
        leaseCounter += 1
        return Lease(id: "l\(leaseCounter)", queueKey: "q", raw: Array(json.utf8))
    }

    func job(_ n: Int, app: String = "shop", environment: String = "production", extra: String = "") -> Lease {
        lease(#"{"id":"j\#(n)","app":"\#(app)","environment":"\#(environment)","token":"\#(Self.token(n))","payload":{"aps":{"alert":"hi"}}\#(extra)}"#)
    }

    /// Answers the oldest outstanding claim with these leases.
    func answerClaim(_ leases: [Lease]) {
        let requested = claims.removeFirst()
        core.claimed(leases, requested: requested)
        drain()
    }

    func answer(_ job: JobAttempt, status: Int, reason: String? = nil, connection: Int = 1) {
        core.answered(job, PushOutcome(result: .response(APNsResponse(status: status, reason: reason.map(APNsReason.init))), connectionID: connection))
        drain()
    }

    func fail(_ job: JobAttempt, _ failure: TransportFailure) {
        core.answered(job, PushOutcome(result: .transport(failure), connectionID: 0))
        drain()
    }

    /// A started rig that sent one job to each environment of "shop": `down`'s failed to connect (that destination
    /// is paused now), the other's was delivered; results recorded, one claim outstanding.
    static func withOneEnvironmentDown(_ down: APNsEnvironment, adjust: (inout DeliverySettings) -> Void = { _ in }) -> CoreRig {
        let rig = CoreRig(adjust)
        rig.start()
        rig.answerClaim([rig.job(1), rig.job(2, environment: "sandbox")])
        let sends = rig.takeSends()
        rig.fail(sends.first { $0.destination.environment == down }!, .connectionFailed("refused"))
        rig.answer(sends.first { $0.destination.environment != down }!, status: 200)
        rig.recordAll()
        return rig
    }

    /// A proven destination, then three sends to it: two fail to connect (the first pauses the destination), the
    /// third's connection is lost (a resend, one attempt spent, which meets the pause).
    func threeSendsMeetAnOutage() {
        answerClaim([job(1)])
        answer(takeSends()[0], status: 200)
        answerClaim([job(2), job(3), job(4)])
        let sends = takeSends()
        #expect(sends.count == 3)
        fail(sends[0], .connectionFailed("connect: Connection refused"))
        fail(sends[1], .connectionFailed("connect: Connection refused"))
        fail(sends[2], .outcomeUnknown)
    }

    /// A started rig whose first job was delivered and flushed: its one results batch, taken, not yet answered.
    static func withOneDeliveredBatch() -> (CoreRig, RecordBatch) {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([rig.job(1)])
        rig.answer(rig.takeSends()[0], status: 200)
        rig.advance(milliseconds: 10)
        return (rig, rig.batches.removeFirst())
    }

    /// Takes the sends so far (the test answers them).
    func takeSends() -> [JobAttempt] {
        defer { sends.removeAll() }
        return sends
    }

    func advance(milliseconds: Int64) {
        clock.advance(milliseconds: milliseconds)
        core.tick()
        drain()
    }

    /// Flushes pending results (the interval passes) and acknowledges every batch as applied.
    func recordAll() {
        advance(milliseconds: 10)
        let taken = batches
        batches.removeAll()
        for batch in taken {
            var report = CompletionReport()
            report.applied = batch.completions.count
            core.recorded(batch, report)
            drain()
        }
    }

    var results: [ResultEntry] = []
    /// Records everything and keeps the result entries written.
    func recordAllKeepingResults() {
        advance(milliseconds: 10)
        results += batches.flatMap { $0.completions.flatMap(\.results) }
        let taken = batches
        batches.removeAll()
        for batch in taken {
            core.recorded(batch, CompletionReport())
            drain()
        }
    }
}

@Suite struct DeliveryCoreTests {
    @Test func claimsOneBatchAtATimeWithinMaxInFlight() {
        let rig = CoreRig { $0.maxInFlight = 25; $0.claimBatch = 10 }
        rig.start()
        #expect(rig.claims == [10])
        rig.answerClaim((1...10).map { rig.job($0) })
        #expect(rig.claims == [10], "a full claim asks again at once")
        rig.answerClaim((11...20).map { rig.job($0) })
        // 20 in flight: room 5 is below the threshold (min(batch, max/2) = 10), so no claim until results free room.
        #expect(rig.claims.isEmpty)
        #expect(rig.core.inFlight == 20)
        while !rig.sends.isEmpty {
            for job in rig.takeSends() { rig.answer(job, status: 200) }
        }
        #expect(rig.core.inFlight == 20, "answered but not yet recorded: still in flight")
        rig.recordAll()
        #expect(rig.core.inFlight == 10, "the claim that room made for is reserved")
        #expect(rig.claims == [10])
    }

    @Test func anEmptyClaimBacksOffAndClaimsAgainWhenDue() {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([])
        #expect(rig.claims.isEmpty)
        #expect(rig.core.nextWake == rig.clock.monotonicNanos + 2_000_000)
        rig.advance(milliseconds: 1)
        #expect(rig.claims.isEmpty)
        rig.advance(milliseconds: 1)
        #expect(rig.claims == [10])
        rig.answerClaim([])
        rig.advance(milliseconds: 3)
        #expect(rig.claims.isEmpty, "the back-off doubled to 4 ms")
        rig.advance(milliseconds: 1)
        #expect(rig.claims == [10])
    }

    @Test func aFailedClaimIsRetriedLaterAndLoggedOncePerInterval() {
        let rig = CoreRig()
        rig.start()
        for _ in 0..<3 {
            let requested = rig.claims.removeFirst()
            rig.core.claimFailed(JobSourceFailure("connection lost", maybeApplied: true), requested: requested)
            rig.drain()
            #expect(rig.core.inFlight == 0)
            rig.advance(milliseconds: 499)
            #expect(rig.claims.isEmpty)
            rig.advance(milliseconds: 1)
            #expect(rig.claims == [10])
        }
        #expect(rig.logs.filter { $0.1 == "claim failed; retrying" }.count == 1)
    }

    @Test func aMalformedJobIsRejectedWithItsReasonAndDeadLettered() {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([rig.lease(#"{"id":"bad","app":"shop","payload":{"aps":{}}}"#), rig.lease("not json"),
                         rig.job(1, app: "nope"), rig.job(2, environment: "sandbox", extra: #","topic":"com.other.app""#)])
        #expect(rig.sends.isEmpty)
        rig.advance(milliseconds: 10)
        let completions = rig.batches.flatMap(\.completions)
        #expect(completions.count == 4)
        #expect(completions.allSatisfy { $0.result?.outcome == .rejected && $0.deadLetter != nil && $0.retry == nil })
        let reasons = completions.compactMap(\.result?.reason)
        #expect(reasons[0].hasPrefix("missing_token") || reasons[0].contains("token"), "\(reasons[0])")
        #expect(reasons[2].hasPrefix("UnknownApp"))
        #expect(reasons[3].hasPrefix("BadTopic") || reasons[3].hasPrefix("TopicDisallowed"), "\(reasons[3])")
        #expect(completions[1].result?.id.hasPrefix("t-") == true, "a job without a readable id gets a worker-made one")
        #expect(completions[2].result?.id == "j1")
        #expect(rig.core.counters.rejected == 4)
    }

    /// Issue 14's first finding: a malformed job whose `id` is readable got a worker-made id in its result.
    @Test(arguments: [
        (#"{"id":"order-7","topic":"com.example.shop"}"#, "missing_token"),
        (#"{"id":"order-7","token":"zz","payload":{}}"#, "bad_token"),
        (#"{"id":"order-7","token":"aabb"}"#, "missing_payload"),
        (#"{"id":"order-7","token":"aabb","payload":[]}"#, "payload_not_object"),
        (#"{"id":"order-7","token":"aabb","payload":{},"environment":"staging"}"#, "bad_environment"),
        (#"{"id":"order-7","token":"aabb","payload":{},"push_type":"fax"}"#, "unknown_push_type"),
        (#"{"id":"order-7","token":"aabb","payload":{},"topic":7}"#, "wrong_type"),
        (#"{"id":"order-7","token":"aabb","payload":{},"priority":99999999999}"#, "out_of_range"),
        (#"{"id":"order-7","token":"aabb","token":"ccdd","payload":{}}"#, "duplicate_field"),
        (#"{"id":"order-7","token":"aabb","payload":{"aps":{}}"#, "not_json"),
        (#"{"id":7,"payload":{}}"#, "missing_token"),
        (#"{"id":"order-7","token":"aabb","payload":{},"deliver_at":"soon"}"#, "bad_deliver_at"),
        (#"{"id":"order-7","tokens":["aabb","no"],"payload":{}}"#, "bad_tokens"),
        (#"{"id":"order-7","tokens":["# + Array(repeating: #""aabb""#, count: 10_001).joined(separator: ",") + #"],"payload":{}}"#, "too_many_tokens"),
        // Readable jobs that APNs would refuse, or that name no usable app: the same id in result and dead letter.
        (#"{"id":"order-7","token":"aabb","payload":{},"app":"nope"}"#, "UnknownApp"),
        (#"{"id":"order-7","token":"aabb","payload":{},"app":"single","environment":"sandbox"}"#, "BadEnvironment"),
        (#"{"id":"order-7","token":"aabb","payload":{},"app":"shop","push_type":"mdm"}"#, "MissingTopic"),
        (#"{"id":"order-7","token":"aabb","payload":{},"app":"shop","topic":"com.other"}"#, "BadTopic"),
        (#"{"id":"order-7","token":"aabb","payload":{},"app":"shop","priority":7}"#, "BadPriority"),
        (#"{"id":"order-7","token":"aabb","payload":{},"app":"shop","collapse_id":"\#(String(repeating: "c", count: 65))"}"#, "BadCollapseId"),
        (#"{"id":"order-7","token":"aabb","payload":{},"app":"shop","apns_id":"not-a-uuid"}"#, "BadMessageId"),
        (#"{"id":"order-7","token":"aabb","payload":{},"app":"shop","expiration":-1}"#, "BadExpirationDate"),
        (#"{"id":"order-7","token":"aabb","payload":{"a":"\#(String(repeating: "x", count: 4100))"},"app":"shop"}"#, "PayloadTooLarge"),
    ])
    func aRejectedJobKeepsTheProducersIDInItsResultAndDeadLetter(job: String, code: String) throws {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([rig.lease(job)])
        rig.advance(milliseconds: 10)
        let completion = rig.batches.first?.completions.first
        let result = completion?.result
        let expectedID = job.contains(#""id":7"#) ? "7" : "order-7"
        #expect(result?.outcome == .rejected)
        #expect(result?.reason?.hasPrefix(code + ":") == true, "\(result?.reason ?? "")")
        #expect(result?.id == expectedID)
        let dead = try #require(completion?.deadLetter.flatMap(DeadLetterEntry.decode))
        #expect(dead.id == expectedID, "the dead letter names the producer's id too")
        #expect(dead.reason == result?.reason)
        #expect(dead.job == Array(job.utf8))
    }

    @Test func aJobWithoutAReadableIDGetsAWorkerMadeOne() {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([rig.lease(#"[1,2]"#), rig.lease(#"{"token":"aabb","id":{"x":1}}"#), rig.lease(#"{"token": ,"id":"late"}"#)])
        rig.advance(milliseconds: 10)
        let completions = rig.batches.flatMap(\.completions)
        #expect(completions.compactMap(\.result?.id) == ["t-1", "t-2", "t-3"])
        #expect(completions.compactMap { $0.deadLetter.flatMap(DeadLetterEntry.decode)?.id } == ["t-1", "t-2", "t-3"],
                "the dead letter carries the same worker-made id as the result")
    }

    @Test func resultsGoOutWhenTheBatchFillsOrTheIntervalPasses() {
        let rig = CoreRig { $0.flushBatch = 3; $0.flushIntervalMilliseconds = 5 }
        rig.start()
        rig.answerClaim((1...4).map { rig.job($0) })
        let jobs = rig.takeSends()
        #expect(jobs.count == 1, "the first job to a destination is the probe")
        rig.answer(jobs[0], status: 200)
        let rest = rig.takeSends()
        #expect(rest.count == 3)
        for job in rest.prefix(2) { rig.answer(job, status: 200) }
        #expect(rig.batches.count == 1, "three results fill a batch")
        #expect(rig.batches[0].completions.count == 3)
        rig.answer(rest[2], status: 200)
        #expect(rig.batches.count == 1)
        rig.clock.advance(milliseconds: 4)
        rig.core.tick()
        rig.drain()
        #expect(rig.batches.count == 1)
        rig.advance(milliseconds: 1)
        #expect(rig.batches.count == 2, "the fourth waits at most the flush interval")
    }

    @Test func theProbeGoesAloneAndItsAnswerReleasesTheOthers() {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([rig.job(1), rig.job(2), rig.job(3, app: "news")])
        let first = rig.takeSends()
        #expect(first.map(\.id) == ["j1", "j3"], "one probe per destination")
        rig.answer(first[0], status: 200)
        #expect(rig.takeSends().map(\.id) == ["j2"])
        rig.answerClaim([rig.job(4)])
        #expect(rig.takeSends().map(\.id) == ["j4"], "a proven destination sends at once")
    }

    @Test func aRefusedCredentialPausesTheDestinationWithoutSpendingAttemptsThenReloads() {
        let rig = CoreRig { $0.retry.configurationPauseSeconds = 60 }
        rig.start()
        rig.answerClaim([rig.job(1), rig.job(2), rig.job(3)])
        let probe = rig.takeSends()
        #expect(probe.count == 1)
        rig.answer(probe[0], status: 403, reason: "InvalidProviderToken")
        #expect(rig.takeSends().isEmpty, "the waiting jobs are parked, not sent")
        rig.advance(milliseconds: 10)
        let parked = rig.batches.flatMap(\.completions)
        #expect(parked.count == 3)
        for completion in parked {
            #expect(completion.result?.outcome == .retrying)
            #expect(completion.result?.reason == "AppPaused: InvalidProviderToken")
            #expect(completion.result?.attempt == 1)
            let envelope = JobEnvelope.unwrap(completion.retry!.envelope)
            #expect(envelope.attempt == 1, "a pause spends no attempt")
            #expect(completion.retry!.dueAt >= rig.clock.wallMillis + 59_000)
        }
        #expect(rig.logs.filter { $0.1 == "app paused: credential rejected" }.count == 1)
        rig.recordAll()
        rig.answerClaim([])
        rig.advance(milliseconds: 1_000)
        #expect(rig.claims.isEmpty, "every destination seen is paused: jobs stay in Redis")
        rig.advance(milliseconds: 60_000)
        #expect(rig.reloads == [0])
        rig.core.reloaded(app: 0, error: nil)
        rig.drain()
        #expect(rig.claims == [10])
        rig.answerClaim([rig.job(4), rig.job(5)])
        #expect(rig.takeSends().map(\.id) == ["j4"], "after the pause one probe goes first again")
    }

    @Test func aCredentialThatStillFailsToLoadPausesAgain() {
        let rig = CoreRig { $0.retry.configurationPauseSeconds = 5 }
        rig.start()
        rig.answerClaim([rig.job(1)])
        rig.answer(rig.takeSends()[0], status: 403, reason: "InvalidProviderToken")
        rig.advance(milliseconds: 5_000)
        #expect(rig.reloads == [0])
        rig.core.reloaded(app: 0, error: "no such file")
        rig.drain()
        #expect(rig.logs.contains { $0.1 == "app paused: credential reload failed" })
        rig.advance(milliseconds: 4_000)
        #expect(rig.reloads == [0])
        rig.advance(milliseconds: 1_000)
        #expect(rig.reloads == [0, 0])
    }

    @Test func anExpiredProbeThatMeetsACredentialErrorProvesNothing() {
        let rig = CoreRig()
        rig.start()
        let soon = rig.clock.wallMillis / 1000 + 10  // expires long before a 60 s pause would end
        rig.answerClaim([rig.job(1, extra: #","expiration":\#(soon)"#), rig.job(2)])
        let probe = rig.takeSends()
        #expect(probe.map(\.id) == ["j1"])
        rig.answer(probe[0], status: 403, reason: "InvalidProviderToken")
        rig.advance(milliseconds: 10)
        #expect(rig.batches.flatMap(\.completions).first?.result?.reason == "Expired")
        #expect(rig.takeSends().map(\.id) == ["j2"], "the next job is a probe again, not a proven send")
    }

    /// Issue 54: a token refused before processing (ExpiredProviderToken) is resent on a newer connection with a
    /// fresh token and spends no attempt; a lost connection (the send may have been processed) spends one.
    @Test func anExpiredTokenResendSpendsNoAttemptButALostConnectionDoes() {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([rig.job(1)])
        let job = rig.takeSends()[0]
        rig.answer(job, status: 403, reason: "ExpiredProviderToken", connection: 7)
        let again = rig.takeSends()
        #expect(again.count == 1 && again[0] === job)
        #expect(job.attempt == 1)
        #expect(job.afterConnection == 7)
        rig.fail(job, .outcomeUnknown)
        #expect(job.attempt == 2)
        rig.answer(rig.takeSends()[0], status: 200)
        rig.recordAllKeepingResults()
        #expect(rig.results.map(\.outcome) == [.delivered])
        #expect(rig.results[0].attempt == 2)
        #expect(rig.core.counters.resent == 2)
    }

    /// Refresh resends spend no attempt, so they have their own bound: a provider that refuses every fresh
    /// token (a clock an hour off, a revoked key) pauses the app as a refused credential after three, and the
    /// job waits with its attempts untouched, instead of resending for ever.
    @Test func tokensRefusedAgainAndAgainPauseTheAppWithoutSpendingAttempts() {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([rig.job(1)])
        for connection in 1...2 {
            let job = rig.takeSends()[0]
            rig.answer(job, status: 403, reason: "ExpiredProviderToken", connection: connection)
        }
        let job = rig.takeSends()[0]
        rig.answer(job, status: 403, reason: "ExpiredProviderToken", connection: 3)
        #expect(rig.takeSends().isEmpty, "the third refusal in a row pauses the app")
        #expect(rig.logs.contains { $0.0 == .error && $0.1 == "app paused: credential rejected" })
        rig.recordAllKeepingResults()
        let parked = rig.results.first
        #expect(parked?.outcome == .retrying && parked?.attempt == 1, "\(String(describing: parked))")
        #expect(parked?.reason == "AppPaused: ExpiredProviderToken after 3 credential refreshes", "\(parked?.reason ?? "none")")
    }

    @Test func unprocessedSendsAreNotAttemptsButAServerThatProcessesNothingPausesTheDestination() {
        let rig = CoreRig { $0.retry.maxAttempts = 2; $0.unprocessedResendsBeforeOutage = 3 }
        rig.start()
        rig.answerClaim([rig.job(1)])
        var job = rig.takeSends()[0]
        for _ in 0..<2 {
            rig.fail(job, .notProcessed)
            job = rig.takeSends()[0]
        }
        #expect(job.attempt == 1, "refused streams and GOAWAYs spend no attempt, even past max_attempts")
        rig.fail(job, .notProcessed)
        #expect(rig.takeSends().isEmpty)
        rig.recordAllKeepingResults()
        #expect(rig.results.count == 1)
        #expect(rig.results[0].outcome == .retrying)
        #expect(rig.results[0].reason?.hasPrefix("Unavailable: NotProcessed") == true)
        #expect(rig.results[0].attempt == 1)
        #expect(rig.core.counters.outagePauses == 1)
        #expect(rig.core.counters.failed == 0)
    }

    /// Found by the FlakyAPNs suite under ThreadSanitizer: one job met a GOAWAY and two refused streams in a row
    /// while the server answered every other job, and its destination was paused as an outage (a warning, the
    /// whole destination parked for a second). Refusals count towards an outage only with nothing else answered.
    @Test func refusalsWhileOtherJobsAreAnsweredDoNotPauseTheDestination() {
        let rig = CoreRig { $0.unprocessedResendsBeforeOutage = 3 }
        rig.start()
        rig.answerClaim([rig.job(1)])
        rig.answer(rig.takeSends()[0], status: 200)
        rig.answerClaim((2...7).map { rig.job($0) })
        var sent = rig.takeSends()
        var unlucky = sent.removeFirst()
        for other in sent.prefix(5) {
            rig.fail(unlucky, .notProcessed)
            unlucky = rig.takeSends().first { $0 === unlucky }!
            rig.answer(other, status: 200)
        }
        #expect(unlucky.unprocessedResends == 1)
        rig.answer(unlucky, status: 200)
        rig.recordAllKeepingResults()
        #expect(rig.core.counters.outagePauses == 0)
        #expect(rig.results.filter { $0.outcome == .delivered }.count == 7)
        #expect(rig.results.allSatisfy { $0.outcome == .delivered })
    }

    /// The reproduction of issue 18: APNs unreachable for longer than the whole retry schedule failed every job
    /// `MaxAttempts:ConnectionFailed`. Now nothing fails, no attempt is spent, claims stop while it lasts, the
    /// pause backs off, and everything is delivered once APNs is back.
    @Test func anOutageLongerThanTheRetryScheduleFailsNothing() {
        let rig = CoreRig {
            $0.retry.maxAttempts = 2
            $0.retry.throttleBaseSeconds = 1
            $0.retry.throttleCapSeconds = 1
            $0.retry.outagePauseSeconds = 1
            $0.retry.outagePauseCapSeconds = 8
        }
        rig.start()
        var pauses: [Int64] = []
        var pending = (1...5).map { rig.job($0) }
        var elapsed: Int64 = 0
        // Ten minutes of outage: every claimed job comes back "connection failed" and is parked.
        while elapsed < 600_000 {
            if !rig.claims.isEmpty {
                rig.answerClaim(pending)
                pending = []
            }
            for job in rig.takeSends() { rig.fail(job, .connectionFailed("connect: Connection refused")) }
            let before = rig.clock.monotonicNanos
            rig.recordAllKeepingResults()
            guard let wake = rig.core.nextWake else { Issue.record("no wake-up during an outage"); return }
            let step = Int64((wake - before) / 1_000_000) + 1
            pauses.append(step)
            rig.advance(milliseconds: step)
            elapsed += step
            // A parked job comes back from the retry set with the same attempt; one is enough to probe with.
            if !rig.claims.isEmpty && pending.isEmpty { pending = [rig.job(100 + pauses.count)] }
        }
        #expect(rig.results.allSatisfy { $0.outcome == .retrying && $0.attempt == 1 }, "\(Set(rig.results.map(\.outcome)))")
        #expect(rig.results.allSatisfy { $0.reason?.hasPrefix("Unavailable: ConnectionFailed") == true })
        #expect(rig.core.counters.failed == 0)
        #expect(pauses.max()! <= 8_011, "the pause backs off to its cap, no further: \(pauses.max()!)")
        #expect(rig.core.counters.outagePauses >= 60, "about one probe per pause over ten minutes: \(rig.core.counters.outagePauses)")
        // APNs is back: the next probe is answered and every job goes out.
        if rig.claims.isEmpty { rig.advance(milliseconds: 8_000) }
        rig.answerClaim([rig.job(1), rig.job(2), rig.job(3)])
        let probe = rig.takeSends()
        #expect(probe.count == 1)
        rig.answer(probe[0], status: 200)
        let rest = rig.takeSends()
        #expect(rest.count == 2)
        for job in rest { rig.answer(job, status: 200) }
        rig.results.removeAll()
        rig.recordAllKeepingResults()
        #expect(rig.results.map(\.outcome) == [.delivered, .delivered, .delivered])
        #expect(rig.results.allSatisfy { $0.attempt == 1 })
    }

    /// Issue 52: after an outage pause with nothing left to send, nothing probes the destination, and
    /// `herald_app_paused` fell to 0 while the provider was still down. It stays an outage until an answer.
    @Test func aDestinationStaysDownAfterItsPauseUntilAnAnswerProvesItReachable() {
        let rig = CoreRig { $0.retry.outagePauseSeconds = 2 }
        rig.start()
        rig.answerClaim([rig.job(1)])
        rig.fail(rig.takeSends()[0], .connectionFailed("connect: Connection refused"))
        rig.recordAll()
        #expect(rig.core.pausedDestinations.map(\.kind) == ["outage"])
        rig.advance(milliseconds: 2_500)
        #expect(rig.core.pausedDestinations.map(\.kind) == ["outage"], "the pause is over, but nothing has reached the provider since")
        if rig.claims.isEmpty { rig.advance(milliseconds: 300) }
        rig.answerClaim([rig.job(2)])
        rig.answer(rig.takeSends()[0], status: 200)
        #expect(rig.core.pausedDestinations.isEmpty, "an answer proves it reachable")
    }

    /// Issue 30, item 13: after an outage the probes met a pool still waiting out its own reconnect back-off
    /// (grown to 42-54 s), so the first send came long after `outage_pause_cap_seconds`. Every probe now asks the
    /// sender for a connection attempt at once, before the probe itself; ordinary sends to a proven destination do not.
    @Test func aProbeAfterAnOutagePauseAsksForAConnectionAtOnce() {
        let rig = CoreRig { $0.retry.outagePauseSeconds = 2 }
        rig.start()
        rig.answerClaim([rig.job(1), rig.job(2)])
        let destination = Destination(app: 0, environment: .production)
        #expect(rig.connects == [destination], "the first probe")
        rig.fail(rig.takeSends()[0], .connectionFailed("connect: Connection refused"))
        #expect(rig.takeSends().isEmpty, "both jobs parked")
        rig.recordAll()
        rig.connects.removeAll()
        rig.advance(milliseconds: 1_999)
        #expect(rig.connects.isEmpty && rig.takeSends().isEmpty, "nothing before the pause ends")
        rig.advance(milliseconds: 1)
        if rig.claims.isEmpty { rig.advance(milliseconds: 300) }
        rig.answerClaim([rig.job(3), rig.job(4)])
        let probe = rig.takeSends()
        #expect(probe.map(\.id) == ["j3"], "one probe after the pause")
        #expect(rig.connects == [destination], "and a connection attempt for it")
        rig.answer(probe[0], status: 200)
        #expect(rig.takeSends().map(\.id) == ["j4"], "the job that waited for the probe goes out")
        #expect(rig.connects == [destination], "no connection attempt forced for ordinary sends")
    }

    /// A job that met a pause of the same kind it would have started says it once; one whose own send failed
    /// otherwise (here: lost) and whose resend met the outage says both.
    @Test func aParkedJobsReasonNamesItsOwnFailureOnlyWhenThePauseSaysSomethingElse() {
        let rig = CoreRig()
        rig.start()
        rig.threeSendsMeetAnOutage()
        let reasons = Dictionary(rig.flushResults().map { ($0.id, $0.reason ?? "") }) { _, last in last }
        #expect(reasons["j2"] == "Unavailable: ConnectionFailed: connect: Connection refused")
        #expect(reasons["j3"] == "Unavailable: ConnectionFailed: connect: Connection refused")
        #expect(reasons["j4"] == "Unavailable: ConnectionFailed: connect: Connection refused (after ConnectionLost)")
    }

    /// Issue 30, item 14: with APNs connections flapping, one worker sat in a 14 s back-off holding 1,271 claimed
    /// jobs while another was idle. Jobs an outage pause holds go back to the head of their queue at once (a
    /// `retrying` entry due now), not to the retry set until the pause ends: as claimed when this worker spent
    /// nothing on them, as their envelope with the attempt a resend after a lost answer spent; none spends one more.
    @Test func jobsAnOutagePauseHoldsGoBackToTheirQueueAtOnceWithNoAttemptSpent() {
        let rig = CoreRig { $0.retry.outagePauseSeconds = 30; $0.retry.outagePauseCapSeconds = 60 }
        rig.start()
        rig.threeSendsMeetAnOutage()
        #expect(rig.takeSends().isEmpty, "nothing sent while the pause lasts")
        let wall = rig.clock.wallMillis
        rig.advance(milliseconds: 10)
        let completions = Dictionary(rig.batches.flatMap(\.completions).map { ($0.result!.id, $0) }) { _, last in last }
        for id in ["j2", "j3"] {
            let completion = completions[id]
            #expect(completion?.handedBack == true && completion?.handedBackAsClaimed == true, "\(id) goes back to its queue as claimed")
            #expect(completion?.once == nil, "the idempotency key is left to name the lease that is gone")
            #expect(completion?.result?.outcome == .retrying && completion?.result?.attempt == 1 && completion?.result?.retryAt == wall)
            #expect(completion?.result?.reason?.hasPrefix("Unavailable: ConnectionFailed") == true)
        }
        let resent = completions["j4"]
        #expect(resent?.handedBack == true && resent?.handedBackAsClaimed == false, "an attempt was spent on it: back as its envelope")
        #expect(resent?.result?.attempt == 2 && resent?.result?.retryAt == wall)
        #expect(resent?.retry.map { Lease(id: "x", queueKey: "q", raw: $0.envelope).jobID } == "j4")
        #expect(rig.core.counters.handedBack == 3 && rig.core.counters.outagePauses == 1)
    }

    /// Issue 54: with one destination down and another healthy, claims go on and the down one's jobs came back
    /// to this worker again and again, each time handed back with a new `retrying` entry (~110 a second for ~40
    /// jobs). Now a pause hands a job back once; met again within the same pause it waits out the pause in the
    /// retry set, quietly (a second, then two, four... up to the pause's end, so another worker that reaches the
    /// destination still gets it soon); the next pause may hand it back once more. One entry per job per pause.
    @Test func aJobHandedBackOnceWaitsOutThePauseQuietlyWhenItComesBackWithinIt() throws {
        let rig = CoreRig.withOneEnvironmentDown(.production)
        func completions(of id: String) -> [JobCompletion] {
            rig.advance(milliseconds: 10)
            let found = rig.batches.flatMap(\.completions).filter {
                $0.result?.id == id || $0.retry.map { Lease(id: "x", queueKey: "q", raw: $0.envelope).jobID } == id
            }
            rig.recordAll()
            return found
        }
        rig.answerClaim([rig.job(3)])
        let first = completions(of: "j3")
        #expect(first.count == 1 && first[0].handedBack && first[0].results.map(\.outcome) == [.retrying])
        #expect(rig.core.counters.handedBack == 2)
        rig.advance(milliseconds: 2)
        rig.answerClaim([rig.job(3)])
        let again = completions(of: "j3")
        #expect(again.count == 1 && !again[0].handedBack, "not round the queue again")
        #expect(again.first?.results.isEmpty == true, "no second entry within the pause")
        let due = try #require(again.first?.retry?.dueAt)
        #expect(due > rig.clock.wallMillis && due <= rig.clock.wallMillis + 1000, "waits a second at most: \(due - rig.clock.wallMillis) ms")
        #expect(rig.core.counters.handedBack == 2 && rig.core.counters.retrying == 2)
        // The pause ends, the probe meets the outage again: a new pause, which may hand the job back once more.
        rig.advance(milliseconds: 1000)
        while !rig.claims.isEmpty { rig.answerClaim([]) }
        rig.advance(milliseconds: 200)
        rig.answerClaim([rig.job(5)])
        rig.fail(try #require(rig.takeSends().first { $0.id == "j5" }), .connectionFailed("refused"))
        rig.answerClaim([rig.job(3)])
        let third = completions(of: "j3")
        #expect(third.count == 1 && third[0].handedBack && third[0].results.count == 1, "a new pause: handed back once, with its entry")
    }

    /// Within a long pause a job that keeps coming back waits longer each time: 1 s, 2 s, 4 s..., so a backlog
    /// does not go round this worker's claims every second for a whole minute.
    @Test func aJobThatKeepsComingBackWithinALongPauseWaitsLongerEachTime() throws {
        let rig = CoreRig.withOneEnvironmentDown(.production) { $0.retry.outagePauseSeconds = 60; $0.retry.outagePauseCapSeconds = 60 }
        var waits: [Int64] = []
        for round in 0..<5 {
            rig.advance(milliseconds: 2)
            if rig.claims.isEmpty { rig.advance(milliseconds: 200) }
            rig.answerClaim([rig.job(3)])
            rig.advance(milliseconds: 10)
            let completion = try #require(rig.batches.flatMap(\.completions).first, "round \(round)")
            if round > 0 { waits.append((completion.retry?.dueAt ?? 0) - rig.clock.wallMillis) }
            #expect(completion.handedBack == (round == 0) && completion.results.count == (round == 0 ? 1 : 0), "round \(round)")
            rig.recordAll()
        }
        #expect(waits.map { ($0 + 500) / 1000 } == [1, 2, 4, 8], "\(waits)")
    }

    /// Handed-back jobs are taken by whoever claims next; a worker whose claim went back whole (its only open
    /// destination is another) backs off like after an empty claim instead of taking them again at once.
    @Test func aClaimThatWentBackWholeBacksOffTheNextClaim() {
        let rig = CoreRig.withOneEnvironmentDown(.production)
        #expect(rig.claims == [10], "sandbox still works, so claiming goes on")
        rig.answerClaim([rig.job(3), rig.job(4)])
        #expect(rig.takeSends().isEmpty && rig.core.counters.handedBack == 3)
        #expect(rig.claims.isEmpty, "no claim straight after one that went back whole")
        rig.advance(milliseconds: 2)
        #expect(rig.claims == [10], "the empty-claim back-off: 2 ms")
        rig.answerClaim([rig.job(5), rig.job(6, environment: "sandbox")])
        #expect(rig.takeSends().map(\.id) == ["j6"])
        #expect(rig.claims == [10], "a claim with a job sent claims again at once")
    }

    @Test func claimsGoOnForOtherDestinationsWhileOneIsDown() {
        let rig = CoreRig.withOneEnvironmentDown(.sandbox)
        #expect(rig.claims == [10], "production still works, so claiming goes on")
        rig.answerClaim([rig.job(3, environment: "sandbox"), rig.job(4)])
        #expect(rig.takeSends().map(\.id) == ["j4"])
        rig.advance(milliseconds: 10)
        let parked = rig.batches.flatMap(\.completions).compactMap(\.result).filter { $0.id == "j3" }
        #expect(parked.first?.outcome == .retrying)
    }

    @Test func aFullPoolKeepsJobsInMemoryAndSendsThemAsAnswersFreeRoom() {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([rig.job(1)])
        rig.answer(rig.takeSends()[0], status: 200)  // proves the destination
        rig.answerClaim((2...6).map { rig.job($0) })
        let sends = rig.takeSends()
        #expect(sends.count == 5)
        // The pool took two, then pushed back: the driver hands back the refused job and the rest.
        rig.core.refused(Array(sends[2...]))
        rig.drain()
        #expect(rig.core.backlogCount == 3)
        let inFlight = rig.core.inFlight
        rig.answer(sends[0], status: 200)
        let again = rig.takeSends()
        #expect(again.map(\.id) == ["j4", "j5", "j6"], "an answer frees room: the backlog goes again in order")
        #expect(rig.core.backlogCount == 0)
        #expect(rig.core.inFlight == inFlight, "backlogged jobs stay counted in flight until recorded")
    }

    @Test func aDestinationWhoseClientCannotBeSetUpIsPausedAndReloaded() {
        let rig = CoreRig { $0.retry.configurationPauseSeconds = 2 }
        rig.start()
        rig.answerClaim([rig.job(1), rig.job(2)])
        let probe = rig.takeSends()
        rig.core.unavailable(probe[0], reason: "ca_file: no such file")
        rig.drain()
        rig.advance(milliseconds: 10)
        let results = rig.batches.flatMap(\.completions).compactMap(\.result)
        #expect(results.count == 2)
        #expect(results.allSatisfy { $0.outcome == .retrying && $0.reason?.contains("connection set-up failed") == true })
        rig.advance(milliseconds: 2_000)
        #expect(rig.reloads == [0])
    }

    @Test func retryableAnswersScheduleTheNextAttemptWithTheSameBytes() {
        let rig = CoreRig { $0.retry.serverErrorBaseSeconds = 900 }
        rig.start()
        let lease = rig.job(1)
        rig.answerClaim([lease])
        rig.answer(rig.takeSends()[0], status: 500, reason: "InternalServerError")
        rig.advance(milliseconds: 10)
        let completion = rig.batches[0].completions[0]
        #expect(completion.result?.outcome == .retrying)
        #expect(completion.result?.retryAt == rig.clock.wallMillis - 10 + 900_000)
        let envelope = JobEnvelope.unwrap(completion.retry!.envelope)
        #expect(envelope.attempt == 2)
        #expect(envelope.job == lease.job)
        #expect(envelope.id == "j1")
    }

    @Test func aJobPastItsExpirationIsNotSent() {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([rig.job(1, extra: #","expiration":1000"#), rig.job(2, extra: #","expiration":0"#)])
        #expect(rig.takeSends().map(\.id) == ["j2"], "0 means send once, not expired")
        rig.advance(milliseconds: 10)
        let result = rig.batches[0].completions[0].result
        #expect(result?.outcome == .failed)
        #expect(result?.reason == "Expired")
    }

    @Test func aJobDueLaterWaitsInTheRetrySetWithoutAResultAndGoesOutWhenDue() {
        let rig = CoreRig()
        rig.start()
        let due = rig.clock.wallMillis + 60_000
        let lease = rig.job(1, extra: #","deliver_at":\#(due)"#)
        rig.answerClaim([lease, rig.job(2, extra: #","deliver_at":"2020-01-01T00:00:00Z""#)])
        let probe = rig.takeSends()
        #expect(probe.map(\.id) == ["j2"], "a time already past sends at once")
        rig.answer(probe[0], status: 200)
        rig.advance(milliseconds: 10)
        let scheduled = rig.batches.flatMap(\.completions).first { $0.lease.id == lease.id }
        #expect(scheduled?.result == nil, "scheduling writes no result entry: the job's one outcome comes later")
        #expect(scheduled?.retry?.dueAt == due)
        let envelope = JobEnvelope.unwrap(scheduled!.retry!.envelope)
        #expect(envelope.attempt == 1)
        #expect(envelope.job == lease.job)
        #expect(rig.core.counters.scheduled == 1)
        // Back from the retry set when due (the scheduler moves it): now it is sent.
        rig.clock.advance(milliseconds: 60_000)
        rig.recordAll()
        rig.answerClaim([Lease(id: "again", queueKey: "q", raw: scheduled!.retry!.envelope)])
        #expect(rig.takeSends().map(\.id).contains("j1"))
    }

    @Test func aScheduledJobThatExpiresBeforeItIsDueFailsExpired() {
        let rig = CoreRig()
        rig.start()
        let wall = rig.clock.wallMillis
        rig.answerClaim([rig.job(1, extra: #","deliver_at":\#(wall + 3_600_000),"expiration":\#(wall / 1000 + 60)"#),
                         rig.job(2, extra: #","deliver_at":"soon""#)])
        rig.advance(milliseconds: 10)
        let results = rig.batches.flatMap(\.completions).compactMap(\.result)
        #expect(results.first { $0.id == "j1" }?.reason == "Expired")
        #expect(results.first { $0.id == "j2" }?.reason?.hasPrefix("bad_deliver_at:") == true)
    }

    /// Issue 30: a `deliver_at` in microseconds (about year 58,900), year 10000 or Int64.max was parked with no
    /// result; beyond `worker.max_schedule_days` it is rejected with `bad_deliver_at`, and the horizon itself waits.
    @Test func aJobScheduledBeyondTheHorizonIsRejectedSayingMilliseconds() {
        let rig = CoreRig { $0.maxScheduleMilliseconds = 30 * 86_400_000 }
        rig.start()
        let wall = rig.clock.wallMillis
        rig.answerClaim([rig.job(1, extra: #","deliver_at":\#(wall * 1000)"#),
                         rig.job(2, extra: #","deliver_at":"9999-12-31T23:59:59Z""#),
                         rig.job(3, extra: #","deliver_at":9223372036854775807"#),
                         rig.job(4, extra: #","deliver_at":\#(wall + 30 * 86_400_000)"#)])
        rig.advance(milliseconds: 10)
        let completions = rig.batches.flatMap(\.completions)
        for id in ["j1", "j2", "j3"] {
            let result = completions.compactMap(\.result).first { $0.id == id }
            #expect(result?.outcome == .rejected, "\(id)")
            #expect(result?.reason?.hasPrefix("bad_deliver_at:") == true, "\(id)")
            #expect(result?.reason?.contains("worker.max_schedule_days (30)") == true, "\(id)")
            #expect(result?.reason?.contains("microseconds") == true, "\(id)")
        }
        #expect(rig.core.counters.scheduled == 1, "30 days ahead is within the horizon")
        #expect(completions.contains { $0.retry?.dueAt == wall + 30 * 86_400_000 })
    }

    @Test func aParkedJobThatWouldExpireBeforeThePauseEndsFailsExpired() {
        let rig = CoreRig { $0.retry.configurationPauseSeconds = 60 }
        rig.start()
        let in30s = rig.clock.wallMillis / 1000 + 30
        rig.answerClaim([rig.job(1), rig.job(2, extra: #","expiration":\#(in30s)"#)])
        rig.answer(rig.takeSends()[0], status: 403, reason: "InvalidProviderToken")
        rig.advance(milliseconds: 10)
        let results = rig.batches.flatMap(\.completions).compactMap(\.result)
        #expect(results.first { $0.id == "j2" }?.reason == "Expired")
        #expect(results.first { $0.id == "j1" }?.outcome == .retrying)
    }

    @Test func aFailedBatchGoesAgainAndIsARepeatOnlyWhenItMayHaveBeenApplied() {
        let (rig, batch) = CoreRig.withOneDeliveredBatch()
        rig.core.recordFailed(batch, JobSourceFailure("WRONGTYPE herald:results holds a list", maybeApplied: false))
        rig.drain()
        rig.advance(milliseconds: 250)
        #expect(rig.batches.count == 1)
        #expect(rig.batches[0].isRepeat == false, "a refused script changed nothing: not a repeat")
        let second = rig.batches.removeFirst()
        rig.core.recordFailed(second, JobSourceFailure("connection lost", maybeApplied: true))
        rig.drain()
        rig.advance(milliseconds: 250)
        #expect(rig.batches[0].isRepeat == true)
        #expect(rig.core.inFlight == 1 + 10, "the job stays in flight until a batch is applied (plus a claim's reserved room)")
    }

    /// Issue 18: after a Redis restart without persistence the worker claimed "already recorded" and "lease
    /// lost" for outcomes Redis had simply forgotten. A forgotten batch now says so, and only that.
    @Test func outcomesRedisForgotAreLoggedAsForgottenNotAsLostOrRecorded() {
        let (rig, batch) = CoreRig.withOneDeliveredBatch()
        var report = CompletionReport()
        report.forgotten = 1
        rig.core.recorded(batch, report)
        rig.drain()
        let messages = rig.logs.map(\.1)
        #expect(messages.contains { $0.hasPrefix("redis lost its data") })
        #expect(!messages.contains { $0.hasPrefix("lease lost") || $0.hasPrefix("results re-sent") })
        #expect(rig.core.counters.forgotten == 1)
        #expect(rig.core.counters.leasesLost == 0)
    }

    /// Issue 14, part 5: a token production calls BadDeviceToken may be a sandbox token; with fallback on,
    /// it is tried once on the other environment, and dropped only when both refuse it.
    @Test func environmentFallbackTriesTheOtherEnvironmentOnceBeforeDroppingTheToken() {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([rig.job(1, app: "both"), rig.job(2, app: "both"), rig.job(3, app: "shop"), rig.job(4, app: "both")])
        var sends = rig.takeSends()
        #expect(sends.map(\.id) == ["j1", "j3"], "one probe per destination")
        rig.answer(sends[0], status: 200)  // proves "both" in production
        rig.answer(sends[1], status: 400, reason: "BadDeviceToken")  // no fallback for "shop": dropped at once
        sends = rig.takeSends()
        #expect(sends.map(\.id) == ["j2", "j4"])
        rig.answer(sends[0], status: 400, reason: "BadDeviceToken")
        rig.answer(sends[1], status: 410, reason: "Unregistered")  // not an environment mix-up: dropped at once
        let retried = rig.takeSends()
        #expect(retried.map(\.id) == ["j2"])
        #expect(retried[0].destination.environment == .sandbox)
        #expect(retried[0].notification.environment == .sandbox)
        rig.answer(retried[0], status: 200)
        rig.recordAllKeepingResults()
        let byID = Dictionary(uniqueKeysWithValues: rig.results.map { ($0.id, $0) })
        #expect(byID["j2"]?.outcome == .delivered)
        #expect(byID["j2"]?.environment == "sandbox")
        #expect(byID["j2"]?.fallbackFrom == "production")
        #expect(byID["j2"]?.attempt == 2)
        #expect(byID["j3"]?.outcome == .tokenDropped)
        #expect(byID["j3"]?.fallbackFrom == nil)
        #expect(byID["j4"]?.outcome == .tokenDropped)
        #expect(rig.core.counters.fallbacks == 1)

        // Both environments refuse it: dropped, saying which was tried first.
        rig.answerClaim([rig.job(5, app: "both")])
        let first = rig.takeSends()
        rig.answer(first[0], status: 400, reason: "BadDeviceToken")
        let second = rig.takeSends()
        #expect(second.map(\.destination.environment) == [.sandbox])
        rig.answer(second[0], status: 400, reason: "BadDeviceToken")
        #expect(rig.takeSends().isEmpty, "one fallback per job")
        rig.advance(milliseconds: 10)
        let dropped = rig.batches.flatMap(\.completions).first { $0.result?.id == "j5" }
        #expect(dropped?.result?.outcome == .tokenDropped)
        #expect(dropped?.result?.environment == "sandbox")
        #expect(dropped?.result?.fallbackFrom == "production")
        #expect(dropped?.droppedToken?.environment == "sandbox")
        // Token hygiene: one fallback resolved (j2), one not (j5), for "both" only.
        let text = WorkerMetricsText.render(rig.core.metrics.values)
        #expect(text.contains(#"herald_environment_fallbacks_total{app="both",result="resolved"} 1"#), "\(text)")
        #expect(text.contains(#"herald_environment_fallbacks_total{app="both",result="not_resolved"} 1"#))
        #expect(text.contains(#"herald_environment_fallbacks_total{app="shop",result="not_resolved"} 0"#))
    }

    @Test func noFallbackForAnAppWithOneEnvironment() {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([rig.job(1, app: "single")])
        rig.answer(rig.takeSends()[0], status: 400, reason: "BadDeviceToken")
        #expect(rig.takeSends().isEmpty)
        #expect(rig.core.counters.tokensDropped == 1)
    }

    @Test func shutdownStopsClaimingDrainsAndThenReportsDrained() {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([rig.job(1)])
        let job = rig.takeSends()[0]
        rig.core.shutdown(deadlineSeconds: 20)
        rig.drain()
        rig.answerClaim([])
        rig.advance(milliseconds: 1_000)
        #expect(rig.claims == [], "no claim once draining")
        #expect(rig.drained.isEmpty)
        rig.answer(job, status: 200)
        #expect(rig.drained.isEmpty, "the result is not written yet")
        rig.recordAll()
        #expect(rig.drained.count == 1)
        #expect(rig.drained[0] == nil)
        #expect(rig.core.phase == .stopped)
    }

    @Test func shutdownAtTheDeadlineWritesWhatIsPendingAndStopsSending() {
        let rig = CoreRig { $0.flushIntervalMilliseconds = 100_000 }
        rig.start()
        rig.answerClaim([rig.job(1), rig.job(2)])
        let probe = rig.takeSends()[0]
        rig.answer(probe, status: 200)
        let second = rig.takeSends()[0]
        rig.core.shutdown(deadlineSeconds: 5)
        rig.drain()
        rig.advance(milliseconds: 5_000)
        #expect(rig.drained.count == 1)
        #expect(rig.drained[0]?.completions.count == 1, "the delivered result still goes out")
        rig.answer(second, status: 200)
        #expect(rig.takeSends().isEmpty)
        #expect(rig.batches.isEmpty, "nothing is recorded once leases are being returned")
        #expect(rig.core.nextWake == nil, "a stopped core wants no more ticks")
    }

    /// Found in review: at the shutdown deadline, results waiting to be written again after a failed batch were
    /// dropped, so their delivered jobs went back to the queue and were sent twice.
    @Test func shutdownAtTheDeadlineStillWritesResultsWaitingForARetry() {
        let (rig, batch) = CoreRig.withOneDeliveredBatch()
        rig.core.recordFailed(batch, JobSourceFailure("connection lost", maybeApplied: true))
        rig.drain()
        rig.core.shutdown(deadlineSeconds: 0)
        rig.drain()
        rig.advance(milliseconds: 1)
        #expect(rig.drained.count == 1)
        let final = rig.drained.first ?? nil
        #expect(final?.completions.map(\.result?.id) == ["j1"], "the delivered result still goes out")
        #expect(final?.isRepeat == true, "it may have been applied: no lease-lost recovery")
    }

    @Test func maxInFlightIsPerProcessSharedByEventLoops() {
        var configuration = Configuration()
        configuration.worker.maxInFlight = 8000
        configuration.worker.claimBatch = 512
        let one = DeliverySettings(configuration: configuration, workerID: "w", loops: 1)
        let four = DeliverySettings(configuration: configuration, workerID: "w", loops: 4)
        #expect(one.maxInFlight == 8000)
        #expect(four.maxInFlight == 2000)
        configuration.worker.maxInFlight = 600
        let small = DeliverySettings(configuration: configuration, workerID: "w", loops: 4)
        #expect(small.maxInFlight == 150)
        #expect(small.claimBatch == 150)
    }
}

/// Issue 14: multicast jobs and idempotency, as the core decides them.
extension DeliveryCoreTests {
    static func multicastJob(_ id: String, tokens: [String], extra: String = "") -> String {
        #"{"id":"\#(id)","app":"shop","tokens":[\#(tokens.map { "\"\($0)\"" }.joined(separator: ","))],"payload":{"aps":{"alert":"hi"}}\#(extra)}"#
    }

    /// A token's job as the completion script makes it from an `Expansion` (see `QueueScripts.complete`).
    static func child(of expansion: Expansion, index: Int, lease: String) -> Lease {
        var raw = Array(#"{"herald":{"queue":"q","attempt":1,"id":"\#(expansion.jobID)","child":\#(index)},"job":"#.utf8)
        raw += expansion.jobPrefix + Array(expansion.tokens[index].utf8) + expansion.jobSuffix + [UInt8(ascii: "}")]
        return Lease(id: lease, queueKey: "q", raw: raw)
    }

    @Test func aMulticastJobFansOutInOneCompletionWithEachTokenOnceAndSendsNothingItself() throws {
        let rig = CoreRig()
        rig.start()
        let tokens = [CoreRig.token(1), CoreRig.token(2), CoreRig.token(1).uppercased(), CoreRig.token(3)]
        rig.answerClaim([rig.lease(Self.multicastJob("m1", tokens: tokens))])
        #expect(rig.sends.isEmpty, "the job itself goes nowhere: its tokens become jobs in Redis")
        rig.advance(milliseconds: 10)
        let completion = try #require(rig.batches.first?.completions.first)
        #expect(completion.result == nil, "no entry for the job: each token gets its own")
        let expansion = try #require(completion.expansion)
        #expect(expansion.jobID == "m1")
        #expect(expansion.tokens == [CoreRig.token(1), CoreRig.token(2), CoreRig.token(3)], "a device listed twice (any case) once")
        // Each token's job is the producer's job with `"token":"<t>"` in place of the list, byte for byte otherwise.
        let childJob = expansion.jobPrefix + Array(expansion.tokens[1].utf8) + expansion.jobSuffix
        #expect(String(decoding: childJob, as: UTF8.self)
                == #"{"id":"m1","app":"shop","token":"\#(CoreRig.token(2))","payload":{"aps":{"alert":"hi"}}}"#)
        #expect(rig.core.counters.multicast == 1 && rig.core.counters.fannedOut == 3)
    }

    /// The worker holds one slot for a 10,000-token job, however full it is: the tokens wait in Redis.
    @Test func aTenThousandTokenJobArrivingAtAFullWorkerTakesOneSlot() throws {
        let rig = CoreRig { $0.maxInFlight = 10; $0.claimBatch = 10 }
        rig.start()
        let tokens = (1...10_000).map(CoreRig.token)
        rig.answerClaim((1...9).map { rig.job($0) } + [rig.lease(Self.multicastJob("big", tokens: tokens))])
        #expect(rig.core.inFlight == 10, "at its bound")
        let probe = rig.takeSends()
        rig.answer(probe[0], status: 200)
        let sends = probe + rig.takeSends()
        #expect(sends.count == 9, "only the nine single jobs are sent")
        #expect(rig.core.backlogCount == 0)
        rig.advance(milliseconds: 10)
        let expansion = try #require(rig.batches.flatMap(\.completions).compactMap(\.expansion).first)
        #expect(expansion.tokens.count == 10_000)
        #expect(rig.core.inFlight == 10, "the fan-out holds its one slot until it is recorded; nothing more is claimed")
        #expect(rig.claims.isEmpty)
        for job in sends.dropFirst() { rig.answer(job, status: 200) }
        rig.recordAll()
        #expect(rig.claims == [10], "once recorded, the worker claims the tokens' jobs in ordinary batches")
    }

    @Test func aTokenJobIsAnOrdinaryJobWithTheParentsIDAndItsOwnRetries() throws {
        let rig = CoreRig { $0.retry.serverErrorBaseSeconds = 60 }
        rig.start()
        rig.answerClaim([rig.lease(Self.multicastJob("m2", tokens: [CoreRig.token(7), CoreRig.token(8)]))])
        rig.advance(milliseconds: 10)
        let made = try #require(rig.batches.first?.completions.first?.expansion)
        rig.recordAll()
        rig.answerClaim([Self.child(of: made, index: 0, lease: "c0"), Self.child(of: made, index: 1, lease: "c1")])
        let probe = rig.takeSends()
        rig.answer(probe[0], status: 200)
        let sends = probe + rig.takeSends()
        #expect(sends.map(\.notification.deviceToken) == [CoreRig.token(7), CoreRig.token(8)], "first token first")
        #expect(sends.allSatisfy { $0.id == "m2" })
        rig.answer(sends[1], status: 500, reason: "InternalServerError")
        rig.advance(milliseconds: 10)
        let completions = rig.batches.flatMap(\.completions)
        let delivered = try #require(completions.first { $0.lease.id == "c0" }?.result)
        #expect(delivered.outcome == .delivered && delivered.id == "m2" && delivered.token == CoreRig.token(7))
        let retrying = try #require(completions.first { $0.lease.id == "c1" })
        #expect(retrying.result?.outcome == .retrying && retrying.result?.token == CoreRig.token(8))
        let envelope = JobEnvelope.unwrap(try #require(retrying.retry).envelope)
        #expect(envelope.attempt == 2 && envelope.id == "m2", "only that token is retried, with its own attempt count")
        #expect(String(decoding: envelope.job, as: UTF8.self).contains(#""token":"\#(CoreRig.token(8))""#))
    }

    @Test func aMulticastJobDueLaterWaitsWholeAndAnInvalidOneIsRejectedWhole() throws {
        let rig = CoreRig()
        rig.start()
        let due = rig.clock.wallMillis + 60_000
        rig.answerClaim([rig.lease(Self.multicastJob("later", tokens: [CoreRig.token(1), CoreRig.token(2)], extra: #","deliver_at":\#(due)"#)),
                         rig.lease(Self.multicastJob("bad", tokens: [CoreRig.token(1), "zz"])),
                         rig.lease(#"{"id":"both","token":"aabb","tokens":["ccdd"],"payload":{}}"#),
                         rig.lease(Self.multicastJob("topic", tokens: [CoreRig.token(1)], extra: #","topic":"com.other""#))])
        rig.advance(milliseconds: 10)
        let byID = Dictionary(uniqueKeysWithValues: rig.batches.flatMap(\.completions).map { (JobParser.readableID($0.lease.job) ?? "", $0) })
        let later = try #require(byID["later"])
        #expect(later.expansion == nil && later.retry?.dueAt == due && later.result == nil, "one entry in the retry set, fanned out when due")
        #expect(byID["bad"]?.result?.reason?.hasPrefix("bad_tokens: tokens[1]") == true)
        #expect(byID["both"]?.result?.reason?.hasPrefix("bad_tokens:") == true)
        let topic = try #require(byID["topic"]?.result)
        #expect(topic.outcome == .rejected && topic.reason?.hasPrefix("BadTopic") == true && topic.token == nil,
                "a job refused as a whole has one entry, without a token")
        #expect(rig.batches.flatMap(\.completions).filter { $0.result?.outcome == .rejected }.allSatisfy { $0.deadLetter != nil })
    }

    @Test func idempotencyIsOffByDefault() {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([rig.job(1), rig.job(1)])
        #expect(rig.onceBatches.isEmpty)
        let probe = rig.takeSends()
        rig.answer(probe[0], status: 200)
        #expect(probe.count + rig.takeSends().count == 2, "two identical jobs are two jobs")
    }

    @Test func withAWindowRedisDecidesWhichCopySendsAndTheOtherIsADuplicate() throws {
        let rig = CoreRig { $0.idempotencyWindowMilliseconds = 86_400_000 }
        rig.start()
        rig.answerClaim([rig.job(1), rig.job(1), rig.lease(#"{"token":"aabb","app":"shop","payload":{}}"#)])
        let probe = rig.takeSends()
        #expect(probe.map(\.id) == ["t-1"], "a job without a producer id needs no check")
        rig.answer(probe[0], status: 200)
        let batch = try #require(rig.onceBatches.first)
        #expect(batch.jobs.map(\.id) == ["j1", "j1"])
        rig.core.onceChecked(batch, .success([.claimed, .duplicate]))
        rig.drain()
        let sends = rig.takeSends()
        #expect(sends.count == 1)
        rig.answer(sends[0], status: 200)
        rig.advance(milliseconds: 10)
        let completions = rig.batches.flatMap(\.completions).filter { $0.result?.id == "j1" }
        let duplicate = try #require(completions.first { $0.result?.outcome == .duplicate })
        #expect(duplicate.lease.id == batch.jobs[1].lease.id && duplicate.deadLetter == nil && duplicate.retry == nil && duplicate.once == nil,
                "a duplicate leaves the key to the copy that holds it")
        let delivered = try #require(completions.first { $0.result?.outcome == .delivered })
        #expect(delivered.once == OnceUpdate(jobID: "j1", expect: .lease, state: .done))
        #expect(rig.core.counters.duplicates == 1 && rig.core.counters.delivered == 2)
    }

    /// Issue 30: a job whose id key Redis could not use goes out, and is counted (the source's log names the key).
    @Test func aJobSentWithoutTheIdempotencyCheckIsCounted() throws {
        let rig = CoreRig { $0.idempotencyWindowMilliseconds = 86_400_000 }
        rig.start()
        rig.answerClaim([rig.job(1), rig.job(2)])
        rig.core.onceChecked(try #require(rig.onceBatches.first), .success([.unguarded, .claimed]))
        rig.drain()
        #expect(rig.takeSends().count == 1, "the destination's probe first; the unchecked job is sent all the same")
        #expect(rig.core.metrics.values.unguarded == 1)
        let text = WorkerMetricsText.render(rig.core.metrics.values + MetricsSnapshot(appNames: CoreRig.apps.map(\.name)))
        #expect(text.contains("herald_jobs_unguarded_total 1"))
    }

    @Test func aRetryLeavesTheKeyPendingAndTheRetryEndsIt() throws {
        let rig = CoreRig { $0.idempotencyWindowMilliseconds = 60_000; $0.retry.serverErrorBaseSeconds = 1 }
        rig.start()
        rig.answerClaim([rig.job(1)])
        rig.core.onceChecked(rig.onceBatches.removeFirst(), .success([.claimed]))
        rig.drain()
        rig.answer(rig.takeSends()[0], status: 500, reason: "InternalServerError")
        rig.advance(milliseconds: 10)
        let retry = try #require(rig.batches.removeFirst().completions.first)
        #expect(retry.once == OnceUpdate(jobID: "j1", expect: .lease, state: .pending))
        rig.answerClaim([Lease(id: "back", queueKey: "q", raw: try #require(retry.retry).envelope)])
        #expect(rig.onceBatches.isEmpty, "a job back from the retry set was decided before")
        rig.answer(rig.takeSends()[0], status: 200)
        rig.advance(milliseconds: 10)
        #expect(rig.batches.flatMap(\.completions).first?.once == OnceUpdate(jobID: "j1", expect: .pending, state: .done))
    }

    @Test func aFailedIdempotencyCheckIsAskedAgainAndUnguardedIdsStillGoOut() throws {
        let rig = CoreRig { $0.idempotencyWindowMilliseconds = 60_000 }
        rig.start()
        rig.answerClaim([rig.job(1)])
        let inFlight = rig.core.inFlight
        rig.core.onceChecked(rig.onceBatches.removeFirst(), .failure(JobSourceFailure("connection lost", maybeApplied: true)))
        rig.drain()
        #expect(rig.sends.isEmpty && rig.core.inFlight == inFlight, "the job waits, still in flight")
        rig.advance(milliseconds: 249)
        #expect(rig.onceBatches.isEmpty)
        rig.advance(milliseconds: 1)
        let again = try #require(rig.onceBatches.first)
        rig.core.onceChecked(again, .success([.unguarded]))
        rig.drain()
        #expect(rig.takeSends().map(\.id) == ["j1"])
        #expect(rig.logs.contains { $0.1.hasPrefix("could not check job ids") })
    }
}

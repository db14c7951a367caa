import FCM
import PushCore
import RedisQueue
import Testing
@testable import Worker

/// Issue 28: the core's side of the rate budgets, on the injected clock. Redis's side (the GCRA script) is
/// BudgetCheckTests.
@Suite struct BudgetCoreTests {
    private func rig(_ adjust: (inout Configuration.BudgetSettings) -> Void) -> CoreRig {
        let android = Configuration.AppSettings(name: "android", bundleID: "", fcm: .init(serviceAccountFile: "/unused.json"))
        let rig = CoreRig(apps: [Configuration.AppSettings(name: "shop", bundleID: "com.example.shop"), android]) { adjust(&$0.budgets) }
        rig.start()
        return rig
    }

    private func fcmJob(_ rig: CoreRig, _ n: Int, token: String? = nil) -> Lease {
        rig.lease(#"{"id":"f\#(n)","platform":"fcm","message":{"token":"\#(token ?? "tok-\(n)")","data":{"k":"v"}}}"#)
    }

    /// A rig with one device job held by its budget until `in` ms from now; the due time.
    private func oneHeld(in milliseconds: Int64) -> (CoreRig, Int64) {
        let rig = rig { $0.devicePerSecond = 1 }
        rig.answerClaim([rig.job(1)])
        let due = rig.clock.wallMillis + milliseconds
        rig.core.budgetsChecked(rig.budgetBatches.removeFirst(), .success([.held(atMillis: due, limit: 0)]))
        rig.drain()
        return (rig, due)
    }

    /// The retry envelope as the scheduler moves it back (marked with the dataset's epoch), claimed again
    /// (`redisMillis`: Redis's clock at that claim, when the test gives one).
    private func comingBack(_ envelope: [UInt8], redisMillis: Int64? = nil) -> Lease {
        let marked = String(decoding: envelope, as: UTF8.self).replacingOccurrences(of: #"},"job":"#, with: #","epoch":"e"},"job":"#)
        return Lease(id: "again", queueKey: "q", raw: Array(marked.utf8), epoch: "e", claimedAtRedisMillis: redisMillis)
    }

    @Test func withEveryBudgetOffNothingIsAskedAndJobsGoAtOnce() {
        let rig = rig { _ in }
        rig.answerClaim([rig.job(1), rig.job(2)])
        #expect(rig.budgetBatches.isEmpty)
        // The first to a new destination goes alone (its probe), the other once it is answered, as ever.
        let first = rig.takeSends()
        #expect(first.map(\.id) == ["j1"])
        rig.answer(first[0], status: 200)
        #expect(rig.takeSends().map(\.id) == ["j2"])
        #expect(rig.budgetBatches.isEmpty)
        #expect(rig.core.budgetAppPerSecond == [0, 0])
    }

    @Test func oneClaimAsksOnceAndAJobOverBudgetWaitsForItsTimeWithNoAttemptSpent() throws {
        let rig = rig { $0.devicePerSecond = 2; $0.queuePerSecond = 100 }
        rig.answerClaim([rig.job(1), rig.job(2), rig.job(3)])
        #expect(rig.sends.isEmpty, "nothing goes before Redis has answered")
        #expect(rig.budgetBatches.count == 1, "one call for the whole claim")
        let batch = rig.budgetBatches.removeFirst()
        #expect(batch.jobs.count == 3)
        #expect(batch.limits[0].map(\.name) == ["device:\(CoreRig.token(1)):s", "queue:q:s"])
        #expect(batch.limits[0].map(\.intervalMicros) == [510_000, 10_200])
        let due = rig.clock.wallMillis + 700
        rig.core.budgetsChecked(batch, .success([.allowed, .held(atMillis: due, limit: 0), .held(atMillis: due + 5, limit: 1)]))
        rig.drain()
        #expect(rig.takeSends().map(\.id) == ["j1"])
        rig.recordAllKeepingResults()
        let held = rig.results.filter { $0.outcome == .retrying }
        #expect(held.map(\.reason) == ["RateLimited:device", "RateLimited:queue"])
        #expect(held.map(\.retryAt) == [due, due + 5])
        #expect(held.allSatisfy { $0.attempt == 1 })
        #expect(rig.core.counters.budgetHeld == 2)
    }

    @Test func aHeldJobGoesIntoTheRetrySetPacedAndComesBackWithoutASecondCheck() throws {
        let (rig, due) = oneHeld(in: 1000)
        rig.advance(milliseconds: 10)
        let retry = try #require(rig.batches.flatMap(\.completions).first?.retry)
        #expect(retry.dueAt == due)
        let envelope = JobEnvelope.unwrap(retry.envelope)
        #expect(envelope.attempt == 1 && envelope.paced == due)
        let back = comingBack(retry.envelope)
        #expect(back.pacedAt == due)
        rig.answerClaim([back])
        #expect(rig.budgetBatches.isEmpty, "paid for already")
        #expect(rig.takeSends().count == 1)
    }

    /// A paced job back later than the grace after its slot takes a new one (it would go in a burst); while paced
    /// jobs are due an empty claim backs off at most 5 ms, so they are taken in their slots.
    @Test func aLatePacedJobIsCheckedAgainAndEmptyClaimsStayQuickWhilePacedJobsAreDue() throws {
        let (rig, due) = oneHeld(in: 2000)
        for _ in 0..<8 {
            rig.answerClaim([])
            rig.advance(milliseconds: 5)
            #expect(rig.claims.count == 1, "asked again within 5 ms, not after a growing back-off")
        }
        rig.advance(milliseconds: 10)
        let retry = try #require(rig.batches.flatMap(\.completions).first?.retry)
        rig.clock.advance(milliseconds: due + 21 - rig.clock.wallMillis)
        rig.answerClaim([comingBack(retry.envelope)])
        #expect(rig.budgetBatches.count == 1, "21 ms late: checked again")
        #expect(rig.sends.isEmpty)
    }

    /// Issue 54: a worker whose clock is off from Redis's (here 500 ms either way) judges a paced job's lateness on
    /// Redis's clock, which set its slot: back in its slot, it goes without a second check. (With the worker's
    /// own clock 30 ms ahead, every paced job looked late, took a new slot, and came back late again, for ever.)
    @Test(arguments: [500, -500] as [Int64])
    func aPacedJobBackInItsSlotGoesWhateverTheWorkersClockSays(workerAhead: Int64) throws {
        let (rig, due) = oneHeld(in: 2000)
        rig.advance(milliseconds: 10)
        let retry = try #require(rig.batches.flatMap(\.completions).first?.retry)
        rig.clock.advance(milliseconds: due + workerAhead - rig.clock.wallMillis)
        rig.answerClaim([comingBack(retry.envelope, redisMillis: due + 3)])
        #expect(rig.budgetBatches.isEmpty, "3 ms after its slot by Redis's clock: paid for, whatever the worker's clock says")
        #expect(rig.takeSends().count == 1)
        // Late by Redis's clock is late, whatever the worker's clock says.
        let (late, lateDue) = oneHeld(in: 2000)
        late.advance(milliseconds: 10)
        let lateRetry = try #require(late.batches.flatMap(\.completions).first?.retry)
        late.clock.advance(milliseconds: lateDue - workerAhead - late.clock.wallMillis)
        late.answerClaim([comingBack(lateRetry.envelope, redisMillis: lateDue + 21)])
        #expect(late.budgetBatches.count == 1, "21 ms late by Redis's clock: checked again")
    }

    /// Issue 54: a slot at most 50 ms away is waited for in memory, with no `retrying` entry and no trip through
    /// the retry set, so a budget near or above what the worker can send costs nothing; one further away waits in
    /// the retry set as before.
    @Test func aSlotAFewMillisecondsAwayIsWaitedForInMemory() throws {
        let rig = rig { $0.devicePerSecond = 100 }
        rig.answerClaim([rig.job(1), rig.job(2)])
        let now = rig.clock.wallMillis
        rig.core.budgetsChecked(rig.budgetBatches.removeFirst(), .success([.held(atMillis: now + 30, limit: 0), .held(atMillis: now + 60, limit: 0)]))
        rig.drain()
        #expect(rig.takeSends().isEmpty, "not before its slot")
        rig.advance(milliseconds: 29)
        #expect(rig.takeSends().isEmpty)
        rig.advance(milliseconds: 1)
        #expect(rig.takeSends().map(\.id) == ["j1"], "sent in its slot, 30 ms on")
        rig.recordAllKeepingResults()
        #expect(rig.results.map(\.id) == ["j2"], "only the job 60 ms away has a retrying entry: \(rig.results.map(\.id))")
        #expect(rig.results.first?.outcome == .retrying && rig.results.first?.retryAt == now + 60)
    }

    @Test func aJobThatWouldExpireBeforeItsTimeFailsAsExpired() throws {
        let rig = rig { $0.devicePerSecond = 1 }
        let expiration = rig.clock.wallMillis / 1000 + 5
        rig.answerClaim([rig.job(1, extra: #","expiration":\#(expiration)"#)])
        rig.core.budgetsChecked(rig.budgetBatches.removeFirst(), .success([.held(atMillis: rig.clock.wallMillis + 60_000, limit: 0)]))
        rig.drain()
        rig.recordAllKeepingResults()
        #expect(rig.results.map(\.outcome) == [.failed])
        #expect(rig.results.first?.reason == "Expired (RateLimited:device)")
    }

    @Test func aFailedCheckIsAskedAgainLaterAndAClosedSourceEndsIt() {
        let rig = rig { $0.appPerMinute = 600 }
        rig.answerClaim([rig.job(1)])
        let batch = rig.budgetBatches.removeFirst()
        #expect(batch.limits[0].map(\.name) == ["app:shop:m"] && batch.limits[0][0].intervalMicros == 100_034)
        rig.core.budgetsChecked(batch, .failure(JobSourceFailure("connection lost")))
        rig.drain()
        #expect(rig.logs.contains { $0.1 == "could not check budgets; will retry" })
        rig.advance(milliseconds: 100)
        #expect(rig.budgetBatches.isEmpty)
        rig.advance(milliseconds: 200)
        #expect(rig.budgetBatches.count == 1, "asked again after recordRetryMilliseconds")
        rig.core.budgetsChecked(rig.budgetBatches.removeFirst(), .success([.allowed]))
        rig.drain()
        #expect(rig.takeSends().count == 1)
    }

    @Test func fcmDefaultsApplyToFCMTokensOnlyAndChannelsHaveTheirOwn() {
        let rig = rig { $0.fcmDeviceDefaults = true; $0.devicePerHour = 100; $0.channelPerSecond = 4 }
        rig.answerClaim([fcmJob(rig, 1), rig.job(2),
                         rig.lease(#"{"id":"b","app":"shop","channel":"dHN0LTEyMzQ1Njc4OTA=","payload":{"aps":{"alert":"hi"}}}"#)])
        let batch = rig.budgetBatches.removeFirst()
        #expect(batch.limits[0].map(\.name) == ["device:tok-1:m", "device:tok-1:h"])
        #expect(batch.limits[0].map(\.intervalMicros) == [250_084, 36_000_200], "240 a minute; the configured hour wins over 5,000")
        #expect(batch.limits[1].map(\.name) == ["device:\(CoreRig.token(2)):h"], "APNs tokens: only what is configured")
        #expect(batch.limits[2].map(\.name) == ["channel:dHN0LTEyMzQ1Njc4OTA=:s"] && batch.limits[2][0].intervalMicros == 255_000)
    }

    /// Item 4: a 429 halves the app's per-second budget (not below the floor); good answers bring it back a step
    /// at a time; the next batch asks with the rate as it is now.
    @Test func aProviderThrottleLowersTheAppsBudgetAndGoodAnswersBringItBack() {
        let rig = rig { $0.appPerSecond = 100; $0.adaptiveFloorPercent = 30; $0.adaptiveRecoveryAnswers = 2 }
        func sendOne(_ n: Int) -> JobAttempt {
            rig.answerClaim([fcmJob(rig, n)])
            let batch = rig.budgetBatches.removeFirst()
            rig.core.budgetsChecked(batch, .success([.allowed]))
            rig.drain()
            return rig.takeSends()[0]
        }
        rig.answerFCM(sendOne(1), FCMResponse(status: 429, errorCode: "QUOTA_EXCEEDED"))
        #expect(rig.core.budgetAppPerSecond == [100, 50])
        rig.advance(milliseconds: 120_000)
        rig.answerFCM(sendOne(2), FCMResponse(status: 429, errorCode: "QUOTA_EXCEEDED"))
        rig.advance(milliseconds: 120_000)
        rig.answerFCM(sendOne(3), FCMResponse(status: 429, errorCode: "QUOTA_EXCEEDED"))
        #expect(rig.core.budgetAppPerSecond == [100, 30], "halved twice more, held at the 30 % floor")
        rig.advance(milliseconds: 120_000)
        rig.answerClaim([fcmJob(rig, 4)])
        #expect(rig.budgetBatches.last?.limits[0].last?.intervalMicros == 34_000, "the next check asks for 30 a second")
        rig.core.budgetsChecked(rig.budgetBatches.removeFirst(), .success([.allowed]))
        rig.drain()
        rig.answerFCM(rig.takeSends()[0], FCMResponse(status: 200, name: "projects/p/messages/4"))
        #expect(rig.core.budgetAppPerSecond == [100, 30], "one good answer is not a step yet")
        rig.answerFCM(sendOne(5), FCMResponse(status: 200, name: "projects/p/messages/5"))
        #expect(rig.core.budgetAppPerSecond == [100, 40], "two are: a tenth of the configured rate back")
        for n in 6...20 { rig.answerFCM(sendOne(n), FCMResponse(status: 200, name: "projects/p/messages/\(n)")) }
        #expect(rig.core.budgetAppPerSecond == [100, 100], "never above the configured rate")
    }
}

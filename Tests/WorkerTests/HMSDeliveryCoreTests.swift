import HMS
import PushCore
import RedisQueue
import Testing
@testable import Worker

/// The core with an APNs app ("shop", index 0) and a Huawei app ("huawei", index 1).
private func hmsRig() -> CoreRig {
    var huawei = Configuration.AppSettings(name: "huawei", bundleID: "")
    huawei.hms = HMSAuth(appID: "10", clientSecretFile: "/unused")
    let rig = CoreRig(apps: [Configuration.AppSettings(name: "shop", bundleID: "com.example.shop"), huawei])
    rig.start()
    return rig
}

private func hmsJob(_ rig: CoreRig, _ id: String, tokens: [String]) -> Lease {
    let list = tokens.map { "\"\($0)\"" }.joined(separator: ",")
    return rig.lease(#"{"id":"\#(id)","platform":"hms","app":"huawei","message":{"data":"x","token":[\#(list)]}}"#)
}

private func answer(_ body: String, status: Int = 200) -> HMSResponse { HMSResponse.decode(status: status, body: Array(body.utf8)) }

/// Push Kit's many-token send: a job listing several tokens is one request as written, and its answer ends each
/// token on its own (issue 24, item 1).
@Suite struct HMSDeliveryCoreTests {
    /// Sends the one job and answers it; the entries and dropped tokens its completion writes.
    private func outcome(tokens: [String], _ response: HMSResponse) throws -> (entries: [ResultEntry], dropped: [DroppedToken], rig: CoreRig) {
        let rig = hmsRig()
        rig.answerClaim([hmsJob(rig, "m1", tokens: tokens)])
        let sends = rig.takeSends()
        try #require(sends.count == 1)
        #expect(sends[0].notification.payload == Array(#"{"data":"x","token":[\#(tokens.map { "\"\($0)\"" }.joined(separator: ","))]}"#.utf8))
        rig.core.answered(sends[0], PushOutcome(result: .hms(response), connectionID: 1))
        rig.drain()
        rig.advance(milliseconds: 10)
        let completions = rig.batches.flatMap(\.completions)
        try #require(completions.count == 1, "one completion for the job's one lease")
        return (completions[0].results, completions[0].droppedTokens, rig)
    }

    private func byToken(_ entries: [ResultEntry]) -> [String: ResultEntry.Outcome] {
        Dictionary(entries.map { ($0.token ?? "-", $0.outcome) }) { a, _ in a }
    }

    @Test func aPartialSuccessDeliversTheOthersAndDropsTheIllegalTokens() throws {
        let (entries, dropped, rig) = try outcome(tokens: ["a", "b", "c", "a"], answer(
            #"{"code":"80100000","msg":"{\"success\":2,\"failure\":1,\"illegal_tokens\":[\"b\",\"zz\"]}","requestId":"r9"}"#))
        #expect(entries.count == 3 && byToken(entries) == ["a": .delivered, "b": .tokenDropped, "c": .delivered])
        #expect(entries.allSatisfy { $0.id == "m1" && $0.platform == "hms" && $0.app == "huawei" })
        #expect(entries.filter { $0.outcome == .delivered }.allSatisfy { $0.fcmName == "r9" })
        // The request id of every token's entry, the dropped one's too (fcm_name stays on the delivered ones only).
        #expect(entries.allSatisfy { $0.messageID == "r9" } && entries.first { $0.token == "b" }?.fcmName == nil)
        #expect(dropped.map(\.token) == ["b"] && dropped.first?.platform == "hms" && dropped.first?.app == "huawei")
        #expect(entries.first { $0.token == "b" }?.reason?.hasPrefix("80100000") == true)
        #expect(rig.core.counters.delivered == 2 && rig.core.counters.tokensDropped == 1)
    }

    @Test func allTokensInvalidDropsEveryToken() throws {
        let (entries, dropped, _) = try outcome(tokens: ["a", "b"], answer(#"{"code":"80300007","msg":"All the tokens are invalid"}"#, status: 400))
        #expect(byToken(entries) == ["a": .tokenDropped, "b": .tokenDropped] && Set(dropped.map(\.token)) == ["a", "b"])
        #expect(entries.allSatisfy { $0.reason == "80300007 All the tokens are invalid" })
    }

    /// No success counted and only some tokens named: the named are dropped, the others kept as failed (Push Kit
    /// refused them without saying they are gone; dropping a live token on a guess would lose the device).
    @Test func noSuccessWithSomeTokensNamedFailsTheUnnamedAndKeepsThem() throws {
        let (entries, dropped, _) = try outcome(tokens: ["a", "b"], answer(
            #"{"code":"80100000","msg":"{\"success\":0,\"failure\":2,\"illegal_tokens\":[\"a\"]}"}"#))
        #expect(byToken(entries) == ["a": .tokenDropped, "b": .failed] && dropped.map(\.token) == ["a"])
    }

    /// Illegal tokens named that are none of the job's: nothing is known gone, so nothing is dropped.
    @Test func noSuccessNamingOnlyOtherTokensDropsNone() throws {
        let (entries, dropped, _) = try outcome(tokens: ["a", "b"], answer(
            #"{"code":"80100000","msg":"{\"success\":0,\"failure\":2,\"illegal_tokens\":[\"zz\"]}"}"#))
        #expect(byToken(entries) == ["a": .failed, "b": .failed] && dropped.isEmpty)
    }

    @Test func aManyTokenJobWithDroppedTokensIsArchivedOnce() throws {
        let rig = hmsRig()
        rig.answerClaim([hmsJob(rig, "m3", tokens: ["a", "b"])])
        let sends = rig.takeSends()
        try #require(sends.count == 1)
        rig.core.answered(sends[0], PushOutcome(result: .hms(answer(#"{"code":"80300007","msg":"All the tokens are invalid"}"#, status: 400)), connectionID: 1))
        rig.drain()
        rig.advance(milliseconds: 10)
        let completion = try #require(rig.batches.flatMap(\.completions).first)
        #expect(completion.archived?.id == "m3" && completion.archived?.outcome == .tokenDropped)
    }

    /// A batch of completions is bounded in result entries as well as in jobs: 1,000-token sends go a few a batch.
    @Test func completionBatchesOfManyTokenSendsStayBoundedInEntries() throws {
        let rig = hmsRig()
        let tokens = (0..<1000).map { "t\($0)" }
        rig.answerClaim((0..<9).map { hmsJob(rig, "big\($0)", tokens: tokens) })
        var answered = 0
        for _ in 0..<20 where answered < 9 {
            for job in rig.takeSends() {
                rig.core.answered(job, PushOutcome(result: .hms(answer(#"{"code":"80000000","msg":"Success"}"#)), connectionID: 1))
                answered += 1
            }
            rig.drain()
        }
        try #require(answered == 9)
        rig.advance(milliseconds: 10)
        let sizes = rig.batches.map { $0.completions.reduce(0) { $0 + $1.results.count } }
        #expect(sizes.reduce(0, +) == 9000 && sizes.count >= 2, "\(sizes)")
        #expect(sizes.allSatisfy { $0 <= DeliveryCore.maxEntriesPerBatch + 999 }, "\(sizes)")
    }

    @Test func aMessageErrorFailsEveryTokenAndA5xxRetriesTheJobWithAnEntryPerToken() throws {
        let (failed, dropped, _) = try outcome(tokens: ["a", "b"], answer(#"{"code":"80100001","msg":"Some request parameters are abnormal"}"#, status: 400))
        #expect(byToken(failed) == ["a": .failed, "b": .failed] && dropped.isEmpty)
        #expect(failed.allSatisfy { $0.reason == "80100001 Some request parameters are abnormal" })
        let rig = hmsRig()
        rig.answerClaim([hmsJob(rig, "m2", tokens: ["a", "b", "c"])])
        let sends = rig.takeSends()
        try #require(sends.count == 1)
        rig.core.answered(sends[0], PushOutcome(result: .hms(answer(#"{"code":"81000001","msg":"System inner error"}"#, status: 500)), connectionID: 1))
        rig.drain()
        rig.advance(milliseconds: 10)
        let completions = rig.batches.flatMap(\.completions)
        try #require(completions.count == 1)
        #expect(byToken(completions[0].results) == ["a": .retrying, "b": .retrying, "c": .retrying])
        // One retry of the whole job, as written: its next attempt is again one request for all three.
        let retry = try #require(completions[0].retry)
        #expect(String(decoding: retry.envelope, as: UTF8.self).contains(#""token":["a","b","c"]"#))
    }

    @Test func aJobWithOneTokenWritesOneEntryAsBefore() throws {
        let (entries, _, _) = try outcome(tokens: ["solo"], answer(#"{"code":"80000000","msg":"Success","requestId":"r1"}"#))
        #expect(entries.count == 1 && entries[0].token == "solo" && entries[0].outcome == .delivered && entries[0].fcmName == "r1")
        #expect(entries[0].messageID == "r1")
    }
}

import Foundation
import Harmony
import HeraldProviders
import PushCore
import RedisQueue
import Testing
@testable import Worker

/// A many-token harmony job's answer, token by token, as the worker writes its results: Push Kit v3 names why each
/// token was refused; a token of its own reason is dropped, one refused for the app's reason (`noPushTypeRight`)
/// failed and kept, the others delivered.
@Suite struct HarmonyCompletionTests {
    @Test func eachTokenEndsByItsOwnReason() throws {
        var app = Configuration.AppSettings(name: "harmony", bundleID: "")
        app.harmony = HarmonyAuth(serviceAccountFile: "/key.json")
        let intake = JobIntake(directory: AppDirectory([app]), providers: heraldProviders)
        let job = #"{"id":"m","platform":"harmony","target":{"token":["ok","bad","right"]},"payload":{"notification":{}}}"#
        let lease = Lease(id: "l1", queueKey: "herald:queue", raw: Array(job.utf8))
        guard case .accepted(let attempt) = intake.admit(lease, claimedAt: 0, wallMillis: 1_800_000_000_000, makeID: { "made" }) else {
            Issue.record("the job was not admitted"); return
        }
        let body = #"{"code":"80100000","msg":"{\"illegalTokens\":{\"tokenFormatError\":[\"bad\"],\"noPushTypeRight\":[\"right\"]},\"success\":1,\"failure\":2}","requestId":"r1"}"#
        let answer = HarmonyResponse.decode(status: 200, body: Array(body.utf8))
        let decision = OutcomePolicy(random: { 0.5 }).decide(.harmony(answer), attempt: 1, expiration: nil, nowSeconds: 1_800_000_000)
        let completion = CompletionBuilder(workerID: "w").decided(attempt, decision, answer: answer, now: 0, wallMillis: 1_800_000_000_000)
        let outcomes = Dictionary(uniqueKeysWithValues: completion.results.map { ($0.token ?? "", $0.outcome) })
        #expect(outcomes == ["ok": .delivered, "bad": .tokenDropped, "right": .failed], "\(outcomes)")
        #expect(completion.droppedTokens.map(\.token) == ["bad"])
        // Every token refused for the app's reason: a failure, nothing dropped.
        let all = HarmonyResponse.decode(status: 400, body: Array(#"{"code":"80300007","msg":"{\"illegalTokens\":{\"noPushTypeRight\":[\"ok\",\"bad\",\"right\"]},\"failure\":3}"}"#.utf8))
        let failed = CompletionBuilder(workerID: "w").decided(attempt, OutcomePolicy(random: { 0.5 }).decide(.harmony(all), attempt: 1, expiration: nil,
                                                                                                              nowSeconds: 1_800_000_000),
                                                               answer: all, now: 0, wallMillis: 1_800_000_000_000)
        #expect(failed.results.allSatisfy { $0.outcome == .failed } && failed.droppedTokens.isEmpty, "\(failed.results.map(\.outcome))")
    }
}

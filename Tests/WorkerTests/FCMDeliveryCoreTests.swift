import APNs
import Basics
import CurlHTTP
import FCM
import Foundation
import PushCore
import Reactor
import RedisQueue
import Testing
@testable import Worker

/// The core with an APNs app ("shop", index 0) and an FCM app ("android", index 1).
private func fcmRig() -> CoreRig {
    let android = Configuration.AppSettings(name: "android", bundleID: "", fcm: .init(serviceAccountFile: "/unused.json"))
    let rig = CoreRig(apps: [Configuration.AppSettings(name: "shop", bundleID: "com.example.shop"), android])
    rig.start()
    return rig
}

extension CoreRig {
    func fcmJob(_ n: Int, data: String = #"{"k":"v"}"#) -> Lease {
        lease(#"{"id":"f\#(n)","platform":"fcm","message":{"token":"tok-\#(n):APA91b","data":\#(data)}}"#)
    }

    func answerFCM(_ job: JobAttempt, _ response: FCMResponse) {
        core.answered(job, PushOutcome(result: .fcm(response), connectionID: 1))
        drain()
    }

    /// Results recorded so far, without acknowledging their batches twice.
    func flushResults() -> [ResultEntry] {
        recordAllKeepingResults()
        defer { results.removeAll() }
        return results
    }
}

@Suite struct FCMDeliveryCoreTests {
    @Test func fcmResultsCarryThePlatformAndTheMessageName() {
        let rig = fcmRig()
        rig.answerClaim([rig.fcmJob(1), rig.job(2)])
        let sends = rig.takeSends()
        #expect(sends.map(\.destination) == [Destination(app: 1, environment: .production, platform: .fcm), Destination(app: 0, environment: .production)])
        #expect(sends[0].notification.payload == Array(#"{"token":"tok-1:APA91b","data":{"k":"v"}}"#.utf8))
        rig.answerFCM(sends[0], FCMResponse(status: 200, name: "projects/p/messages/42"))
        rig.answer(sends[1], status: 200)
        let results = rig.flushResults()
        let fcm = results.first { $0.id == "f1" }
        #expect(fcm?.platform == "fcm" && fcm?.fcmName == "projects/p/messages/42" && fcm?.environment == nil && fcm?.token == "tok-1:APA91b")
        #expect(fcm?.messageID == "projects/p/messages/42" && fcm?.apnsID == nil)
        let apns = results.first { $0.id == "j2" }
        #expect(apns?.platform == "apns" && apns?.fcmName == nil && apns?.environment == "production")
    }

    /// Issue 25, item 6: `validate_only` ends `validated`; only FCM's is sent (as FCM's dry run), and a failed check
    /// or FCM's refusal ends as it would have.
    @Test func validateOnlyJobsEndValidatedAndOnlyFCMsAreSentAsADryRun() throws {
        let rig = fcmRig()
        rig.answerClaim([rig.job(1, extra: #","validate_only":true"#), rig.job(2, extra: #","validate_only":false"#),
                         rig.lease(#"{"id":"f3","platform":"fcm","validate_only":true,"message":{"token":"t3"}}"#),
                         rig.lease(#"{"id":"f4","platform":"fcm","validate_only":true,"message":{"token":"t4"}}"#),
                         rig.job(5, app: "nope", extra: #","validate_only":true"#),
                         rig.job(6, extra: #","validate_only":true,"expiration":1"#)])
        // Each destination's first send goes alone (its probe); the next follows its answer.
        var sends = rig.takeSends()
        #expect(sends.map(\.id) == ["j2", "f3"])
        #expect(sends.map(\.notification.validateOnly) == [false, true])
        try #require(sends.count == 2)
        rig.answer(sends[0], status: 200)
        rig.answerFCM(sends[1], FCMResponse(status: 200, name: "projects/p/messages/fake_message_id"))
        sends = rig.takeSends()
        #expect(sends.map(\.id) == ["f4"] && sends.first?.notification.validateOnly == true)
        try #require(sends.count == 1)
        rig.answerFCM(sends[0], FCMResponse(status: 404, errorCode: "UNREGISTERED"))
        let outcomes = Dictionary(rig.flushResults().map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        #expect(outcomes["j1"]?.outcome == .validated && outcomes["j1"]?.status == 0 && outcomes["j1"]?.reason == nil)
        #expect(outcomes["j2"]?.outcome == .delivered)
        #expect(outcomes["f3"]?.outcome == .validated && outcomes["f3"]?.status == 200 && outcomes["f3"]?.fcmName == nil)
        #expect(outcomes["f3"]?.messageID == nil, "a dry run's message name names no message")
        #expect(outcomes["f4"]?.outcome == .tokenDropped)
        #expect(outcomes["j5"]?.outcome == .rejected)
        #expect(outcomes["j6"]?.outcome == .failed && outcomes["j6"]?.reason == "Expired")
        #expect(rig.core.counters.delivered == 1)
        #expect(ResultEntry.Outcome.validated.isTerminal && ResultEntry.Outcome.validated.rawValue == "validated")
    }

    @Test func droppedFCMTokensNameThePlatformAndTheApp() {
        let rig = fcmRig()
        rig.answerClaim([rig.fcmJob(1)])
        rig.answerFCM(rig.takeSends()[0], FCMResponse(status: 403, rpcStatus: "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH"))
        rig.advance(milliseconds: 10)
        let completion = rig.batches.flatMap(\.completions).first
        #expect(completion?.result?.outcome == .tokenDropped && completion?.result?.reason == "SENDER_ID_MISMATCH")
        let dropped = completion?.droppedToken
        #expect(dropped?.platform == "fcm" && dropped?.app == "android" && dropped?.token == "tok-1:APA91b" && dropped?.environment == "")
    }

    /// Issue 30, item 12: a send that timed out and then met the project's quota pause was recorded as
    /// `Throttled: QUOTA_EXCEEDED` alone, a timeout labelled as a quota. Its reason now says both.
    @Test func aTimedOutSendParkedByAQuotaPauseSaysItTimedOut() {
        let rig = fcmRig()
        rig.answerClaim([rig.fcmJob(1)])
        rig.answerFCM(rig.takeSends()[0], FCMResponse(status: 200))
        rig.answerClaim([rig.fcmJob(2), rig.fcmJob(3)])
        let sends = rig.takeSends()
        #expect(sends.map(\.id) == ["f2", "f3"], "the project is proven: both go out")
        rig.answerFCM(sends[0], FCMResponse(status: 429, rpcStatus: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED", retryAfterSeconds: 30))
        rig.fail(sends[1], .timedOut)
        #expect(rig.takeSends().isEmpty, "the resend is parked by the quota pause")
        let three = rig.flushResults().first { $0.id == "f3" }
        #expect(three?.outcome == .retrying)
        #expect(three?.reason == "Throttled: QUOTA_EXCEEDED (after TimedOut)", "\(three?.reason ?? "none")")
        #expect(three?.status == 0)
    }

    @Test func aQuotaAnswerHoldsTheProjectBackForItsRetryAfterButNotAPNs() {
        let rig = fcmRig()
        rig.answerClaim([rig.fcmJob(1), rig.fcmJob(2), rig.job(3)])
        var sends = rig.takeSends()
        #expect(sends.count == 2, "the FCM probe and the APNs probe; job 2 waits for its probe")
        rig.answerFCM(sends[0], FCMResponse(status: 429, rpcStatus: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED", retryAfterSeconds: 30))
        rig.answer(sends[1], status: 200)
        #expect(rig.takeSends().isEmpty, "job 2 is parked, not sent into the quota")
        #expect(rig.logs.contains { $0.0 == .warning && $0.1.hasPrefix("FCM throttled the app") })
        let results = rig.flushResults()
        let one = results.first { $0.id == "f1" }
        #expect(one?.outcome == .retrying && one?.reason == "QUOTA_EXCEEDED" && one?.retryAt == rig.clock.wallMillis - 10 + 30_000, "Retry-After beats the 10 s back-off")
        #expect(results.first { $0.id == "f2" }?.reason == "Throttled: QUOTA_EXCEEDED")
        #expect(results.first { $0.id == "j3" }?.outcome == .delivered)
        // While held back, new FCM jobs park; APNs jobs go out.
        rig.answerClaim([rig.fcmJob(4), rig.job(5)])
        sends = rig.takeSends()
        #expect(sends.map(\.id) == ["j5"])
        rig.advance(milliseconds: 29_000)
        rig.answerClaim([rig.fcmJob(6)])
        #expect(rig.takeSends().isEmpty, "still held back")
        rig.advance(milliseconds: 1000)
        rig.answerClaim([rig.fcmJob(7)])
        #expect(rig.takeSends().map(\.id) == ["f7"], "after the Retry-After one probe goes to the project again")
        #expect(rig.reloads.isEmpty, "a quota pause is no credential problem")
    }

    /// Issue 54: one `Retry-After: 999999999` (31 years) holds the project back for `retry.throttle_cap_seconds`
    /// (10 minutes), not until 2058; the job's retry is capped alike, and the absurd header is logged.
    @Test func anAbsurdRetryAfterIsHeldToTheThrottleCap() {
        let rig = fcmRig()
        rig.answerClaim([rig.fcmJob(1)])
        rig.answerFCM(rig.takeSends()[0], FCMResponse(status: 429, rpcStatus: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED", retryAfterSeconds: 999_999_999))
        let one = rig.flushResults().first { $0.id == "f1" }
        #expect(one?.outcome == .retrying && one?.retryAt == rig.clock.wallMillis - 10 + 600_000, "\(String(describing: one?.retryAt)) at \(rig.clock.wallMillis)")
        let capped = rig.logs.filter { $0.0 == .warning && $0.1.hasPrefix("Retry-After beyond the retry policy's cap") }
        #expect(capped.count == 1)
        rig.advance(milliseconds: 599_000)
        rig.answerClaim([rig.fcmJob(2)])
        #expect(rig.takeSends().isEmpty, "held back for the cap")
        rig.advance(milliseconds: 1000)
        rig.answerClaim([rig.fcmJob(3)])
        #expect(rig.takeSends().map(\.id) == ["f3"], "after the cap, one probe goes to the project again")
    }

    @Test func thirdPartyAuthErrorParksTheFCMAppAndReloadsItsServiceAccount() {
        let rig = fcmRig()
        rig.answerClaim([rig.fcmJob(1)])
        rig.answerFCM(rig.takeSends()[0], FCMResponse(status: 401, rpcStatus: "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR"))
        #expect(rig.logs.contains { $0.0 == .error && $0.1 == "app paused: credential rejected" })
        let parked = rig.flushResults().first
        #expect(parked?.outcome == .retrying && parked?.reason == "AppPaused: THIRD_PARTY_AUTH_ERROR" && parked?.attempt == 1)
        rig.answerClaim([rig.fcmJob(2), rig.job(3)])
        #expect(rig.takeSends().map(\.id) == ["j3"], "the APNs app keeps sending")
        rig.advance(milliseconds: rig.core.settings.retry.configurationPauseSeconds * 1000)
        #expect(rig.reloads == [1])
    }

    @Test func a401IsResentOnceWithANewTokenAndParksTheAppWhenTheNewTokenIsRefusedToo() {
        let rig = fcmRig()
        rig.answerClaim([rig.fcmJob(1)])
        rig.answerFCM(rig.takeSends()[0], FCMResponse(status: 401, rpcStatus: "UNAUTHENTICATED"))
        let resent = rig.takeSends()
        #expect(resent.map(\.id) == ["f1"] && resent.first?.attempt == 1, "a refused token spends no attempt")
        rig.answerFCM(resent[0], FCMResponse(status: 401, rpcStatus: "UNAUTHENTICATED", afterTokenRefresh: true))
        let parked = rig.flushResults().first
        #expect(parked?.reason == "AppPaused: UNAUTHENTICATED: access token refused after a refresh")
    }

    /// Issue 52: `herald_results_total` listed every app under every platform (80 series for 2 apps, 60 of them
    /// impossible, e.g. `{app="android",platform="hms"}`): an app's zero series are its own platform's only.
    @Test func resultSeriesExistOnlyForAnAppsOwnPlatformUntilSomethingIsCounted() {
        let rig = fcmRig()
        let text = WorkerMetricsText.render(rig.core.metrics.values)
        let series = text.split(separator: "\n").filter { $0.hasPrefix("herald_results_total{") }
        #expect(series.contains { $0.contains(#"app="android",platform="fcm",outcome="delivered"} 0"#) })
        #expect(series.contains { $0.contains(#"app="shop",platform="apns",outcome="delivered"} 0"#) })
        #expect(!series.contains { $0.contains(#"app="android",platform="hms""#) || $0.contains(#"app="shop",platform="fcm""#) }, "\(series)")
        #expect(series.count == 2 * JobOutcome.allCases.count, "\(series.count) series")
        // A job that names the FCM app but is of another platform is counted where it happened.
        rig.answerClaim([rig.lease(#"{"id":"w1","app":"android","token":"aa","payload":{}}"#)])
        let after = WorkerMetricsText.render(rig.core.metrics.values)
        #expect(after.contains(#"herald_results_total{app="android",platform="apns",outcome="rejected"} 1"#), "\(after)")
    }

    /// A rejected job counts under its own platform, not APNs': an FCM job FCM's rules refuse and one that names
    /// `fcm` but does not parse under `fcm`; one that is not JSON or names no platform Herald knows under `unknown`.
    @Test func rejectedJobsCountUnderThePlatformTheyNameElseUnknown() {
        let rig = fcmRig()
        rig.answerClaim([rig.lease(#"{"id":"r1","platform":"fcm","message":{"token":"x","topic":"news"}}"#),
                         rig.lease(#"{"id":"r2","platform":"fcm","message":{"token":"x"},"payload":"#),
                         rig.lease("not json"),
                         rig.lease(#"{"id":"r4","platform":"blackberry","message":{"token":"x"}}"#)])
        #expect(rig.core.counters.rejected == 4 && rig.takeSends().isEmpty)
        let text = WorkerMetricsText.render(rig.core.metrics.values)
        #expect(text.contains(#"herald_results_total{app="android",platform="fcm",outcome="rejected"} 1"#), "\(text)")
        #expect(text.contains(#"herald_results_total{app="unknown",platform="fcm",outcome="rejected"} 1"#))
        #expect(text.contains(#"herald_results_total{app="unknown",platform="unknown",outcome="rejected"} 2"#))
        #expect(text.contains(#"herald_results_total{app="shop",platform="apns",outcome="rejected"} 0"#))
        #expect(!text.contains(#"herald_results_total{app="unknown",platform="apns""#))
    }

    @Test func jobsForAnAppOfTheOtherPlatformAreRejectedWithWhy() {
        let rig = fcmRig()
        rig.answerClaim([
            rig.lease(#"{"id":"a","app":"shop","message":{"token":"t"}}"#),
            rig.lease(#"{"id":"b","app":"android","token":"00ff","payload":{"aps":{}}}"#),
            rig.lease(#"{"id":"c","platform":"fcm","message":{"token":"t","data":{"n":1}}}"#),
        ])
        #expect(rig.takeSends().isEmpty)
        let reasons = Dictionary(uniqueKeysWithValues: rig.flushResults().map { ($0.id, $0.reason ?? "") })
        #expect(reasons["a"]?.hasPrefix("WrongPlatform: app 'shop' is an APNs app") == true)
        #expect(reasons["b"]?.hasPrefix("WrongPlatform: app 'android' is an FCM app") == true)
        #expect(reasons["c"]?.hasPrefix("INVALID_ARGUMENT: message.data.n must be a string") == true)
    }
}

/// The access-token cache on a real loop, with the exchange counted and answered by the test.
@Suite struct FCMAccessTokenTests {
    final class Exchanges: Sendable {
        let calls = LockedValue(0)
        let answer: LockedValue<Result<CurlPost.Answer, CurlFailure>>
        init(_ answer: Result<CurlPost.Answer, CurlFailure>) { self.answer = LockedValue(answer) }
        var count: Int { calls.withLock { $0 } }
        func next() -> Result<CurlPost.Answer, CurlFailure> {
            calls.withLock { $0 += 1 }
            return answer.withLock { $0 }
        }
        func set(_ value: Result<CurlPost.Answer, CurlFailure>) { answer.withLock { $0 = value } }
    }

    static func account() throws -> ServiceAccount {
        let pem = try KeyGenerator.generateRSAPKCS8PEM()
        let json = try JSONSerialization.data(withJSONObject: ["project_id": "p", "client_email": "a@p.iam", "private_key": pem,
                                                               "token_uri": "https://127.0.0.1:1/token"])
        return try ServiceAccount.parse(Array(json), path: "sa.json")
    }

    static func tokenAnswer(_ token: String, expiresIn: Int) -> Result<CurlPost.Answer, CurlFailure> {
        .success(CurlPost.Answer(status: 200, body: Array(#"{"access_token":"\#(token)","expires_in":\#(expiresIn),"token_type":"Bearer"}"#.utf8)))
    }

    /// Asks for `count` tokens at once and waits for every answer.
    static func ask(_ tokens: LoopBound<AccessTokenCache>, count: Int) throws -> [Result<AccessTokenCache.Token, AccessTokenCache.Failure>] {
        let results = LockedValue<[Result<AccessTokenCache.Token, AccessTokenCache.Failure>]>([])
        try tokens.loop.submit { for _ in 0..<count { tokens.value.withToken { r in results.withLock { $0.append(r) } } } }
        return results.wait(until: { $0.count >= count }, timeoutSeconds: 20, then: { $0 }) ?? []
    }

    @Test func manyWaitersShareOneExchangeAndTheTokenIsCachedUntilNearItsEnd() throws {
        let loop = try EventLoop.startThread(name: "tokens")
        defer { loop.stop(); loop.waitUntilStopped() }
        let exchanges = Exchanges(Self.tokenAnswer("ya29.first", expiresIn: 3600))
        let account = try Self.account()
        let tokens = try loop.submit {
            LoopBound(AccessTokenCache(loop: loop, exchange: FCMTokenGrant.exchange(account, options: .init()) { _, body, _ in
                #expect(String(decoding: body, as: UTF8.self).hasPrefix("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=ey"))
                usleep(50_000)
                return exchanges.next()
            }), loop: loop)
        }
        let first = try Self.ask(tokens, count: 20)
        #expect(first.count == 20)
        #expect(first.allSatisfy { if case .success(let t) = $0 { t.header == "Bearer ya29.first" } else { false } })
        #expect(exchanges.count == 1, "one exchange for twenty waiters")
        _ = try Self.ask(tokens, count: 5)
        #expect(exchanges.count == 1, "cached")
        // FCM refused it: the next caller gets a new one, marked as fetched after a refusal.
        exchanges.set(Self.tokenAnswer("ya29.second", expiresIn: 3600))
        try loop.submit {
            tokens.value.withToken { result in if case .success(let t) = result { tokens.value.refused(t) } }
        }
        let second = try Self.ask(tokens, count: 3)
        #expect(exchanges.count == 2)
        #expect(second.allSatisfy { if case .success(let t) = $0 { t.header == "Bearer ya29.second" && t.afterRefusal } else { false } })
    }

    @Test func aRefusedGrantAndAnUnreachableEndpointAreToldApart() throws {
        let loop = try EventLoop.startThread(name: "tokens")
        defer { loop.stop(); loop.waitUntilStopped() }
        let exchanges = Exchanges(.success(CurlPost.Answer(status: 400, body: Array(#"{"error":"invalid_grant","error_description":"Invalid grant: account not found"}"#.utf8))))
        let account = try Self.account()
        let tokens = try loop.submit {
            LoopBound(AccessTokenCache(loop: loop, exchange: FCMTokenGrant.exchange(account, options: .init()) { _, _, _ in
                exchanges.next()
            }), loop: loop)
        }
        let refused = try Self.ask(tokens, count: 2)
        #expect(refused.count == 2)
        for result in refused {
            guard case .failure(.refused(let detail)) = result else { Issue.record("expected a refusal, got \(result)"); continue }
            #expect(detail.contains("invalid_grant") && detail.contains("account not found"))
        }
        exchanges.set(.failure(CurlFailure("Couldn't connect to server")))
        let unreachable = try Self.ask(tokens, count: 1)
        guard case .failure(.unavailable(let detail))? = unreachable.first else { Issue.record("expected unavailable"); return }
        #expect(detail.contains("Couldn't connect"))
        #expect(exchanges.count == 2, "a failed exchange is not cached, and each failure is one exchange")
    }

    /// The cache knows no FCM: a client-credentials grant (Huawei's shape: a form POST with id and secret, no
    /// signed assertion) goes through `OAuthTokenEndpoint` into the same cache, and a reloaded credential's
    /// exchange replaces the old one, whose late answer is dropped.
    @Test func aClientCredentialsExchangeSharesTheCacheAndAReloadDropsTheOldAnswer() throws {
        let loop = try EventLoop.startThread(name: "tokens")
        defer { loop.stop(); loop.waitUntilStopped() }
        let forms = LockedValue<[String]>([])
        // Each secret's token is its own; "bad" is refused as the endpoint would refuse a wrong secret.
        let grant: @Sendable (String) -> AccessTokenCache.Exchange = { secret in
            { OAuthTokenEndpoint.exchange(url: "https://127.0.0.1:1/oauth2/v3/token",
                                          form: Array("grant_type=client_credentials&client_id=1&client_secret=\(secret)".utf8),
                                          options: .init()) { _, body, _ in
                forms.withLock { $0.append(String(decoding: body, as: UTF8.self)) }
                usleep(100_000)
                if secret == "bad" { return .success(CurlPost.Answer(status: 401, body: Array(#"{"error":"invalid_client"}"#.utf8))) }
                return Self.tokenAnswer("tok-\(secret)", expiresIn: 3600)
            } }
        }
        let tokens = try loop.submit { LoopBound(AccessTokenCache(loop: loop, exchange: grant("s1")), loop: loop) }
        // The first exchange is in flight when the credential is replaced: its answer must not be used.
        let answers = LockedValue<[Result<AccessTokenCache.Token, AccessTokenCache.Failure>]>([])
        try loop.submit {
            for _ in 0..<3 { tokens.value.withToken { r in answers.withLock { $0.append(r) } } }
            tokens.value.replace(exchange: grant("s2"))
        }
        let got = answers.wait(until: { $0.count >= 3 }, timeoutSeconds: 20, then: { $0 }) ?? []
        #expect(got.count == 3)
        #expect(got.allSatisfy { if case .success(let t) = $0 { t.header == "Bearer tok-s2" } else { false } }, "\(got)")
        #expect(forms.withLock { $0 }.count == 2, "one exchange per credential, however many waited")
        try loop.submit { tokens.value.replace(exchange: grant("bad")) }
        guard case .failure(.refused(let detail))? = try Self.ask(tokens, count: 1).first else { Issue.record("expected a refusal"); return }
        #expect(detail.contains("invalid_client"))
    }
}

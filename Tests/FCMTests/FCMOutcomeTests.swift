import APNs
import FCM
import ProviderKit
import PushCore
import Testing

/// random() = 0.5: delays come out unjittered (5xx base 900 s, 429 base 10 s by default).
private let policy = OutcomePolicy(random: { 0.5 })

private func fcm(_ status: Int, _ code: String?, rpc: String? = nil, fields: [String] = [], message: String? = nil,
                 retryAfter: Int64? = nil, afterRefresh: Bool = false) -> DeliveryResult {
    .fcm(FCMResponse(status: status, name: status == 200 ? "projects/p/messages/1" : nil, rpcStatus: rpc, errorCode: code,
                     message: message, fieldViolations: fields, retryAfterSeconds: retryAfter, afterTokenRefresh: afterRefresh))
}

@Suite struct FCMOutcomeTests {
    enum Class: Equatable {
        case delivered, drop(String), retry(ms: Int64, reason: String), resendWithNewToken, park(String), fail(String)
    }

    static func classify(_ d: Decision) -> Class? {
        switch d {
        case .delivered: .delivered
        case .dropToken(_, let r): .drop(r)
        case .retry(let ms, let r): .retry(ms: ms, reason: r)
        case .resendNow(false, true): .resendWithNewToken
        case .deferForConfiguration(let r): .park(r)
        case .fail(let r): .fail(r)
        default: nil
        }
    }

    /// The issue's classes, row by row: FCM's answer, and what Herald does with the job.
    static let table: [(String, DeliveryResult, Class)] = [
        ("200", fcm(200, nil), .delivered),
        ("500 INTERNAL", fcm(500, "INTERNAL", rpc: "INTERNAL"), .retry(ms: 900_000, reason: "INTERNAL")),
        ("503 UNAVAILABLE", fcm(503, "UNAVAILABLE", rpc: "UNAVAILABLE"), .retry(ms: 900_000, reason: "UNAVAILABLE")),
        ("503 with a longer Retry-After", fcm(503, "UNAVAILABLE", retryAfter: 2000), .retry(ms: 2_000_000, reason: "UNAVAILABLE")),
        ("503 with a shorter Retry-After", fcm(503, "UNAVAILABLE", retryAfter: 5), .retry(ms: 900_000, reason: "UNAVAILABLE")),
        ("502 from a proxy, no JSON", fcm(502, nil), .retry(ms: 900_000, reason: "HTTP 502")),
        ("429 QUOTA_EXCEEDED", fcm(429, "QUOTA_EXCEEDED", rpc: "RESOURCE_EXHAUSTED"), .retry(ms: 10_000, reason: "QUOTA_EXCEEDED")),
        ("429 with Retry-After", fcm(429, "QUOTA_EXCEEDED", retryAfter: 60), .retry(ms: 60_000, reason: "QUOTA_EXCEEDED")),
        ("429 RESOURCE_EXHAUSTED only", fcm(429, nil, rpc: "RESOURCE_EXHAUSTED"), .retry(ms: 10_000, reason: "RESOURCE_EXHAUSTED")),
        ("404 UNREGISTERED", fcm(404, "UNREGISTERED", rpc: "NOT_FOUND"), .drop("UNREGISTERED")),
        ("400 INVALID_ARGUMENT on message.token", fcm(400, "INVALID_ARGUMENT", fields: ["message.token"]), .drop("INVALID_ARGUMENT")),
        ("400 INVALID_ARGUMENT saying the token is bad",
         fcm(400, "INVALID_ARGUMENT", message: "The registration token is not a valid FCM registration token"), .drop("INVALID_ARGUMENT")),
        ("400 INVALID_ARGUMENT on the payload", fcm(400, "INVALID_ARGUMENT", fields: ["message.data[0].value"]), .fail("INVALID_ARGUMENT")),
        ("400 INVALID_ARGUMENT without detail", fcm(400, "INVALID_ARGUMENT"), .fail("INVALID_ARGUMENT")),
        ("403 SENDER_ID_MISMATCH", fcm(403, "SENDER_ID_MISMATCH", rpc: "PERMISSION_DENIED"), .drop("SENDER_ID_MISMATCH")),
        ("401 THIRD_PARTY_AUTH_ERROR", fcm(401, "THIRD_PARTY_AUTH_ERROR", rpc: "UNAUTHENTICATED"), .park("THIRD_PARTY_AUTH_ERROR")),
        ("401 without a code: stale token", fcm(401, nil, rpc: "UNAUTHENTICATED"), .resendWithNewToken),
        ("401 on a fresh token", fcm(401, nil, rpc: "UNAUTHENTICATED", afterRefresh: true),
         .park("UNAUTHENTICATED: access token refused after a refresh")),
        ("grant refused", .fcm(FCMResponse(status: 0, grantRefused: "invalid_grant")), .park("TokenRefused: invalid_grant")),
        ("403 PERMISSION_DENIED (no FCM code)", fcm(403, nil, rpc: "PERMISSION_DENIED"), .fail("PERMISSION_DENIED")),
        ("404 HTML of the legacy endpoint", fcm(404, nil), .fail("HTTP 404")),
        ("UNSPECIFIED_ERROR", fcm(400, "UNSPECIFIED_ERROR"), .fail("UNSPECIFIED_ERROR")),
    ]

    @Test func everyFCMAnswerLandsInItsClass() {
        for (label, result, expected) in Self.table {
            let decision = policy.decide(result, attempt: 1, expiration: nil, nowSeconds: 1_800_000_000)
            #expect(Self.classify(decision) == expected, "\(label): \(decision)")
        }
    }

    @Test func retriesBackOffLikeAPNsAndEndAtMaxAttempts() {
        let second = policy.decide(fcm(500, "INTERNAL"), attempt: 2, expiration: nil, nowSeconds: 0)
        #expect(second == .retry(afterMilliseconds: 1_800_000, reason: "INTERNAL"))
        let last = policy.decide(fcm(503, "UNAVAILABLE"), attempt: policy.settings.maxAttempts, expiration: nil, nowSeconds: 0)
        #expect(last == .fail(reason: "MaxAttempts:UNAVAILABLE"))
    }

    @Test func only429SlowsTheProjectDownForItsRetryAfter() {
        #expect(policy.slowDownMilliseconds(fcm(429, "QUOTA_EXCEEDED", retryAfter: 30)) == 30_000)
        #expect(policy.slowDownMilliseconds(fcm(429, "QUOTA_EXCEEDED")) == 10_000)
        #expect(policy.slowDownMilliseconds(fcm(503, "UNAVAILABLE", retryAfter: 30)) == nil)
        #expect(policy.slowDownMilliseconds(.response(APNsResponse(status: 429, reason: .tooManyRequests))) == nil)
        // A credential error pauses through the credential path, an answer proves the destination reachable.
        #expect(policy.refusesCredential(fcm(401, "THIRD_PARTY_AUTH_ERROR")))
        #expect(!policy.refusesCredential(fcm(404, "UNREGISTERED")))
    }

    /// Issue 54: a `Retry-After` past its class's cap is held to the cap (a throttle to `throttle_cap_seconds`, a
    /// server error to `server_error_cap_seconds`), for the job and for the project's slow-down, and reported.
    @Test func aRetryAfterPastItsCapIsHeldToTheCap() {
        let absurd: Int64 = 999_999_999
        #expect(policy.decide(fcm(429, "QUOTA_EXCEEDED", retryAfter: absurd), attempt: 1, expiration: nil, nowSeconds: 0)
            == .retry(afterMilliseconds: 600_000, reason: "QUOTA_EXCEEDED"))
        #expect(policy.slowDownMilliseconds(fcm(429, "QUOTA_EXCEEDED", retryAfter: absurd)) == 600_000)
        #expect(policy.decide(fcm(503, "UNAVAILABLE", retryAfter: absurd), attempt: 1, expiration: nil, nowSeconds: 0)
            == .retry(afterMilliseconds: 14_400_000, reason: "UNAVAILABLE"))
        #expect(policy.cappedRetryAfter(fcm(429, "QUOTA_EXCEEDED", retryAfter: absurd))! == (absurd * 1000, 600_000))
        #expect(policy.cappedRetryAfter(fcm(503, "UNAVAILABLE", retryAfter: absurd))! == (absurd * 1000, 14_400_000))
        // Within the cap it is honoured as asked, and nothing is reported.
        #expect(policy.decide(fcm(429, "QUOTA_EXCEEDED", retryAfter: 600), attempt: 1, expiration: nil, nowSeconds: 0)
            == .retry(afterMilliseconds: 600_000, reason: "QUOTA_EXCEEDED"))
        #expect(policy.cappedRetryAfter(fcm(429, "QUOTA_EXCEEDED", retryAfter: 600)) == nil)
        #expect(policy.cappedRetryAfter(fcm(200, nil)) == nil)
    }

    /// Found by FuzzFCMResponse: `"status":""` made the reason (results, logs, the throttle pause) an empty string.
    @Test func anEmptyStatusOrCodeFallsBackToTheHTTPStatusAsTheReason() {
        let r = FCMResponse.decode(status: 429, body: Array(#"{"error":{"code":429,"status":""}}"#.utf8), retryAfter: "30")
        #expect(r.reasonName == "HTTP 429")
        let coded = FCMResponse.decode(status: 404, body: Array(#"{"error":{"status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":""}]}}"#.utf8), retryAfter: nil)
        #expect(coded.reasonName == "NOT_FOUND")
    }

    @Test func fcmErrorBodiesDecode() {
        let body = """
        {"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[\
        {"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}
        """
        let r = FCMResponse.decode(status: 404, body: Array(body.utf8), retryAfter: nil)
        #expect(r.errorCode == "UNREGISTERED" && r.rpcStatus == "NOT_FOUND" && r.message == "Requested entity was not found.")
        let bad = """
        {"error":{"code":400,"status":"INVALID_ARGUMENT","message":"x","details":[ {"@type":"type.googleapis.com/google.rpc.BadRequest",\
        "fieldViolations":[{"field":"message.token","description":"Invalid registration token"}]} , \
        {"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"}]}}
        """
        let b = FCMResponse.decode(status: 400, body: Array(bad.utf8), retryAfter: " 17 ")
        #expect(b.fieldViolations == ["message.token"] && b.errorCode == "INVALID_ARGUMENT" && b.retryAfterSeconds == 17)
        let ok = FCMResponse.decode(status: 200, body: Array(#"{"name":"projects/demo/messages/0:123"}"#.utf8), retryAfter: "soon")
        #expect(ok.name == "projects/demo/messages/0:123" && ok.retryAfterSeconds == nil)
        let html = FCMResponse.decode(status: 404, body: Array("<html><title>Not Found</title></html>".utf8), retryAfter: nil)
        #expect(html.reasonName == "HTTP 404" && html.errorCode == nil)
    }
}

@Suite struct FCMMessageTests {
    private func check(_ json: String) -> Result<FCMTarget, FCMValidationFailure> { FCMMessageValidator.validate(Array(json.utf8)) }

    private func failure(_ json: String) -> String? {
        if case .failure(let f) = check(json) { return f.description }
        return nil
    }

    @Test func theTargetIsExactlyOneOfTokenTopicOrCondition() throws {
        #expect(try check(#"{"token":"abc:DEF-1","notification":{"title":"t"}}"#).get() == FCMTarget.token("abc:DEF-1"))
        #expect(try check(#"{"topic":"news.sport"}"#).get() == .topic("news.sport"))
        #expect(try check(#"{"condition":"'a' in topics && 'b' in topics"}"#).get() == .condition("'a' in topics && 'b' in topics"))
        #expect(failure(#"{"notification":{"title":"t"}}"#)?.contains("needs one target") == true)
        #expect(failure(#"{"token":"a","topic":"b"}"#)?.contains("2 targets") == true)
        #expect(failure(#"{"token":""}"#)?.hasPrefix("INVALID_ARGUMENT: message.token must not be empty") == true)
        #expect(try check(#"{"topic":"/topics/news"}"#).get() == .topic("/topics/news"))
        #expect(failure(#"{"topic":"news sport"}"#)?.contains("does not match") == true)
        #expect(try check(#"{"fid":"cXyZ","fcmOptions":{"analytics_label":"x"}}"#).get() == .token("cXyZ"))
        #expect(failure(#"{"token":7}"#) == "INVALID_ARGUMENT: message.token must be a string")
    }

    @Test func dataValuesMustBeStringsAndKeysNotReserved() {
        #expect((try? check(#"{"token":"t","data":{"count":"3","deep":"x"}}"#).get()) != nil)
        #expect(failure(#"{"token":"t","data":{"count":3}}"#)?.hasPrefix("INVALID_ARGUMENT: message.data.count must be a string") == true)
        #expect(failure(#"{"token":"t","data":{"from":"me"}}"#)?.contains("reserved") == true)
        #expect(failure(#"{"token":"t","data":{"google.sent_time":"1"}}"#)?.contains("reserved") == true)
        #expect(failure(#"{"token":"t","data":{"gcm.x":"1"}}"#)?.contains("reserved") == true)
        #expect(failure(#"{"token":"t","data":["a"]}"#) == "INVALID_ARGUMENT: message.data must be an object")
        #expect(failure(#"{"token":"t","android":"high"}"#) == "INVALID_ARGUMENT: message.android must be an object")
        #expect(failure(#"{"token":"t","to":"legacy"}"#)?.contains("Unknown name \"to\"") == true)
        // FCM's newer members pass as FCM takes them (issue 54): `android_v2` in either spelling.
        #expect((try? check(#"{"token":"t","android_v2":{"remote_notification":{"title":"x"}}}"#).get()) == .token("t"))
        #expect((try? check(#"{"token":"t","androidV2":{"background_sync":{}}}"#).get()) == .token("t"))
        #expect(failure(#"{"token":"t","android_v2":true}"#) == "INVALID_ARGUMENT: message.android_v2 must be an object")
    }

    @Test func sizeLimitIs4096AndHalfThatForTopics() {
        func message(_ target: String, dataBytes: Int) -> String {
            // key "k" (1 byte) + value: dataBytes in all.
            #"{\#(target),"data":{"k":"\#(String(repeating: "v", count: dataBytes - 1))"}}"#
        }
        #expect((try? check(message(#""token":"t""#, dataBytes: 4096)).get()) != nil)
        #expect(failure(message(#""token":"t""#, dataBytes: 4097))?.contains("too big: 4097 bytes") == true)
        #expect((try? check(message(#""topic":"t""#, dataBytes: 2048)).get()) != nil)
        #expect(failure(message(#""topic":"t""#, dataBytes: 2049))?.contains("at most 2048") == true)
        // notification counts too
        let both = #"{"token":"t","notification":{"body":"\#(String(repeating: "b", count: 3000))"},"data":{"k":"\#(String(repeating: "v", count: 1100))"}}"#
        #expect(failure(both)?.contains("too big") == true)
    }

    /// A job read as the worker reads it, with APNs' and FCM's members: its envelope, and FCM's message when it is an
    /// FCM job (APNs' reading otherwise, for its refusals).
    private static func parse(_ text: String) throws(JobError) -> (spec: JobSpec, message: [UInt8]) {
        let bytes = Array(text.utf8)
        let spec = try JobParser.parse(bytes, members: JobMemberTable([.apns: APNsProvider.jobMembers, .fcm: FCMProvider.jobMembers]))
        if spec.platform == FCMProvider.platform { return (spec, try FCMProvider.readJob(bytes, spec: spec)) }
        _ = try APNsProvider.readJob(bytes, spec: spec)
        return (spec, [])
    }

    @Test func fcmJobsAreParsedByPlatformOrShapeWithTheMessageSlicedByteForByte() throws {
        let message = #"{ "token" : "fcm:tok\u00e9n", "data" : {"a":"1"} , "android":{"priority":"HIGH"}}"#
        let job = try Self.parse(#"{"id":"f1","app":"android","message":\#(message)}"#)
        #expect(job.spec.platform == .fcm && !job.spec.platformGiven && job.message == Array(message.utf8))
        let explicit = try Self.parse(#"{"platform":"fcm","message":{"topic":"news"}}"#).spec
        #expect(explicit.platform == .fcm && explicit.platformGiven)
        // APNs stays the default: a job with token and payload is an APNs job, as before.
        let apns = try Self.parse(#"{"token":"ab12","payload":{"aps":{}}}"#).spec
        #expect(apns.platform == .apns)
        #expect(throws: JobError.missingMessage(.fcm)) { try Self.parse(#"{"platform":"fcm","payload":{"aps":{}}}"#) }
        #expect(throws: JobError.badPlatform("gcm")) { try Self.parse(#"{"platform":"gcm","message":{}}"#) }
        #expect(throws: JobError.messageNotAnObject) { try Self.parse(#"{"platform":"fcm","message":"hi"}"#) }
        // Producers' own `platform` and `message` fields on APNs jobs keep working, as before FCM.
        let own = try Self.parse(#"{"token":"ab12","payload":{"aps":{}},"platform":"ios","message":"Hi Ann"}"#)
        #expect(own.spec.platform == .apns && own.message.isEmpty)
        // A top-level FCM-style token on an APNs job is still refused as not hexadecimal.
        #expect(throws: JobError.tokenNotHex) { try Self.parse(#"{"token":"abc:def","payload":{}}"#) }
    }
}

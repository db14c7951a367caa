import HMS
import HeraldTestSupport
import PushCore
import Testing

/// random() = 0.5: delays come out unjittered (5xx base 900 s, 429 base 10 s by default).
private let policy = OutcomePolicy(random: { 0.5 })

/// An answer as Push Kit writes it, decoded the way the sender does.
private func hms(_ status: Int, _ body: String, afterRefresh: Bool = false) -> DeliveryResult {
    var answer = HMSResponse.decode(status: status, body: Array(body.utf8))
    answer.afterTokenRefresh = afterRefresh
    return .hms(answer)
}

private func coded(_ status: Int, _ code: String, _ msg: String, afterRefresh: Bool = false) -> DeliveryResult {
    hms(status, #"{"code":"\#(code)","msg":"\#(msg)","requestId":"1570000000000000006"}"#, afterRefresh: afterRefresh)
}

@Suite struct HMSOutcomeTests {
    typealias Class = OutcomeClass

    /// The issue's classes, row by row: Push Kit's answer, and what Herald does with the job.
    static let table: [(String, DeliveryResult, Class)] = [
        ("200 80000000", coded(200, "80000000", "Success"), .delivered),
        ("80100000 partial success, another token illegal",
         coded(200, "80100000", #"{\"success\":1,\"failure\":1,\"illegal_tokens\":[\"other\"]}"#), .delivered),
        ("80100000 partial success, this job's token illegal",
         coded(200, "80100000", #"{\"success\":0,\"failure\":1,\"illegal_tokens\":[\"t\"]}"#),
         .drop(#"80100000 {"success":0,"failure":1,"illegal_tokens":["t"]}"#)),
        ("80300007 all tokens invalid", coded(400, "80300007", "All the tokens are invalid"), .drop("80300007 All the tokens are invalid")),
        ("401 80200003 expired OAuth token", coded(401, "80200003", "OAuth token expired"), .resendWithNewToken),
        ("401 80200001 OAuth authentication error", coded(401, "80200001", "Oauth authentication error"), .resendWithNewToken),
        ("401 on a fresh token", coded(401, "80200003", "OAuth token expired", afterRefresh: true),
         .park("80200003 OAuth token expired: access token refused after a refresh")),
        ("401 without a body", hms(401, ""), .resendWithNewToken),
        ("grant refused", .hms(HMSResponse(status: 0, grantRefused: "1101 invalid client")), .park("TokenRefused: 1101 invalid client")),
        ("503 flow control", hms(503, ""), .slowed(ms: 10_000, reason: "HTTP 503")),
        ("503 flow control with a code", coded(503, "81000001", "flow control"), .slowed(ms: 10_000, reason: "81000001 flow control")),
        ("429", hms(429, "Too Many Requests"), .slowed(ms: 10_000, reason: "HTTP 429")),
        ("500 81000001 internal error", coded(500, "81000001", "System inner error"), .retry(ms: 900_000, reason: "81000001 System inner error")),
        ("80600003 OAuth service failed", coded(200, "80600003", "Request OAuth service failed"),
         .retry(ms: 900_000, reason: "80600003 Request OAuth service failed")),
        ("502 from a proxy, HTML", hms(502, "<html>bad gateway</html>"), .retry(ms: 900_000, reason: "HTTP 502")),
        ("80100001 parameter", coded(400, "80100001", "Some request parameters are incorrect"),
         .fail("80100001 Some request parameters are incorrect")),
        ("80100003 structure", coded(400, "80100003", "Illegal message structure"), .fail("80100003 Illegal message structure")),
        ("80100004 TTL", coded(400, "80100004", "The message expiration time is earlier than the current time"),
         .fail("80100004 The message expiration time is earlier than the current time")),
        ("80300002 no permission", coded(403, "80300002", "No permission to send message to these tokens"),
         .fail("80300002 No permission to send message to these tokens")),
        ("80300008 too large", coded(400, "80300008", "The message body size exceeds the default value"),
         .fail("80300008 The message body size exceeds the default value")),
        ("80300010 too many tokens", coded(400, "80300010", "The number of tokens exceeds 1000"),
         .fail("80300010 The number of tokens exceeds 1000")),
        ("404 wrong path", hms(404, "not found"), .fail("HTTP 404")),
        ("200 with an unknown code", coded(200, "89999999", "new"), .fail("89999999 new")),
    ]

    @Test func everyHMSAnswerLandsInItsClass() {
        for (label, result, expected) in Self.table {
            let decision = policy.decide(result, attempt: 1, expiration: nil, nowSeconds: 1_800_000_000)
            #expect(OutcomeClass.of(decision, result, policy: policy) == expected, "\(label): \(decision)")
        }
    }

    @Test func answersDecodeWithoutFailingOnAnyBody() {
        let partial = HMSResponse.decode(status: 200, body: Array(#"{"code":"80100000","msg":"{\"success\":2,\"failure\":1,\"illegal_tokens\":[\"x\"]}","requestId":"r1"}"#.utf8))
        #expect(partial.code == "80100000" && partial.successCount == 2 && partial.failureCount == 1 && partial.illegalTokens == ["x"])
        #expect(partial.requestID == "r1")
        for body in ["", "null", "[1]", #"{"code":80000000}"#, "{\"code\":", String(repeating: "{", count: 10_000)] {
            let answer = HMSResponse.decode(status: 200, body: Array(body.utf8))
            #expect(answer.status == 200, "\(body.prefix(20))")
        }
        #expect(HMSResponse.decode(status: 200, body: Array(#"{"code":80000000,"msg":"Success"}"#.utf8)).answerClass == .delivered)
        #expect(HMSResponse.decode(status: 200, body: Array(#"{"code":"80000000","msg":"Success"}"#.utf8)).metricsReason == "")
        #expect(HMSResponse.decode(status: 503, body: []).metricsReason == "HTTP 503")
        let long = HMSResponse.decode(status: 400, body: Array(#"{"code":"80100003","msg":"\#(String(repeating: "x", count: 5000))"}"#.utf8))
        #expect(long.reasonName.utf8.count < 300)
    }
}

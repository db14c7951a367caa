import Harmony
import HMS
import HeraldTestSupport
import PushCore
import Testing

/// random() = 0.5: delays come out unjittered (5xx base 900 s, 429 base 10 s by default).
private let policy = OutcomePolicy(random: { 0.5 })

/// An answer as Push Kit v3 writes it, decoded the way the sender does.
private func v3(_ status: Int, _ body: String, afterRefresh: Bool = false) -> DeliveryResult {
    var answer = HarmonyResponse.decode(status: status, body: Array(body.utf8))
    answer.envelope.afterTokenRefresh = afterRefresh
    return .harmony(answer)
}

private func coded(_ status: Int, _ code: String, _ msg: String, afterRefresh: Bool = false) -> DeliveryResult {
    v3(status, #"{"code":"\#(code)","msg":"\#(msg)","requestId":"157*******006"}"#, afterRefresh: afterRefresh)
}

@Suite struct HarmonyOutcomeTests {
    typealias Class = OutcomeClass

    /// Every documented v3 result code and HTTP status (docs/harmony.md's table), row by row.
    static let table: [(String, DeliveryResult, Class)] = [
        ("200 80000000", coded(200, "80000000", "Success"), .delivered),
        ("80100000 partial success, another token illegal",
         coded(200, "80100000", #"{\"illegalTokens\":{\"tokenFormatError\":[\"other\"]},\"success\":1,\"failure\":1}"#), .delivered),
        ("80100000 partial success, nothing delivered",
         coded(200, "80100000", #"{\"illegalTokens\":{\"noRight\":[\"t\"]},\"success\":0,\"failure\":1}"#),
         .drop(#"80100000 {"illegalTokens":{"noRight":["t"]},"success":0,"failure":1}"#)),
        ("80300007 all tokens invalid", coded(400, "80300007", #"{\"illegalTokens\":{\"tokenFormatError\":[\"t\"]},\"failure\":1}"#),
         .drop(#"80300007 {"illegalTokens":{"tokenFormatError":["t"]},"failure":1}"#)),
        ("80300007, every token refused for the app's reason", coded(400, "80300007", #"{\"illegalTokens\":{\"noPushTypeRight\":[\"t\"]},\"failure\":1}"#),
         .fail(#"80300007 {"illegalTokens":{"noPushTypeRight":["t"]},"failure":1}"#)),
        ("401 80200001 authentication failed", coded(401, "80200001", "Authentication failed"), .resendWithNewToken),
        ("401 80200003 JWT expired", coded(401, "80200003", "JWT expired"), .resendWithNewToken),
        ("401 without a body", v3(401, ""), .resendWithNewToken),
        ("401 on a freshly signed JWT", coded(401, "80200001", "Authentication failed", afterRefresh: true),
         .park("80200001 Authentication failed: access token refused after a refresh")),
        ("a key that does not sign", .harmony(HarmonyResponse(signingFailed: "cannot sign")), .park("TokenRefused: cannot sign")),
        ("503 flow control", v3(503, ""), .slowed(ms: 10_000, reason: "HTTP 503")),
        ("503 flow control with a code", coded(503, "81000001", "flow control"), .slowed(ms: 10_000, reason: "81000001 flow control")),
        ("429", v3(429, "Too Many Requests"), .slowed(ms: 10_000, reason: "HTTP 429")),
        ("500 81000001 system error", coded(500, "81000001", "System internal error"), .retry(ms: 900_000, reason: "81000001 System internal error")),
        ("80600003", coded(500, "80600003", "Request OAuth service failed"), .retry(ms: 900_000, reason: "80600003 Request OAuth service failed")),
        ("502 from a proxy, HTML", v3(502, "<html>bad gateway</html>"), .retry(ms: 900_000, reason: "HTTP 502")),
        ("80100001 parameter", coded(400, "80100001", "Check Parameter Error"), .fail("80100001 Check Parameter Error")),
        ("80100003 payload structure", coded(400, "80100003", "Illegal payload, badge addNum value ranges from 1 to 99"),
         .fail("80100003 Illegal payload, badge addNum value ranges from 1 to 99")),
        ("80300002 no permission", coded(403, "80300002", "No permission to send message"), .fail("80300002 No permission to send message")),
        ("80300008 too large", coded(400, "80300008", "The message body size exceeds 4096 bytes"), .fail("80300008 The message body size exceeds 4096 bytes")),
        ("80300010 too many tokens", coded(400, "80300010", "The number of tokens exceeds the limit"), .fail("80300010 The number of tokens exceeds the limit")),
        ("404 wrong project", v3(404, "Service not found"), .fail("HTTP 404")),
        ("200 with an unknown code", coded(200, "89999999", "new"), .fail("89999999 new")),
    ]

    @Test func everyHarmonyAnswerLandsInItsClass() {
        for (label, result, expected) in Self.table {
            let decision = policy.decide(result, attempt: 1, expiration: nil, nowSeconds: 1_800_000_000)
            #expect(OutcomeClass.of(decision, result, policy: policy) == expected, "\(label): \(decision)")
        }
    }

    /// A v3 partial success names its illegal tokens by reason: each is a gone token of the many-token send, in order.
    @Test func aPartialSuccessNamesItsBadTokensByReason() throws {
        let answer = try #require(coded(200, "80100000",
            #"{\"illegalTokens\":{\"tokenFormatError\":[\"a\",\"b\"],\"noPushTypeRight\":[\"c\"]},\"success\":2,\"failure\":3}"#).harmony)
        #expect(answer.illegalTokens == ["a", "b", "c"])
        #expect(answer.envelope.illegalReasons == ["tokenFormatError", "tokenFormatError", "noPushTypeRight"])
        #expect(answer.resultFields.goneTokens == ["a", "b"] && answer.resultFields.failedTokens == ["c"])
        #expect(answer.resultFields.messageName == "157*******006")
        #expect(answer.metricsReason == "80100000")
        #expect(HarmonyResponse.decode(status: 200, body: Array(#"{"code":"80000000","msg":"Success"}"#.utf8)).metricsReason == "")
        for body in ["", "null", "[1]", "{\"code\":", String(repeating: "{", count: 10_000)] {
            #expect(HarmonyResponse.decode(status: 200, body: Array(body.utf8)).status == 200)
        }
    }

    /// An answer naming tokens in both of Push Kit's forms (v1's plain list and v3's by reason), in either order: the
    /// reasons stay with their tokens (a reason list shorter than the tokens' crashed the worker), the plain-listed
    /// ones are gone as v1's are.
    @Test func tokensNamedInBothFormsKeepTheirOwnReasons() throws {
        for msg in [#"{\"illegal_tokens\":[\"a\"],\"illegalTokens\":{\"noRight\":[\"b\"],\"noPushTypeRight\":[\"c\"]}}"#,
                    #"{\"illegalTokens\":{\"noRight\":[\"b\"],\"noPushTypeRight\":[\"c\"]},\"illegal_tokens\":[\"a\"]}"#] {
            let answer = try #require(coded(200, "80100000", msg).harmony)
            #expect(Set(answer.illegalTokens) == ["a", "b", "c"])
            #expect(answer.envelope.illegalReasons.count == answer.illegalTokens.count)
            #expect(Set(answer.resultFields.goneTokens) == ["a", "b"] && answer.resultFields.failedTokens == ["c"], "\(msg)")
        }
    }
}

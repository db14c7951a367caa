import HMS
import ProviderKit
import PushCore
import Testing

private func check(_ message: String) -> Result<HMSTarget, HMSValidationFailure> { HMSMessageValidator.validate(Array(message.utf8)) }

private func reason(_ message: String) -> String? {
    if case .failure(let failure) = check(message) { return failure.description }
    return nil
}

@Suite struct HMSMessageTests {
    @Test func aPushKitMessageIsAcceptedWithItsTarget() {
        let message = #"{"notification":{"title":"t","body":"b"},"data":"{\"k\":1}","android":{"urgency":"HIGH","ttl":"86400s","collapse_key":-1,"fast_app_target":2},"token":["tok-1"]}"#
        #expect(check(message) == .success(.tokens(["tok-1"])))
        #expect(check(#"{"data":"x","topic":"news"}"#) == .success(.topic("news")))
        #expect(check(#"{"data":"x","condition":"'a' in topics"}"#) == .success(.condition("'a' in topics")))
        #expect(check(#"{"android":{"ttl":"1.5s"},"token":["a","b"]}"#) == .success(.tokens(["a", "b"])))
    }

    @Test func whatPushKitRefusesIsRefusedWithItsCode() {
        #expect(reason("[]") == "80100003 message must be a JSON object")
        #expect(reason(#"{"token":["a"],"priority":1}"#) == #"80100003 unknown member "priority" in message"#)
        #expect(reason(#"{"data":{"k":"v"},"token":["a"]}"#) == "80100003 message.data must be a string")
        #expect(reason(#"{"data":"x"}"#) == "80300010 message needs one target: token, topic or condition")
        #expect(reason(#"{"token":["a"],"topic":"t"}"#) == "80100001 message has 2 targets; exactly one of token, topic or condition")
        #expect(reason(#"{"token":"a"}"#) == "80100003 message.token must be a list of device tokens")
        #expect(reason(#"{"token":[]}"#) == "80300010 message.token is empty")
        #expect(reason(#"{"token":["a",""]}"#) == "80100001 message.token[1] is not a non-empty string")
        #expect(reason(#"{"android":{"urgency":"URGENT"},"token":["a"]}"#) == #"80100001 message.android.urgency must be "HIGH" or "NORMAL""#)
        #expect(reason(#"{"android":{"ttl":"86400"},"token":["a"]}"#) == nil)
        for ttl in ["1296001s", "1.1234567890s", "1s5", "-1s", "s", "1.s"] {
            #expect(reason(#"{"android":{"ttl":"\#(ttl)"},"token":["a"]}"#)?.hasPrefix("80100001 message.android.ttl") == true, "\(ttl)")
        }
        #expect(reason(#"{"android":{"collapse_key":101},"token":["a"]}"#) == "80100013 message.android.collapse_key must be an integer from -1 to 100")
        #expect(reason(#"{"android":{"fast_app_target":3},"token":["a"]}"#)?.hasPrefix("80100001 message.android.fast_app_target") == true)
        #expect(reason(#"{"notification":"hi","token":["a"]}"#) == "80100003 message.notification must be an object")
        // 4,096 bytes besides the token list pass, one more does not.
        let filler = String(repeating: "x", count: 4096 - #"{"data":"","token":}"#.utf8.count)
        #expect(reason(#"{"data":"\#(filler)","token":["a","b"]}"#) == nil)
        #expect(reason(#"{"data":"\#(filler)x","token":["a"]}"#) == "80300008 message is 4097 bytes besides its token list; at most 4096")
        let many = #"{"data":"x","token":[\#((0...1000).map { "\"t\($0)\"" }.joined(separator: ","))]}"#
        #expect(reason(many) == "80300010 message.token lists 1001 tokens; at most 1000")
    }

    /// A Push Kit job without its `message` is told so in Push Kit's name, not FCM's (issue 54).
    @Test func aJobWithoutItsMessageIsToldItIsAPushKitJob() {
        #expect(throws: JobError.missingMessage(.hms)) { try HMSProvider.parse(Array(#"{"platform":"hms","payload":{}}"#.utf8)) }
        #expect(JobError.missingMessage(.hms).description == #"a Huawei Push Kit job needs a "message" (the provider's own message object)"#)
    }

    /// The job's message reaches Push Kit byte for byte, inside Push Kit's request body.
    @Test func theBodyCarriesTheMessageBytesAsWritten() {
        let message = Array(#"{ "data" : "caf\u00e9", "token":["t"] }"#.utf8)
        let body = HMSSender.body(message: message)
        #expect(String(decoding: body, as: UTF8.self) == #"{"validate_only":false,"message":{ "data" : "caf\u00e9", "token":["t"] }}"#)
        #expect(String(decoding: HMSSender.body(message: [0x7B, 0x7D], validateOnly: true), as: UTF8.self) == #"{"validate_only":true,"message":{}}"#)
    }

    /// Several tokens are one request's: the target lists them decoded, each once, in the producer's order.
    @Test func severalTokensAreOneTargetDecodedEachOnce() {
        #expect(HMSMessageValidator.validate(Array(#"{"data":"x","token":["a","b\"q","a","\u0063"]}"#.utf8)) == .success(.tokens(["a", "b\"q", "c"])))
    }

    @Test func theGrantIsAFormWithEncodedValuesAndTheSecretIsNeverPrinted() {
        let credential = HMSCredential(appID: "10086", secret: "s3cr&t=+/ é")
        #expect(String(decoding: credential.formBody, as: UTF8.self)
                == "grant_type=client_credentials&client_id=10086&client_secret=s3cr%26t%3D%2B%2F%20%C3%A9")
        #expect(!"\(credential)".contains("s3cr"))
        #expect(credential.sendPath == "/v1/10086/messages:send")
    }

    /// Huawei's token endpoint names a refusal by number; it must park the app, not be retried as a network error.
    @Test func huaweisNumberedOAuthErrorIsARefusal() {
        let refused = OAuthTokenAnswer.decode(status: 400, body: Array(#"{"error":1101,"sub_error":20404,"error_description":"invalid client"}"#.utf8))
        #expect(refused == .refused(error: "1101", detail: "invalid client"))
        #expect(OAuthTokenAnswer.decode(status: 500, body: Array(#"{"error":1101}"#.utf8)) != .refused(error: "1101", detail: ""))
        #expect(OAuthTokenAnswer.decode(status: 200, body: Array(#"{"access_token":"x","expires_in":3600,"token_type":"Bearer"}"#.utf8))
                == .token(accessToken: "x", expiresInSeconds: 3600))
    }
}

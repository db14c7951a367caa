import Foundation
import Testing
@testable import Simulators

/// The Push Kit simulator's token endpoint and messages:send, driven by curl (a TLS client nobody here wrote)
/// over HTTP/2 and HTTP/1.1: Huawei's codes, JSON shapes and device fates.
@Suite struct HMSEndpointTests {
    @Test func tokenEndpointGrantsClientCredentialsAndRefusesWithHuaweisErrorJSON() throws {
        let fixture = try HMSFixture()
        defer { fixture.stop() }
        let good = try fixture.tokenRequest("grant_type=client_credentials&client_id=10000001&client_secret=s3cret")
        #expect(good.status == 200)
        #expect(good.json["token_type"] as? String == "Bearer")
        #expect(good.json["expires_in"] as? Int == 3600)
        let token = try #require(good.json["access_token"] as? String)
        #expect(token.utf8.count > 100)
        // Huawei escapes "/" in its JSON; a client's JSON decoder turns "\/" back.
        #expect(!good.body.contains("/") || good.body.contains(#"\/"#))
        #expect(!good.body.replacingOccurrences(of: #"\/"#, with: "").contains("/"))

        let badSecret = try fixture.tokenRequest("grant_type=client_credentials&client_id=10000001&client_secret=wrong")
        #expect(badSecret.status == 400)
        #expect(badSecret.json["error"] as? Int == 1101)
        #expect(badSecret.json["sub_error"] as? Int == 12304)
        #expect(badSecret.json["error_description"] as? String == "invalid client_secret")
        let unknown = try fixture.tokenRequest("grant_type=client_credentials&client_id=999&client_secret=s3cret")
        #expect(unknown.json["sub_error"] as? Int == 20003)
        let malformed = try fixture.tokenRequest("grant_type=client_credentials&client_id=abc&client_secret=s3cret")
        #expect(malformed.json["sub_error"] as? Int == 20002)
        let grant = try fixture.tokenRequest("grant_type=password&client_id=10000001&client_secret=s3cret")
        #expect(grant.status == 400)
        #expect(grant.json["error"] as? Int == 1101)
        let stats = fixture.server.stats()
        #expect(stats.tokenRequests == 5)
        #expect(stats.tokensIssued == 1)
        #expect(stats.tokenErrors["1101/12304"] == 1)
    }

    @Test func aGoodSendAnswersSuccessAndIsRecordedByteForByte() throws {
        let fixture = try HMSFixture()
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        let body = HMSFixture.message(extra: #","android":{"urgency":"HIGH","ttl":"86400s","collapse_key":-1,"category":"IM"}"#)
        for http1 in [false, true] {
            let answer = try fixture.send(body, bearer: bearer, http1: http1)
            #expect(answer.status == 200)
            #expect(answer.hmsCode == "80000000")
            #expect(answer.hmsMsg == "Success")
            let requestId = try #require(answer.json["requestId"] as? String)
            #expect(requestId.utf8.count == 24 && requestId.allSatisfy(\.isNumber))
        }
        let accepted = fixture.server.acceptedMessages()
        #expect(accepted.count == 2)
        #expect(accepted.map(\.transport) == ["h2", "http/1.1"])
        let first = try #require(accepted.first)
        #expect(first.app == "10000001")
        #expect(first.tokens == [HMSFixture.token])
        #expect(first.delivered == [HMSFixture.token])
        let sent = try #require(body.range(of: #"{"data""#)).lowerBound
        #expect(first.message == String(body[sent..<body.index(before: body.endIndex)]))
        #expect(abs(first.timeMillis - Int64(Date().timeIntervalSince1970 * 1000)) < 60_000)
        #expect(fixture.server.stats().tokensDelivered == 2)
    }

    @Test func illegalTokensGivePartialSuccessAndAllIllegalGive80300007() throws {
        let fixture = try HMSFixture(faults: MockHMSFaultScript(invalidTokenPrefixes: ["dead-"]))
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        let partial = try fixture.send(HMSFixture.message([HMSFixture.token, "dead-1", "with space", "good-2"]), bearer: bearer)
        #expect(partial.status == 200)
        #expect(partial.hmsCode == "80100000")
        // msg is a JSON document in a string, as Huawei sends it.
        let msg = try #require(partial.hmsMsg)
        let inner = try #require(try JSONSerialization.jsonObject(with: Data(msg.utf8)) as? [String: Any])
        #expect(inner["success"] as? Int == 2)
        #expect(inner["failure"] as? Int == 2)
        #expect(inner["illegal_tokens"] as? [String] == ["dead-1", "with space"])

        let none = try fixture.send(HMSFixture.message(["dead-2", "dead-3"]), bearer: bearer)
        #expect(none.status == 400)
        #expect(none.hmsCode == "80300007")
        let log = fixture.server.acceptedMessages()
        #expect(log.map(\.code) == ["80100000", "80300007"])
        #expect(log[0].delivered == [HMSFixture.token, "good-2"])
        #expect(log[1].delivered.isEmpty)
        let stats = fixture.server.stats()
        #expect(stats.tokensIllegal == 4)
        #expect(stats.tokensDelivered == 2)
        #expect(stats.byCode == ["80100000": 1, "80300007": 1])
    }

    @Test func aThousandTokensPassAndOneMoreIsRefused() throws {
        let fixture = try HMSFixture()
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        let thousand = (0..<1000).map { "tok-\($0)" }
        let ok = try fixture.send(HMSFixture.message(thousand), bearer: bearer)
        #expect(ok.hmsCode == "80000000")
        let over = try fixture.send(HMSFixture.message(thousand + ["tok-1000"]), bearer: bearer)
        #expect(over.status == 400)
        #expect(over.hmsCode == "80300010")
        let empty = try fixture.send(#"{"message":{"data":"x","token":[]}}"#, bearer: bearer)
        #expect(empty.hmsCode == "80300010")
        #expect(fixture.server.acceptedMessages().first?.tokens?.count == 1000)
    }

    @Test func theBearerIsCheckedExpiredUnknownAndAnotherAppsToken() throws {
        let fixture = try HMSFixture()
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        let missing = try fixture.send(HMSFixture.message(), bearer: nil)
        #expect(missing.status == 401)
        #expect(missing.hmsCode == "80200001")
        let other = try fixture.accessToken(app: "20000002", secret: "other")
        let wrongApp = try fixture.send(HMSFixture.message(), bearer: other)
        #expect(wrongApp.status == 401)
        #expect(wrongApp.hmsCode == "80200001")
        #expect(try fixture.send(HMSFixture.message(), bearer: other, app: "20000002").hmsCode == "80000000")

        fixture.server.expireAccessTokens()
        let expired = try fixture.send(HMSFixture.message(), bearer: bearer)
        #expect(expired.status == 401)
        #expect(expired.hmsCode == "80200003")
        #expect(expired.hmsMsg == "Oauth Token expired")
        // A refreshed token works again.
        #expect(try fixture.send(HMSFixture.message(), bearer: try fixture.accessToken()).hmsCode == "80000000")
        fixture.server.revokeAccessTokens()
        #expect(try fixture.send(HMSFixture.message(), bearer: bearer).hmsCode == "80200001")
    }

    @Test func messagesAreValidatedAsPushKitDoes() throws {
        let fixture = try HMSFixture()
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        func code(_ body: String) throws -> (Int, String?) {
            let answer = try fixture.send(body, bearer: bearer)
            return (answer.status, answer.hmsCode)
        }
        let big = String(repeating: "x", count: 4100)
        #expect(try code(#"{"message":{"data":"\#(big)","token":["a"]}}"#) == (400, "80300008"))
        // The tokens do not count towards the 4096 bytes.
        let manyLongTokens = (0..<40).map { "t\($0)-" + String(repeating: "y", count: 120) }
        #expect(try code(HMSFixture.message(manyLongTokens)) == (200, "80000000"))
        #expect(try code("not json") == (400, "80100003"))
        #expect(try code(#"{"messager":{"data":"x","token":["a"]}}"#) == (400, "80300010"))
        #expect(try code(#"{"message":{"data":"x","token":["a"],"topic":"news"}}"#) == (400, "80100001"))
        #expect(try code(#"{"message":{"data":{"k":"v"},"token":["a"]}}"#) == (400, "80100003"))
        #expect(try code(#"{"message":{"data":"x","token":"a"}}"#) == (400, "80100003"))
        #expect(try code(#"{"message":{"data":"x","token":["a"],"android":{"ttl":"ten"}}}"#) == (400, "80100001"))
        #expect(try code(#"{"message":{"data":"x","token":["a"],"android":{"ttl":"1296001s"}}}"#) == (400, "80100001"))
        #expect(try code(#"{"message":{"data":"x","token":["a"],"android":{"ttl":"3.5"}}}"#) == (200, "80000000"))
        #expect(try code(#"{"message":{"data":"x","token":["a"],"android":{"urgency":"URGENT"}}}"#) == (400, "80100001"))
        #expect(try code(#"{"message":{"data":"x","token":["a"],"android":{"collapse_key":101}}}"#) == (400, "80100013"))
        #expect(try code(#"{"validate_only":"yes","message":{"data":"x","token":["a"]}}"#) == (400, "80100003"))
        #expect(try code(#"{"validate_only":true,"message":{"data":"x","topic":"news"}}"#) == (200, "80000000"))
        let stats = fixture.server.stats()
        #expect(stats.validateOnly == 1)
        #expect(stats.byStatus["400"] == 11)
    }
}

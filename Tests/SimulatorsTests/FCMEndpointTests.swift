import Foundation
import Glibc
import Testing
@testable import Simulators

/// The FCM simulator's token endpoint and messages:send, driven by curl (a TLS client nobody here wrote) over
/// HTTP/2 and HTTP/1.1.
@Suite struct FCMEndpointTests {
    @Test func tokenEndpointGrantsAValidAssertionAndRefusesAnUnknownAccount() throws {
        let fixture = try FCMFixture()
        defer { fixture.stop() }
        let good = try fixture.tokenRequest(assertion: try fixture.server.serviceAccount.makeAssertion(audience: fixture.server.tokenURI))
        #expect(good.status == 200)
        #expect(good.json["token_type"] as? String == "Bearer")
        #expect(good.json["expires_in"] as? Int == 3600)
        #expect((good.json["access_token"] as? String)?.isEmpty == false)

        let stranger = try MockServiceAccount.generate(projectID: "other")
        let unknown = try fixture.tokenRequest(assertion: try stranger.makeAssertion(audience: fixture.server.tokenURI))
        #expect(unknown.status == 400)
        #expect(unknown.json["error"] as? String == "invalid_grant")
        #expect(unknown.json["error_description"] as? String == "Invalid grant: account not found")

        // The same email with another key: the signature does not verify.
        let impostor = try MockServiceAccount.generate(projectID: "herald-mock", clientEmail: fixture.server.serviceAccount.clientEmail,
                                                       privateKeyID: fixture.server.serviceAccount.privateKeyID)
        let forged = try fixture.tokenRequest(assertion: try impostor.makeAssertion(audience: fixture.server.tokenURI))
        #expect(forged.json["error_description"] as? String == "Invalid JWT Signature.")

        let account = fixture.server.serviceAccount
        let wrongAudience = try fixture.tokenRequest(assertion: try account.makeAssertion(audience: "https://example.com/token"))
        #expect(wrongAudience.json["error"] as? String == "invalid_grant")
        let tooLong = try fixture.tokenRequest(assertion: try account.makeAssertion(audience: fixture.server.tokenURI, lifetime: 7200))
        #expect((tooLong.json["error_description"] as? String)?.contains("short-lived") == true)
        let stale = try fixture.tokenRequest(assertion: try account.makeAssertion(audience: fixture.server.tokenURI, issuedAt: Int64(Date().timeIntervalSince1970) - 7200))
        #expect(stale.json["error"] as? String == "invalid_grant")
        let noScope = try fixture.tokenRequest(assertion: try account.makeAssertion(audience: fixture.server.tokenURI, scope: nil))
        #expect(noScope.json["error"] as? String == "invalid_scope")
        let wrongGrant = try fixture.tokenRequest(assertion: "x", grantType: "client_credentials")
        #expect(wrongGrant.json["error"] as? String == "unsupported_grant_type")

        let stats = fixture.server.stats()
        #expect(stats.tokensIssued == 1)
        #expect(stats.tokenRequests == 8)
        #expect(stats.tokenErrors["invalid_grant"] == 5)
    }

    @Test func sendWithoutOrWithABadTokenIs401AndTheLegacyEndpointIsAnHTML404() throws {
        let fixture = try FCMFixture()
        defer { fixture.stop() }
        let missing = try fixture.send(FCMFixture.message(), bearer: nil)
        #expect(missing.status == 401)
        #expect(missing.errorStatus == "UNAUTHENTICATED")
        #expect(missing.fcmErrorCode == nil)
        #expect(missing.body.contains("CREDENTIALS_MISSING"))
        let bad = try fixture.send(FCMFixture.message(), bearer: "ya29.made-up")
        #expect(bad.status == 401)
        #expect(bad.errorStatus == "UNAUTHENTICATED")

        for headers in [[String](), ["authorization: key=AAAAmadeup"]] {
            let legacy = try curl(caFile: fixture.caFile, [(fixture.server.baseURL + "/fcm/send", "POST", headers + ["content-type: application/json"],
                                                            #"{"to":"x","notification":{"title":"t"}}"#)])[0]
            #expect(legacy.status == 404)
            #expect(legacy.headers["content-type"]?.hasPrefix("text/html") == true)
            #expect(legacy.body.contains("<title>Error 404 (Not Found)!!1</title>"))
        }
        #expect(fixture.server.stats().legacyRequests == 2)
    }

    @Test func aGoodSendIsAnsweredWithItsNameAndRecordedByteForByteOverBothProtocols() throws {
        let fixture = try FCMFixture()
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        let message = #"{ "token" : "\#(FCMFixture.token)", "data": {"a": "1", "b": "é"}, "android": {"priority": "HIGH", "ttl": "3600s"} }"#
        for http1 in [false, true] {
            let answer = try fixture.send(#"{"message": \#(message)}"#, bearer: bearer, http1: http1)
            #expect(answer.status == 200)
            let name = try #require(answer.json["name"] as? String)
            #expect(name.hasPrefix("projects/herald-mock/messages/"))
        }
        let accepted = fixture.server.acceptedMessages()
        #expect(accepted.count == 2)
        #expect(accepted.map(\.transport) == ["h2", "http/1.1"])
        #expect(accepted.allSatisfy { $0.message == message && $0.token == FCMFixture.token && $0.project == "herald-mock" })
        let stats = fixture.server.stats()
        #expect(stats.http2Connections >= 1 && stats.http1Connections >= 2)
        #expect(stats.accepted == 2)
    }

    @Test func validateOnlyIsADryRunWithFCMsFakeName() throws {
        let fixture = try FCMFixture()
        defer { fixture.stop() }
        let answer = try fixture.send(#"{"validate_only":true,"message":{"topic":"news","notification":{"title":"t"}}}"#, bearer: try fixture.accessToken())
        #expect(answer.status == 200)
        #expect(answer.json["name"] as? String == "projects/herald-mock/messages/fake_message_id")
        #expect(fixture.server.acceptedMessages().first?.validateOnly == true)
        #expect(fixture.server.acceptedMessages().first?.topic == "news")
    }

    @Test func deviceFatesAnswerFCMsStatusesAndErrorCodes() throws {
        let faults = MockFCMFaultScript(rules: [
            MockFCMRule(fate: .unregistered, tokenPrefix: "dead"),
            MockFCMRule(fate: .invalidToken, tokenPrefix: "bad"),
            MockFCMRule(fate: .senderIdMismatch, tokenPrefix: "other"),
            MockFCMRule(fate: .thirdPartyAuth, tokenPrefix: "ios"),
            MockFCMRule(fate: .quotaExceeded, tokenPrefix: "busy", retryAfterSeconds: 17),
            MockFCMRule(fate: .error, tokenPrefix: "oops", status: 500),
            MockFCMRule(fate: .error, tokenPrefix: "down", status: 503),
        ])
        let fixture = try FCMFixture(faults: faults)
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        let expected: [(String, Int, String, String)] = [
            ("dead-1", 404, "NOT_FOUND", "UNREGISTERED"),
            ("bad-1", 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
            ("other-1", 403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH"),
            ("ios-1", 401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR"),
            ("busy-1", 429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"),
            ("oops-1", 500, "INTERNAL", "INTERNAL"),
            ("down-1", 503, "UNAVAILABLE", "UNAVAILABLE"),
        ]
        for (token, status, rpc, code) in expected {
            let answer = try fixture.send(FCMFixture.message(token: token), bearer: bearer)
            #expect(answer.status == status, "\(token)")
            #expect(answer.errorCode == status, "\(token)")
            #expect(answer.errorStatus == rpc, "\(token)")
            #expect(answer.fcmErrorCode == code, "\(token)")
        }
        let busy = try fixture.send(FCMFixture.message(token: "busy-2"), bearer: bearer)
        #expect(busy.headers["retry-after"] == "17")
        let invalid = try fixture.send(FCMFixture.message(token: "bad-2"), bearer: bearer)
        #expect(invalid.errorMessage == "The registration token is not a valid FCM registration token")
        #expect(invalid.fieldViolations == ["message.token"])
        #expect(try fixture.send(FCMFixture.message(token: "fine-1"), bearer: bearer).status == 200)
        #expect(fixture.server.stats().byErrorCode["UNREGISTERED"] == 1)
    }

    @Test func messagesAreValidatedAsFCMDoes() throws {
        let fixture = try FCMFixture()
        defer { fixture.stop() }
        let bearer = try fixture.accessToken()
        let token = FCMFixture.token
        let bigValue = String(repeating: "x", count: 4100)
        let cases: [(String, String)] = [
            (#"{"message":{"token":"\#(token)","data":{"count":3}}}"#, "message.data[count].value"),
            (#"{"message":{"token":"\#(token)","topic":"news"}}"#, "message"),
            (#"{"message":{"data":{"k":"v"}}}"#, "message"),
            (#"{"message":{"token":"\#(token)","data":{"from":"x"}}}"#, "message.data"),
            (#"{"message":{"token":"\#(token)","data":{"google.x":"x"}}}"#, "message.data"),
            (#"{"message":{"token":"\#(token)","data":{"k":"\#(bigValue)"}}}"#, "message"),
            (#"{"message":{"token":"\#(token)","colour":"red"}}"#, "message"),
            (#"{"message":{"token":"\#(token)","android":{"priority":"high"}}}"#, "message.android.priority"),
            (#"{"message":{"token":"\#(token)","android":{"ttl":"one hour"}}}"#, "message.android.ttl"),
            (#"{"message":{"token":"\#(token)","android":{"restricted_satellite_ok":"yes"}}}"#, "message.android.restricted_satellite_ok"),
            (#"{"message":{"token":"\#(token)","android_v2":{"priority":"HIGH"}}}"#, "message.android_v2"),
            (#"{"message":{"token":"\#(token)","apns":{"headers":{"apns-priority":10}}}}"#, "message.apns.headers[apns-priority].value"),
            (#"{"message":{"topic":"bad topic!"}}"#, "message.topic"),
            (#"{"message":{"token":"has space"}}"#, "message.token"),
            (#"{"message":"#, ""),
        ]
        for (body, field) in cases {
            let answer = try fixture.send(body, bearer: bearer)
            #expect(answer.status == 400, "\(body.prefix(80))")
            #expect(answer.errorStatus == "INVALID_ARGUMENT", "\(body.prefix(80))")
            #expect(answer.fieldViolations == [field], "\(body.prefix(80)): \(answer.body)")
        }
        // FCM's newer members are accepted as FCM accepts them (issue 54).
        for accepted in [#""android":{"bandwidth_constrained_ok":true,"restricted_satellite_ok":false}"#,
                         #""androidV2":{"remote_notification":{"title":"t"},"bandwidthConstrainedOk":true,"ttl":"60s"}"#,
                         #""android_v2":{"background_sync":{},"restricted_satellite_ok":true}"#] {
            #expect(try fixture.send(#"{"message":{"token":"\#(token)",\#(accepted)}}"#, bearer: bearer).status == 200, "\(accepted)")
        }
        // A topic message has half the room: 2,100 bytes pass to a token but not to a topic.
        let medium = String(repeating: "y", count: 2100)
        #expect(try fixture.send(#"{"message":{"token":"\#(token)","data":{"k":"\#(medium)"}}}"#, bearer: bearer).status == 200)
        #expect(try fixture.send(#"{"message":{"topic":"news","data":{"k":"\#(medium)"}}}"#, bearer: bearer).status == 400)
        #expect(fixture.server.stats().accepted == 4)
    }

    @Test func aTokenOfAnotherProjectOrWithoutTheScopeIsRefusedWith403() throws {
        let other = try MockServiceAccount.generate(projectID: "second")
        let fixture = try FCMFixture { $0.serviceAccounts = [try! MockServiceAccount.generate(projectID: "first"), other] }
        defer { fixture.stop() }
        #expect(fixture.server.serviceAccountFiles.count == 2)
        let secondToken = try fixture.accessToken(account: other)
        #expect(try fixture.send(FCMFixture.message(), bearer: secondToken, project: "second").status == 200)
        let crossed = try fixture.send(FCMFixture.message(), bearer: secondToken, project: "first")
        #expect(crossed.status == 403)
        #expect(crossed.errorStatus == "PERMISSION_DENIED")
        #expect(crossed.fcmErrorCode == nil)
        let unscoped = try fixture.accessToken(scope: "https://www.googleapis.com/auth/userinfo.email")
        #expect(try fixture.send(FCMFixture.message(), bearer: unscoped, project: "first").status == 403)
        let broad = try fixture.accessToken(scope: "\(MockFCMScopes.cloudPlatform) https://www.googleapis.com/auth/userinfo.email")
        #expect(try fixture.send(FCMFixture.message(), bearer: broad, project: "first").status == 200)
    }

    @Test func anExpiredAccessTokenIsRefusedWith401AndAFreshOneWorks() throws {
        let fixture = try FCMFixture { $0.accessTokenLifetimeSeconds = 1 }
        defer { fixture.stop() }
        let answer = try fixture.tokenRequest(assertion: try fixture.server.serviceAccount.makeAssertion(audience: fixture.server.tokenURI))
        #expect(answer.json["expires_in"] as? Int == 1)
        let bearer = try #require(answer.json["access_token"] as? String)
        usleep(2_100_000)
        let expired = try fixture.send(FCMFixture.message(), bearer: bearer)
        #expect(expired.status == 401)
        #expect(expired.errorStatus == "UNAUTHENTICATED")
        #expect(expired.body.contains("ACCESS_TOKEN_EXPIRED"))
        #expect(expired.fcmErrorCode == nil)
        // The fresh token lives 1 s too: on a loaded machine it may expire before its send, so a few fresh tries.
        var fresh = 0
        for _ in 0..<5 {
            fresh = try fixture.send(FCMFixture.message(), bearer: try fixture.accessToken()).status
            if fresh == 200 { break }
        }
        #expect(fresh == 200)
    }

    @Test func tokenFailuresRevocationAndTheUnauthenticatedFateLetAClientProveItsRefresh() throws {
        let fixture = try FCMFixture(faults: MockFCMFaultScript(tokenFailFirst: 2, rules: [MockFCMRule(fate: .unauthenticated, tokenPrefix: "revoked")]))
        defer { fixture.stop() }
        let assertion = try fixture.server.serviceAccount.makeAssertion(audience: fixture.server.tokenURI)
        for _ in 0..<2 {
            let failed = try fixture.tokenRequest(assertion: assertion)
            #expect(failed.status == 503)
            #expect(failed.json["error"] as? String == "internal_failure")
        }
        let bearer = try fixture.accessToken()
        #expect(try fixture.send(FCMFixture.message(), bearer: bearer).status == 200)
        let refused = try fixture.send(FCMFixture.message(token: "revoked-1"), bearer: bearer)
        #expect(refused.status == 401)
        #expect(refused.errorStatus == "UNAUTHENTICATED")
        #expect(refused.fcmErrorCode == nil)

        fixture.server.revokeAccessTokens()
        #expect(try fixture.send(FCMFixture.message(), bearer: bearer).status == 401)
        #expect(try fixture.send(FCMFixture.message(), bearer: try fixture.accessToken()).status == 200)
        let stats = fixture.server.stats()
        #expect(stats.tokensIssued == 2)
        #expect(stats.tokenErrors["internal_failure"] == 2)
    }
}

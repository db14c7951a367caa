import Foundation
import Harmony
import HeraldTestSupport
import Testing

/// Herald's JWT and the simulator checked by code nobody here wrote: PyJWT (with cryptography) verifies the JWT
/// Herald signs from a key file; a JWT PyJWT signs from the same file is accepted by the simulator and a tampered
/// one refused; curl sends Huawei's documented notification example over HTTP/2 and HTTP/1.1.
@Suite(.serialized) struct HarmonyPeerTests {
    static let audience = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"

    static let verify = """
        import sys, json, jwt
        from cryptography.hazmat.primitives import serialization
        info = json.load(open(sys.argv[1]))
        key = serialization.load_pem_private_key(info["private_key"].encode(), None).public_key()
        claims = jwt.decode(sys.argv[2], key, algorithms=["PS256"], audience=sys.argv[3], issuer=info["sub_account"])
        print(json.dumps({"claims": claims, "header": jwt.get_unverified_header(sys.argv[2])}))
        """

    static let sign = """
        import sys, json, time, jwt
        from cryptography.hazmat.primitives import serialization
        info = json.load(open(sys.argv[1]))
        key = serialization.load_pem_private_key(info["private_key"].encode(), None)
        now = int(time.time())
        print(jwt.encode({"iss": info["sub_account"], "aud": sys.argv[2], "iat": now, "exp": now + 3600}, key,
                         algorithm="PS256", headers={"kid": info["key_id"]}))
        """

    /// Huawei's notification example ("Pushing Scenario-Specific Messages"), as documented.
    static let documentedExample = #"{"payload":{"notification":{"category":"MARKETING","title":"普通通知标题","body":"普通通知内容","clickAction":{"actionType":0},"notifyId":12345}},"target":{"token":["IQAAAA**********4Tw"]},"pushOptions":{"testMessage":true}}"#

    @Test func pyJWTVerifiesTheJWTHeraldSigns() throws {
        let fixture = try HarmonyFixture()
        let account = try HarmonyAuth(serviceAccountFile: fixture.keyFile).load()
        let jwt = try HarmonyJWT.sign(account, issuedAt: Int64(Date().timeIntervalSince1970), lifetimeSeconds: 3600)
        let out = try PyJWT.run(Self.verify, [fixture.keyFile, jwt, Self.audience])
        let object = try #require(JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any])
        let header = try #require(object["header"] as? [String: Any]), claims = try #require(object["claims"] as? [String: Any])
        #expect(header["alg"] as? String == "PS256" && header["kid"] as? String == account.keyID && header["typ"] as? String == "JWT")
        #expect(claims["iss"] as? String == account.subAccount)
        // A JWT of another key does not verify under this one.
        let other = try HarmonyJWT.sign(try HarmonyTestAccount.make(), issuedAt: Int64(Date().timeIntervalSince1970), lifetimeSeconds: 3600)
        #expect(throws: HarmonyPeerFailure.self) { _ = try PyJWT.run(Self.verify, [fixture.keyFile, other, Self.audience]) }
    }

    @Test func theSimulatorAcceptsPyJWTsJWTAndRefusesATamperedOne() throws {
        let fixture = try HarmonyFixture()
        let jwt = try PyJWT.run(Self.sign, [fixture.keyFile, Self.audience])
        let accepted = try fixture.curl(bearer: jwt, body: Self.documentedExample)
        #expect(accepted.status == 200 && accepted.body["code"] as? String == "80000000", "\(accepted)")
        // One signature character changed (in the middle: every bit of it counts).
        var parts = jwt.split(separator: ".").map(String.init)
        var signature = Array(parts[2])
        let middle = signature.count / 2
        signature[middle] = signature[middle] == "A" ? "B" : "A"
        parts[2] = String(signature)
        let tampered = try fixture.curl(bearer: parts.joined(separator: "."), body: Self.documentedExample)
        #expect(tampered.status == 401 && tampered.body["code"] as? String == "80200001", "\(tampered)")
        // A JWT for another audience, and none at all.
        let elsewhere = try PyJWT.run(Self.sign, [fixture.keyFile, "https://example.com/token"])
        #expect(try fixture.curl(bearer: elsewhere, body: Self.documentedExample).status == 401)
        #expect(try fixture.curl(bearer: nil, body: Self.documentedExample).status == 401)
    }

    @Test func curlSendsTheDocumentedExampleOverHTTP2AndHTTP11() throws {
        let fixture = try HarmonyFixture()
        let jwt = try PyJWT.run(Self.sign, [fixture.keyFile, Self.audience])
        for http1 in [false, true] {
            let answer = try fixture.curl(bearer: jwt, body: Self.documentedExample, http1: http1)
            #expect(answer.status == 200 && answer.body["code"] as? String == "80000000" && answer.body["requestId"] is String, "\(answer)")
        }
        let accepted = fixture.server.acceptedMessages()
        #expect(accepted.map(\.transport) == ["h2", "http/1.1"])
        #expect(accepted.first?.tokens == ["IQAAAA**********4Tw"] && accepted.first?.testMessage == true && accepted.first?.pushType == 0)
        // The request checks: a push-type Push Kit does not know, no payload, too many test tokens.
        #expect(try fixture.curl(bearer: jwt, pushType: "3", body: Self.documentedExample).body["code"] as? String == "80100001")
        #expect(try fixture.curl(bearer: jwt, body: #"{"target":{"token":["t"]}}"#).body["code"] as? String == "80100003")
        let eleven = (0..<11).map { "\"t\($0)\"" }.joined(separator: ",")
        #expect(try fixture.curl(bearer: jwt, body: #"{"payload":{},"target":{"token":[\#(eleven)]},"pushOptions":{"testMessage":true}}"#)
            .body["code"] as? String == "80300010")
    }
}

import Foundation
import Harmony
import PushCore
import Testing

/// A harmony job's members as the worker reads them (`HarmonyJob.read`) and Push Kit's rules on them
/// (`HarmonyRules`), refused with Push Kit's codes.
@Suite struct HarmonyJobTests {
    static let table = JobMemberTable([.harmony: HarmonyProvider.jobMembers])

    static func read(_ text: String) throws(JobError) -> HarmonyJob {
        let bytes = Array(text.utf8)
        let spec = try JobParser.parse(bytes, members: table)
        return try HarmonyProvider.readJob(bytes, spec: spec)
    }

    static func refusal(_ text: String) throws -> String? {
        guard case .failure(let refusal) = HarmonyRules.check(try read(text)) else { return nil }
        return refusal.code
    }

    @Test func oneTokenOrATargetListAndThePayloadAsWritten() throws {
        let one = try Self.read(#"{"platform":"harmony","token":"MAMz-1","payload":{"notification":{"title":"t"}},"push_type":"live_view"}"#)
        #expect(one.tokens == ["MAMz-1"] && one.pushType == .liveView && one.pushType.header == "7")
        #expect(String(decoding: one.payload, as: UTF8.self) == #"{"notification":{"title":"t"}}"#)
        let many = try Self.read(#"{"platform":"harmony","target":{"token":["a","b","a"]},"payload":{ "x" : 1 },"push_type":10,"pushOptions":{"ttl":60, "biTag":"b"}}"#)
        #expect(many.tokens == ["a", "b", "a"] && many.pushType == .call)
        #expect(String(decoding: many.payload, as: UTF8.self) == #"{ "x" : 1 }"#)
        #expect(String(decoding: many.pushOptions ?? [], as: UTF8.self) == #"{"ttl":60, "biTag":"b"}"#)
        // Each token once, in the producer's order.
        #expect(try HarmonyRules.check(many).get() == ["a", "b"])
        let body = HarmonySender.body(payload: many.payload, tokens: ["a", "b"], pushOptions: many.pushOptions)
        #expect(String(decoding: body, as: UTF8.self) == #"{"payload":{ "x" : 1 },"target":{"token":["a","b"]},"pushOptions":{"ttl":60, "biTag":"b"}}"#)
        #expect(try Self.read(#"{"platform":"harmony","token":"t","payload":{}}"#).pushType == .alert)
    }

    @Test func aJobOfTheWrongShapeIsUnreadable() {
        let unreadable = [
            (#"{"platform":"harmony","payload":{}}"#, "missing_token"),
            (#"{"platform":"harmony","token":"t","payload":"text"}"#, "payload_not_object"),
            (#"{"platform":"harmony","token":"t"}"#, "missing_payload"),
            (#"{"platform":"harmony","token":"t","payload":{},"push_type":"voice"}"#, "unknown_push_type"),
            (#"{"platform":"harmony","token":"t","payload":{},"push_type":3}"#, "unknown_push_type"),
            (#"{"platform":"harmony","token":"t","payload":{},"pushOptions":[1]}"#, "wrong_type"),
            (#"{"platform":"harmony","target":{"tokens":["t"]},"payload":{}}"#, "wrong_type"),
            (#"{"platform":"harmony","target":{"token":[1]},"payload":{}}"#, "wrong_type"),
            (#"{"platform":"harmony","token":"t","target":{"token":["u"]},"payload":{}}"#, "bad_tokens"),
            (#"{"platform":"harmony","tokens":["aa"],"payload":{}}"#, "bad_tokens"),
        ]
        for (job, code) in unreadable {
            #expect(throws: JobError.self, "\(job)") { try Self.read(job) }
            do { _ = try Self.read(job) } catch { #expect(error.code == code, "\(job): \(error)") }
        }
    }

    @Test func pushKitsRulesRefuseWithItsCodes() throws {
        let many = (0..<1001).map { "\"t\($0)\"" }.joined(separator: ",")
        let eleven = (0..<11).map { "\"t\($0)\"" }.joined(separator: ",")
        let big = String(repeating: "x", count: 4100)
        let cases: [(String, String?)] = [
            (#"{"platform":"harmony","token":"t","payload":{"n":1}}"#, nil),
            (#"{"platform":"harmony","target":{"token":[]},"payload":{}}"#, "80300010"),
            (#"{"platform":"harmony","target":{"token":[\#(many)]},"payload":{}}"#, "80300010"),
            (#"{"platform":"harmony","target":{"token":[\#(eleven)]},"payload":{},"pushOptions":{"testMessage":true}}"#, "80300010"),
            (#"{"platform":"harmony","target":{"token":[\#(eleven)]},"payload":{},"pushOptions":{"testMessage":false}}"#, nil),
            (#"{"platform":"harmony","token":"","payload":{}}"#, "80100001"),
            (#"{"platform":"harmony","token":"t","payload":{},"pushOptions":{"testMessage":"yes"}}"#, "80100001"),
            (#"{"platform":"harmony","token":"t","payload":{},"pushOptions":{"ttl":1296001}}"#, "80100001"),
            (#"{"platform":"harmony","token":"t","payload":{},"pushOptions":{"ttl":1.5}}"#, "80100001"),
            (#"{"platform":"harmony","token":"t","payload":{},"pushOptions":{"ttl":1296000,"receiptId":"r1","collapseKey":3}}"#, nil),
            (#"{"platform":"harmony","token":"t","payload":{},"pushOptions":{"biTag":"\#(String(repeating: "b", count: 65))"}}"#, "80100001"),
            (#"{"platform":"harmony","token":"t","payload":{},"pushOptions":{"receiptId":7}}"#, "80100001"),
            (#"{"platform":"harmony","token":"t","payload":{"body":"\#(big)"}}"#, "80300008"),
        ]
        for (job, code) in cases { #expect(try Self.refusal(job) == code, "\(job.prefix(120))") }
    }

    /// The JWT's parts as Huawei's guide lists them; its signature is checked by PyJWT (`HarmonyPeerTests`).
    @Test func theJWTHasHuaweisHeaderAndClaims() throws {
        let account = try HarmonyTestAccount.make()
        let jwt = try HarmonyJWT.sign(account, issuedAt: 1_800_000_000, lifetimeSeconds: 3600)
        let parts = jwt.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        let header = try #require(JSONSerialization.jsonObject(with: Data(base64URLDecoded(parts[0]) ?? [])) as? [String: Any])
        let claims = try #require(JSONSerialization.jsonObject(with: Data(base64URLDecoded(parts[1]) ?? [])) as? [String: Any])
        #expect(header["alg"] as? String == "PS256" && header["typ"] as? String == "JWT" && header["kid"] as? String == account.keyID)
        #expect(claims["iss"] as? String == account.subAccount && claims["aud"] as? String == "https://oauth-login.cloud.huawei.com/oauth2/v3/token")
        #expect(claims["iat"] as? Int == 1_800_000_000 && claims["exp"] as? Int == 1_800_003_600)
        // 2048-bit RSA: a 256-byte signature; PSS is randomized, so two signatures differ.
        #expect(base64URLDecoded(parts[2])?.count == 256)
        #expect(try HarmonyJWT.sign(account, issuedAt: 1_800_000_000, lifetimeSeconds: 3600) != jwt)
        #expect(!"\(account)".contains("PRIVATE"))
    }

    @Test func aBrokenKeyFileFailsAtLoad() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("harmony-key-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cases = ["not json", #"{"project_id":"1","key_id":"k","sub_account":"s"}"#,
                     #"{"project_id":"1","key_id":"k","sub_account":"s","private_key":"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}"#,
                     #"{"project_id":"1/x","key_id":"k","sub_account":"s","private_key":"x"}"#]
        for (index, text) in cases.enumerated() {
            let path = directory + "/key\(index).json"
            FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
            #expect(throws: CredentialError.self, "\(text.prefix(40))") { _ = try HarmonyAuth(serviceAccountFile: path).load() }
        }
        #expect(throws: CredentialError.self) { _ = try HarmonyAuth(serviceAccountFile: directory + "/none.json").load() }
    }
}

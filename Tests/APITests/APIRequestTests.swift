import Testing
@testable import API

@Suite struct JobSubmissionTests {
    @Test func splitsABatchIntoEachJobsBytesAsSentAndLeavesAnythingElseOneJob() {
        #expect(JobSubmission.split(Array(#"{"jobs": [ {"a":1} , 5,{"b":[2]} ]}"#.utf8), maxJobs: 3)
            == .batch([Array(#"{"a":1}"#.utf8), Array("5".utf8), Array(#"{"b":[2]}"#.utf8)]))
        #expect(JobSubmission.split(Array(#"{"token":"ab"}"#.utf8), maxJobs: 3) == .single(Array(#"{"token":"ab"}"#.utf8)))
        #expect(JobSubmission.split(Array("not json".utf8), maxJobs: 3) == .single(Array("not json".utf8)))
        #expect(JobSubmission.split(Array(#"{"jobs":[1,2,3,4]}"#.utf8), maxJobs: 3) == .unusable(status: 413, reason: "more than 3 jobs in one request (api.max_jobs_per_request)"))
        #expect(JobSubmission.split(Array(#"{"jobs":{}}"#.utf8), maxJobs: 3) == .unusable(status: 400, reason: "\"jobs\" must be an array of job objects"))
    }

    @Test func putsTheIDFirstAndKnowsWhenAJobCannotNameOne() {
        #expect(JobSubmission.withID(Array(#" { "a":1}"#.utf8), id: "x\"y") == Array(#" {"id":"x\"y", "a":1}"#.utf8))
        #expect(JobSubmission.withID(Array("{ }".utf8), id: "x") == Array(#"{"id":"x" }"#.utf8))
        #expect(!JobSubmission.mayNameID(Array(#"{"token":"ab","payload":{"grid":1}}"#.utf8)))
        #expect(JobSubmission.mayNameID(Array(#"{"id":null}"#.utf8)))
        #expect(JobSubmission.mayNameID(Array(#"{"\u0069d":null}"#.utf8)))
        // `"id"` or a backslash at every place, up to the last byte; a job of a few bytes names none.
        for place in 0..<12 {
            let filler = Array(repeating: UInt8(ascii: "a"), count: place)
            #expect(JobSubmission.mayNameID(filler + Array(#""id""#.utf8)), "\(place)")
            #expect(JobSubmission.mayNameID(filler + [92]) == (place >= 3), "\(place)")
            #expect(!JobSubmission.mayNameID(filler + Array(#""id"#.utf8)), "\(place)")
        }
        #expect(!JobSubmission.mayNameID(Array(#""id"#.utf8)))
    }

    /// Issue 51: a keyed producer's own id is scoped in place, whether a string, a number or spelled with escapes;
    /// an `id` inside another member is not the job's.
    @Test func scopesTheJobsOwnIDInPlaceAndNothingElse() {
        #expect(JobSubmission.replacingID(Array(#"{"token":"ab", "id" : "o-1","x":{"id":"in"}}"#.utf8), with: "t/o-1")
            == Array(#"{"token":"ab", "id" : "t/o-1","x":{"id":"in"}}"#.utf8))
        #expect(JobSubmission.replacingID(Array(#"{"id":12}"#.utf8), with: "t/12") == Array(#"{"id":"t/12"}"#.utf8))
        #expect(JobSubmission.replacingID(Array(#"{"\u0069d":"a\"b"}"#.utf8), with: "t/a\"b") == Array(#"{"\u0069d":"t/a\"b"}"#.utf8))
        #expect(JobSubmission.replacingID(Array(#"{"x":{"id":"in"}}"#.utf8), with: "t/in") == nil)
        #expect(JobSubmission.replacingID(Array(#"{"id":null}"#.utf8), with: "t/x") == nil)
        #expect(JobSubmission.replacingID(Array("[1]".utf8), with: "t/x") == nil)
    }
}

/// Issue 51: what a tenant is known by, and the ids the API makes.
@Suite struct TenantIDTests {
    @Test func aTenantIDIsSixteenHexDigitsOfTheLabelledHashAndNotTheHashItself() {
        let hash = APIAccess.sha256Hex(Array("secret".utf8))
        let tenant = APIAccess.tenantID(sha256: hash)
        #expect(tenant == String(APIAccess.sha256Hex(Array(("herald api tenant\n" + hash).utf8)).prefix(16)))
        #expect(tenant.count == 16 && !hash.hasPrefix(tenant))
        #expect(APIAccess.tenantID(sha256: hash.uppercased()) == tenant)
        #expect(FrontDoor.tenantPrefix(tenant + "/order-1") == tenant)
        #expect(FrontDoor.tenantPrefix(tenant + "order-1") == nil)
        #expect(FrontDoor.tenantPrefix("order-1/" + tenant) == nil)
        #expect(FrontDoor.tenantPrefix("zzzzzzzzzzzzzzzz/x") == nil)
    }
}

/// The key of an `Authorization: Bearer` header, as every request reads it.
@Suite struct BearerCredentialTests {
    @Test func theSchemeInAnyCaseAndTheKeyTrimmed() {
        #expect(APIAccess.bearerCredential("Bearer k1") == "k1")
        #expect(APIAccess.bearerCredential("bEaReR  \tk2 \t") == "k2")
        #expect(APIAccess.bearerCredential("BEARER a b") == "a b")
        for other in ["Basic a2V5", "Bearerx k", "Bearer", "Bearer ", "Bearer   ", "Bearer\tk", "Béarer k", "Bearer\u{0} k"] {
            #expect(APIAccess.bearerCredential(other) == nil, "\(other.debugDescription)")
        }
    }
}

@Suite struct APIKeyMemoTests {
    private func request(_ fields: [(name: String, value: String)]) -> HTTP1Parser.Request {
        HTTP1Parser.Request(method: "POST", path: "/v1/jobs", query: "", minorVersion: 1, headers: fields, body: [])
    }

    /// The second request with a key is answered from the memo, and a key of the same length that differs in one
    /// byte (or a prefix of it) is still refused, before and after.
    @Test func aKeySeenBeforeIsKnownAndOneDifferingInAnyByteIsNot() {
        let secret = "s3cret-key-0123456789"
        let access = APIAccess(keys: [.init(name: "ops", sha256: APIAccess.sha256Hex(Array(secret.utf8)))])
        var near = Array(secret.utf8)
        near[near.count - 1] ^= 1
        let nearKey = String(decoding: near, as: UTF8.self)
        for round in 0..<2 {
            guard case .key(let key) = access.authenticate(request([("authorization", "Bearer \(secret)")])) else { Issue.record("round \(round): refused"); continue }
            #expect(key.name == "ops")
            guard case .key = access.authenticate(request([("x-api-key", secret)])) else { Issue.record("round \(round): X-API-Key refused"); continue }
            for wrong in [nearKey, String(secret.dropLast()), secret + "x"] {
                guard case .refused(let code, _) = access.authenticate(request([("authorization", "Bearer \(wrong)")])) else {
                    Issue.record("round \(round): \(wrong) accepted"); continue
                }
                #expect(code == "unauthenticated")
            }
        }
        // Another scheme falls back to X-API-Key; none at all is refused.
        guard case .key = access.authenticate(request([("authorization", "Basic a2V5"), ("x-api-key", secret)])) else { Issue.record("fallback refused"); return }
        guard case .refused = access.authenticate(request([("authorization", "Basic a2V5")])) else { Issue.record("no key accepted"); return }
    }
}

import APNs
import PushCore
import Testing

@Suite struct APNsReasonTests {
    @Test func everyKnownReasonRoundTrips() {
        for (raw, reason, status) in APNsReason.allKnown {
            let parsed = APNsReason(raw)
            #expect(parsed == reason)
            #expect(parsed.rawValue == raw)
            #expect(parsed.description == raw)
            #expect(parsed.documentedStatus == status)
            if case .unknown = parsed { Issue.record("\(raw) decoded as unknown") }
        }
    }

    @Test func bothSpellingsAreOneCaseButKeepTheirText() {
        let a = APNsReason("BadEnvironmentKeyIdInToken")
        let b = APNsReason("BadEnvironmentKeyInToken")
        #expect(a == b)
        #expect(Set([a, b]).count == 1)
        #expect(a.rawValue == "BadEnvironmentKeyIdInToken")
        #expect(b.rawValue == "BadEnvironmentKeyInToken")
        #expect(a != .badTopic)
    }

    @Test func unknownReasonsAreKeptVerbatim() {
        let r = APNsReason("SomethingNew \u{1F600}")
        #expect(r == .unknown("SomethingNew \u{1F600}"))
        #expect(r.rawValue == "SomethingNew \u{1F600}")
        #expect(r.documentedStatus == nil)
        #expect(APNsReason("badtopic") == .unknown("badtopic"))
        #expect(APNsReason("") == .unknown(""))
    }

    @Test func referenceTableIsComplete() {
        let names = Set(APNsReason.allKnown.map(\.raw))
        for name in [
            "BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic",
            "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken",
            "MissingTopic", "PayloadEmpty", "TopicDisallowed", "BadRequestParams", "BadRequestPayload",
            "MissingPushType", "BadCertificate", "BadCertificateEnvironment", "ExpiredProviderToken", "Forbidden",
            "InvalidProviderToken", "MissingProviderToken", "UnrelatedKeyIdInToken", "BadEnvironmentKeyIdInToken",
            "BadEnvironmentKeyInToken", "TopicMismatch", "BadPath", "MethodNotAllowed", "ExpiredToken",
            "Unregistered", "PayloadTooLarge", "TooManyProviderTokenUpdates", "TooManyRequests",
            "InternalServerError", "ServiceUnavailable", "Shutdown",
        ] {
            #expect(names.contains(name), "\(name)")
        }
    }
}

@Suite struct APNsResponseTests {
    @Test func success() {
        let r = APNsResponse.decode(status: 200, apnsID: "id", apnsUniqueID: "u", body: [])
        #expect(r == APNsResponse(status: 200, apnsID: "id", apnsUniqueID: "u"))
        #expect(r.isSuccess)
    }

    @Test func errorBodyWithTimestamp() {
        let body = Array(#"{"reason":"Unregistered","timestamp":1700000000123}"#.utf8)
        let r = APNsResponse.decode(status: 410, apnsID: "x", apnsUniqueID: nil, body: body)
        #expect(r.reason == .unregistered)
        #expect(r.timestamp == 1_700_000_000_123)
        #expect(r.apnsID == "x")
    }

    @Test func extraMembersAndEscapesAreFine() {
        let body = Array(#" { "x": [1, {"y": null}], "reason" : "Bad\u0054opic" } "#.utf8)
        #expect(APNsResponse.decode(status: 400, apnsID: nil, apnsUniqueID: nil, body: body).reason == .badTopic)
    }

    @Test(arguments: ["", "not json", "{", "[\"reason\"]", "{\"reason\":5}", "\u{0}\u{1}", "{\"reason\":\"Shutdown\"} trailing", "{\"reason\":\"\\ud800\"}"])
    func garbageBodiesGiveNoReason(_ text: String) {
        let r = APNsResponse.decode(status: 500, apnsID: nil, apnsUniqueID: nil, body: Array(text.utf8))
        #expect(r.status == 500)
        #expect(r.reason == nil)
        #expect(r.timestamp == nil)
    }

    @Test func invalidUTF8BodyGivesNoReason() {
        let r = APNsResponse.decode(status: 400, apnsID: nil, apnsUniqueID: nil, body: [0x7B, 0xFF, 0x7D])
        #expect(r.reason == nil)
    }

    @Test func unknownReasonKept() {
        let r = APNsResponse.decode(status: 400, apnsID: nil, apnsUniqueID: nil, body: Array(#"{"reason":"NewThing"}"#.utf8))
        #expect(r.reason == .unknown("NewThing"))
    }

    @Test func aMegabyteUnknownReasonIsNotKeptWhole() {
        let body = Array(#"{"reason":""#.utf8) + Array(repeating: UInt8(ascii: "Z"), count: 1_048_576) + Array(#""}"#.utf8)
        let r = APNsResponse.decode(status: 400, apnsID: nil, apnsUniqueID: nil, body: body)
        guard case .unknown(let text) = r.reason else { Issue.record("reason \(String(describing: r.reason))"); return }
        #expect(text.utf8.count <= APNsResponse.maxReasonBytes)
        #expect(text.hasPrefix("ZZZZ") && text.hasSuffix("…(truncated, 1048576 bytes)"))
    }

    @Test func goawayDebugDataUsesTheSameShape() {
        let decoded = APNsResponse.decodeBody(Array(#"{"reason":"Shutdown"}"#.utf8))
        #expect(decoded?.reason == .shutdown)
        #expect(decoded?.timestamp == nil)
    }
}

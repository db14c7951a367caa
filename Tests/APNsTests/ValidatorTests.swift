import APNs
import ProviderKit
import PushCore
import Testing

private let token = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
private let payload = Array(#"{"aps":{"alert":"hi"}}"#.utf8)

private func note(
    token: String = token, topic: String = "com.example.app", type: PushType = .alert, priority: Int? = nil,
    expiration: Int64? = nil, collapse: String? = nil, apnsID: String? = nil, payload: [UInt8] = payload
) -> PushNotification {
    PushNotification.apns(
        deviceToken: token, topic: topic, environment: .sandbox, pushType: type, priority: priority,
        expiration: expiration, collapseID: collapse, apnsID: apnsID, payload: payload)
}

@Suite struct PushTypeTests {
    static let suffixes: [(PushType, String?)] = [
        (.alert, ""), (.background, ""), (.location, ".location-query"), (.voip, ".voip"),
        (.complication, ".complication"), (.fileprovider, ".pushkit.fileprovider"), (.mdm, nil),
        (.liveactivity, ".push-type.liveactivity"), (.pushtotalk, ".voip-ptt"),
        (.widgets, ".push-type.widgets"), (.controls, ".push-type.controls"),
    ]

    @Test func everyPushTypeHasTheReferenceSuffixAndLimit() {
        #expect(Self.suffixes.count == PushType.allCases.count)
        for (type, suffix) in Self.suffixes {
            #expect(type.topicSuffix == suffix, "\(type)")
            #expect(type.maxPayloadBytes == (type == .voip ? 5120 : 4096))
        }
    }

    @Test(arguments: PushType.allCases) func topicRuleWithBundleID(type: PushType) {
        let bundle = "com.example.app"
        let priority = type == .background ? 5 : 10
        if let suffix = type.topicSuffix {
            #expect(NotificationValidator.validate(note(topic: bundle + suffix, type: type, priority: priority), bundleID: bundle) == nil)
            // the bare bundle for suffixed types, a suffix for bare types: both refused
            let wrong = suffix.isEmpty ? bundle + ".voip" : bundle
            #expect(NotificationValidator.validate(note(topic: wrong, type: type, priority: priority), bundleID: bundle)?.reason == .badTopic)
            #expect(NotificationValidator.validate(note(topic: "org.other" + suffix, type: type, priority: priority), bundleID: bundle)?.reason == .badTopic)
        } else {
            #expect(NotificationValidator.validate(note(topic: "com.apple.mgmt.External.abc", type: type), bundleID: bundle) == nil)
        }
    }

    @Test(arguments: PushType.allCases) func topicRuleWithoutBundleID(type: PushType) {
        let priority = type == .background ? 5 : 10
        let suffix = type.topicSuffix ?? ""
        #expect(NotificationValidator.validate(note(topic: "com.example.app" + suffix, type: type, priority: priority)) == nil)
        if !suffix.isEmpty {
            #expect(NotificationValidator.validate(note(topic: "com.example.app", type: type, priority: priority))?.reason == .badTopic)
            #expect(NotificationValidator.validate(note(topic: suffix, type: type, priority: priority))?.reason == .badTopic)
        }
        #expect(NotificationValidator.validate(note(topic: "", type: type, priority: priority))?.reason == .missingTopic)
    }
}

@Suite struct ValidatorTests {
    @Test func aGoodNotificationPasses() {
        #expect(NotificationValidator.validate(note()) == nil)
    }

    @Test(arguments: ["", "abc", "zz", "a1b2 c3d4", "<a1b2c3d4>", "a1b2c3d4\n"])
    func badTokens(_ t: String) {
        #expect(NotificationValidator.validate(note(token: t))?.reason == .badDeviceToken)
    }

    @Test func tokenLengthIsNotAssumed() {
        #expect(NotificationValidator.validate(note(token: "ab")) == nil)
        #expect(NotificationValidator.validate(note(token: String(repeating: "AB", count: 100))) == nil)
    }

    @Test func priorities() {
        for p in [1, 5, 10] { #expect(NotificationValidator.validate(note(priority: p)) == nil) }
        for p in [0, 2, 9, 11, -1] { #expect(NotificationValidator.validate(note(priority: p))?.reason == .badPriority) }
        #expect(NotificationValidator.validate(note(type: .background, priority: 10))?.reason == .badPriority)
        #expect(NotificationValidator.validate(note(type: .background, priority: 5)) == nil)
        // no priority: background defaults to 5, which APNs accepts
        #expect(NotificationValidator.validate(note(type: .background)) == nil)
        #expect(note(type: .background).effectivePriority == 5)
        #expect(note().effectivePriority == 10)
    }

    @Test func collapseIDLimitIsInBytes() {
        #expect(NotificationValidator.validate(note(collapse: String(repeating: "x", count: 64))) == nil)
        #expect(NotificationValidator.validate(note(collapse: String(repeating: "x", count: 65)))?.reason == .badCollapseId)
        // 22 three-byte characters = 66 bytes
        #expect(NotificationValidator.validate(note(collapse: String(repeating: "€", count: 22)))?.reason == .badCollapseId)
    }

    @Test func apnsIDMustBeAUUID() {
        #expect(NotificationValidator.validate(note(apnsID: "123e4567-e89b-12d3-a456-4266554400a0")) == nil)
        let upper = note(apnsID: "123E4567-E89B-12D3-A456-4266554400A0")
        #expect(NotificationValidator.validate(upper) == nil)
        #expect(upper.headerAPNsID == "123e4567-e89b-12d3-a456-4266554400a0")
        for bad in ["", "123e4567e89b12d3a4564266554400a0", "123e4567-e89b-12d3-a456-4266554400a", "123e4567-e89b-12d3-a456-4266554400a0x", "g23e4567-e89b-12d3-a456-4266554400a0", "{123e4567-e89b-12d3-a456-4266554400a0}"] {
            #expect(NotificationValidator.validate(note(apnsID: bad))?.reason == .badMessageId, "\(bad)")
        }
    }

    @Test func expiration() {
        #expect(NotificationValidator.validate(note(expiration: 0)) == nil)
        #expect(NotificationValidator.validate(note(expiration: 1_900_000_000)) == nil)
        #expect(NotificationValidator.validate(note(expiration: -1))?.reason == .badExpirationDate)
    }

    @Test func payloads() {
        #expect(NotificationValidator.validate(note(payload: []))?.reason == .payloadEmpty)
        #expect(NotificationValidator.validate(note(payload: Array("[1]".utf8)))?.reason == .badRequestPayload)
        #expect(NotificationValidator.validate(note(payload: Array("{\"a\":".utf8)))?.reason == .badRequestPayload)
        #expect(NotificationValidator.validate(note(payload: Array("  ".utf8)))?.reason == .badRequestPayload)
        #expect(NotificationValidator.validate(note(payload: Array(" {} ".utf8))) == nil)
    }

    @Test func payloadLimitPerType() {
        func sized(_ n: Int) -> [UInt8] {
            Array("{\"a\":\"".utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: n - 8) + Array("\"}".utf8)
        }
        #expect(sized(4096).count == 4096)
        #expect(NotificationValidator.validate(note(payload: sized(4096))) == nil)
        #expect(NotificationValidator.validate(note(payload: sized(4097)))?.reason == .payloadTooLarge)
        #expect(NotificationValidator.validate(note(topic: "com.example.app.voip", type: .voip, payload: sized(5120))) == nil)
        #expect(NotificationValidator.validate(note(topic: "com.example.app.voip", type: .voip, payload: sized(5121)))?.reason == .payloadTooLarge)
    }
}

/// The worker's check of a parsed job skips the token and payload scans the parser already made: on every job the
/// parser accepts it answers what the full check answers, and what the parser refuses never reaches it.
@Suite struct ParsedJobValidationTests {
    static let jobs: [String] = {
        let deep = String(repeating: "[", count: 126) + String(repeating: "]", count: 126)
        return [
            #"{"token":"\#(token)","payload":{"aps":{"alert":"hi"}}}"#,
            #"{"token":"\#(token)","payload":{"aps":{}},"priority":7}"#,
            #"{"token":"\#(token)","payload":{"aps":{"content-available":1}},"push_type":"background","priority":10}"#,
            #"{"token":"\#(token)","payload":{"a":\#(deep)}}"#,
            #"{"token":"\#(token)","payload":{"s":"é\u00e9\ud83d\ude00"},"collapse_id":"\#(String(repeating: "c", count: 65))"}"#,
            #"{"token":"\#(token)","payload":{},"apns_id":"not-a-uuid"}"#,
            #"{"token":"\#(token)","payload":{"pad":"\#(String(repeating: "x", count: 5000))"}}"#,
            #"{"tokens":["\#(token)","00ff"],"payload":{"aps":{}}}"#,
            #"{"token":"","payload":{}}"#, #"{"token":"abc","payload":{}}"#, #"{"token":"\#(token)","payload":[1]}"#,
            #"{"token":"\#(token)","payload":{"a":\#(deep)x}}"#, #"{"token":"\#(token)"}"#,
        ]
    }()

    @Test func onEveryJobTheParserAcceptsTheParsedCheckAnswersWhatTheFullCheckAnswers() throws {
        var accepted = 0
        for text in Self.jobs {
            guard let (spec, read) = try? APNsProvider.parse(Array(text.utf8)) else { continue }
            accepted += 1
            var n = read.notification(spec, topic: "com.example.app", environment: .sandbox)
            if let tokens = spec.uniqueTokens { n.deviceToken = tokens[0] }
            let full = NotificationValidator.validate(n, bundleID: "com.example.app")
            #expect(NotificationValidator.validate(n, bundleID: "com.example.app", fromParsedJob: true) == full, "\(text.prefix(80))")
        }
        #expect(accepted == 8)
        // Built by hand (not parsed), the same notification with an empty token is still refused.
        #expect(NotificationValidator.validate(note(token: ""), bundleID: nil, fromParsedJob: true)?.reason == .badDeviceToken)
    }
}

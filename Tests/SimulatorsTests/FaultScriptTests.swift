import Foundation
import Testing
@testable import Simulators

/// The one fault script every simulator reads (`FaultScript`): each simulator's keys, shared and its own, land
/// where they did, the connection faults are counted from them, and a bad script is refused with the words it was
/// before the four scripts were one.
@Suite struct FaultScriptTests {
    static func refusal(_ parse: () throws -> Void) -> String? {
        do {
            try parse()
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func eachSimulatorsKeysLandAndCountAsConnectionFaults() throws {
        let apns = try MockFaultScript.parse(Data(#"""
            {"seed":3,"latencyMs":[1,2],"goawayAfterRequests":4,"goawayReason":"Bye","dropAfterRequests":5,"silenceAfterRequests":6,
             "idleTimeoutSeconds":7.5,"dropStreamsAfterRejection":true,"recordOnReceipt":true,"rules":[{"fate":"drop"}]}
            """#.utf8))
        #expect(apns.seed == 3 && apns.goawayReason == "Bye" && apns.dropStreamsAfterRejection == true && apns.recordOnReceipt == true)
        #expect(apns.rules == [MockFaultRule(fate: .drop)])
        let connection = apns.connectionFaults
        #expect(connection.goawayAfterRequests == 4 && connection.dropAfterRequests == 5 && connection.silenceAfterRequests == 6)
        #expect(connection.idleTimeoutSeconds == 7.5)

        let fcm = try MockFCMFaultScript.parse(Data(#"{"tokenFailFirst":2,"deviceQuota":true,"quotaMinuteMs":10,"goawayAfterRequests":1}"#.utf8))
        #expect(fcm.tokenFailFirst == 2 && fcm.deviceQuota == true && fcm.quotaMinuteMs == 10 && fcm.rules.isEmpty)
        #expect(fcm.connectionFaults.goawayAfterRequests == 1 && fcm.connectionFaults.idleTimeoutSeconds == nil)

        let hms = try MockHMSFaultScript.parse(Data(#"{"invalidTokens":["a"],"appQuota":{"limit":2,"windowSeconds":1},"tokenFailFirst":1}"#.utf8))
        #expect(hms.invalidTokens == ["a"] && hms.appQuota == MockHMSQuota(limit: 2) && hms.tokenFailFirst == 1)

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-webpush-faults-\(getpid()).json").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try #"{"dropAfterRequests":2,"silenceAfterRequests":3,"rules":[{"subscriptionPrefix":"gone-","fate":"gone"}]}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let webPush = try MockWebPushFaultScript.load(file: file)
        #expect(webPush.rules == [MockWebPushRule(subscriptionPrefix: "gone-", fate: .gone)])
        #expect(webPush.connectionFaults.dropAfterRequests == 2 && webPush.connectionFaults.silenceAfterRequests == 3)
    }

    /// What a script encodes is what it decodes back to (`GET`/`POST /_mock/config` round trips).
    @Test func scriptsRoundTrip() throws {
        let apns = MockFaultScript(seed: 1, goawayReason: "X", idleTimeoutSeconds: 2, rules: [MockFaultRule(fate: .throttle, limit: 3)])
        #expect(try MockFaultScript.parse(JSONEncoder().encode(apns)) == apns)
        let fcm = MockFCMFaultScript(deviceQuota: true, tokenFailFirst: 4, rules: [MockFCMRule(fate: .goaway, project: "p")])
        #expect(try MockFCMFaultScript.parse(JSONEncoder().encode(fcm)) == fcm)
        let hms = MockHMSFaultScript(invalidTokenPrefixes: ["x"], appQuota: MockHMSQuota(limit: 1, perToken: true), rules: [MockHMSRule(fate: .silence)])
        #expect(try MockHMSFaultScript.parse(JSONEncoder().encode(hms)) == hms)
        let webPush = MockWebPushFaultScript(rules: [MockWebPushRule(fate: .badJwt, rate: 0.5)], seed: 9)
        #expect(try MockWebPushFaultScript.decode(JSONEncoder().encode(webPush)) == webPush)
    }

    @Test func badScriptsAreRefusedWithTheSameWords() {
        func apns(_ json: String) -> String? { Self.refusal { _ = try MockFaultScript.parse(Data(json.utf8)) } }
        #expect(apns(#"{"idleTimeoutSeconds":0}"#) == "configuration: idleTimeoutSeconds must be above 0")
        #expect(apns(#"{"rules":[{"fate":"throttle"}]}"#) == "configuration: rules[0]: fate throttle needs limit >= 0")
        #expect(apns(#"{"rules":[{"fate":"error","status":500}]}"#) == "configuration: rules[0]: fate error needs status (400-599) and reason")
        #expect(apns(#"{"rules":[{"fate":"delay","rate":2}]}"#) == "configuration: rules[0].rate must be within 0...1")
        #expect(apns(#"{"seed":"x"}"#) == "configuration: seed must be a whole number")
        #expect(apns(#"{"rules":[{"token":"a"}]}"#) == "configuration: rules[0].fate is required")

        func fcm(_ json: String) -> String? { Self.refusal { _ = try MockFCMFaultScript.parse(Data(json.utf8)) } }
        #expect(fcm(#"{"tokenFailFirst":-1}"#) == "configuration: tokenFailFirst must be 0 or more")
        #expect(fcm(#"{"quotaHourMs":0}"#) == "configuration: quotaHourMs must be 1 or more")
        #expect(fcm(#"{"rules":[{"fate":"error","status":600}]}"#) == "configuration: rules[0].status must be 400-599")
        #expect(fcm(#"{"rules":[{"fate":"failFirst"}]}"#) == "configuration: rules[0]: fate failFirst needs count >= 0")

        func hms(_ json: String) -> String? { Self.refusal { _ = try MockHMSFaultScript.parse(Data(json.utf8)) } }
        #expect(hms(#"{"rules":[{"fate":"error","code":"1"}]}"#) == "configuration: rules[0].code must be Huawei's eight digits (81000001)")
        #expect(hms(#"{"appQuota":{"limit":1,"windowSeconds":0}}"#) == "configuration: appQuota.windowSeconds must be above 0")

        func webPush(_ json: String) -> String? { Self.refusal { _ = try MockWebPushFaultScript.decode(Data(json.utf8)) } }
        #expect(webPush(#"{"rules":[{"fate":"gone","rate":2}]}"#) == "configuration: rules[0].rate must be 0...1")
        #expect(webPush(#"{"rules":[{"fate":"delay"}]}"#) == "configuration: rules[0]: delay needs latencyMs")
        #expect(webPush(#"{"rules":[{"fate":"throttle"}]}"#) == "configuration: rules[0]: throttle needs limit")
    }

    /// A fault file is read through its declarations (issue 46): a key none declares is refused, with the closest
    /// known one, where `Codable` ignored it (a misspelt selector made a rule match every request); `//` keys are
    /// comments.
    @Test func anUnknownKeyIsRefusedWithTheClosestKnownOne() {
        func apns(_ json: String) -> String? { Self.refusal { _ = try MockFaultScript.parse(Data(json.utf8)) } }
        #expect(apns(#"{"goawayReson":"Bye"}"#) == "configuration: unknown setting 'goawayReson'; did you mean 'goawayReason'?")
        #expect(apns(#"{"rules":[{"fate":"drop","tokenPrefx":"ab"}]}"#)
                == "configuration: unknown setting 'rules[0].tokenPrefx'; did you mean 'rules[0].tokenPrefix'?")
        #expect(apns(#"{"//":"a comment","rules":[{"fate":"drop","//why":"a comment too"}]}"#) == nil)

        func fcm(_ json: String) -> String? { Self.refusal { _ = try MockFCMFaultScript.parse(Data(json.utf8)) } }
        #expect(fcm(#"{"rules":[{"fate":"unregistered","projct":"p"}],"sed":1}"#)
                == "configuration: unknown setting 'rules[0].projct'; did you mean 'rules[0].project'?; unknown setting 'sed'; did you mean 'seed'?")
        #expect(fcm(#"{"zzz":1}"#) == "configuration: unknown setting 'zzz'")

        func hms(_ json: String) -> String? { Self.refusal { _ = try MockHMSFaultScript.parse(Data(json.utf8)) } }
        #expect(hms(#"{"appQuota":{"limit":1,"windowSeconds":1,"perTokens":true}}"#)
                == "configuration: unknown setting 'appQuota.perTokens'; did you mean 'appQuota.perToken'?")

        func webPush(_ json: String) -> String? { Self.refusal { _ = try MockWebPushFaultScript.decode(Data(json.utf8)) } }
        #expect(webPush(#"{"rules":[{"fate":"gone","subscriptionPrefx":"a-"}]}"#)
                == "configuration: unknown setting 'rules[0].subscriptionPrefx'; did you mean 'rules[0].subscriptionPrefix'?")
    }

    /// A value of the wrong type is named by its key, every problem of the file at once, after the file's name when
    /// it came from one.
    @Test func aWrongTypedValueIsNamedByItsKeyAndItsFile() throws {
        func fcm(_ json: String) -> String? { Self.refusal { _ = try MockFCMFaultScript.parse(Data(json.utf8)) } }
        #expect(fcm(#"{"deviceQuota":"yes"}"#) == "configuration: deviceQuota must be true or false")
        #expect(fcm(#"{"rules":[{"fate":"failFirst","count":1.5}]}"#) == "configuration: rules[0].count must be a whole number")
        #expect(fcm(#"{"rules":[{"fate":"drop","rate":"half"}]}"#) == "configuration: rules[0].rate must be a number")
        #expect(fcm(#"{"rules":[{"fate":"gone"}]}"#)?.hasPrefix(#"configuration: rules[0].fate must be "accept", "error", "failFirst""#) == true)
        #expect(fcm(#"{"rules":{"fate":"drop"}}"#) == "configuration: rules must be a list of objects")
        #expect(fcm(#"{"latencyMs":[1,2,3],"rules":[{"fate":"delay","latencyMs":"5"}]}"#)
                == "configuration: latencyMs must be a whole number of milliseconds or [min, max]; rules[0].latencyMs must be a whole number of milliseconds or [min, max]")

        func hms(_ json: String) -> String? { Self.refusal { _ = try MockHMSFaultScript.parse(Data(json.utf8)) } }
        #expect(hms(#"{"invalidTokens":"a"}"#) == "configuration: invalidTokens must be a list of strings")
        #expect(hms(#"{"appQuota":{"windowSeconds":1}}"#) == "configuration: appQuota.limit is required")
        #expect(hms(#"{"rules":[{"fate":"error","code":81000001}]}"#) == "configuration: rules[0].code must be a string")

        func apns(_ json: String) -> String? { Self.refusal { _ = try MockFaultScript.parse(Data(json.utf8)) } }
        #expect(apns(#"{"dropStreamsAfterRejection":1}"#) == "configuration: dropStreamsAfterRejection must be true or false")
        #expect(apns("[]") == "configuration: the top level must be a JSON object")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-faults-typed-\(getpid()).json").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try #"{"seed":-1,"rules":[{"fate":"drop","subscriptionPrefix":7}]}"#.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(Self.refusal { _ = try MockWebPushFaultScript.load(file: file) }
                == "configuration: \(file): seed must be a whole number from 0 to 18446744073709551615, got -1; rules[0].subscriptionPrefix must be a string")
        try #"{"tokenFailFirst":-1}"#.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(Self.refusal { _ = try MockFCMFaultScript.load(file: file) } == "configuration: \(file): tokenFailFirst must be 0 or more")
    }
}

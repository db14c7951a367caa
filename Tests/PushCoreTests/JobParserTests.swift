import APNs
import Basics
import FCM
import HeraldProviders
import ProviderKit
@testable import PushCore
import Testing

private let token = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

/// A job read as the worker reads an APNs job: the envelope, then APNs' members (and its rules of the envelope).
private func read(_ text: String) throws(JobError) -> (spec: JobSpec, apns: APNsJob) {
    let (spec, apns) = try APNsProvider.parse(Array(text.utf8))
    return (spec, apns)
}

/// A job read as the worker reads any job: the envelope, then its provider's members.
private func parse(_ text: String) throws(JobError) -> JobSpec { try heraldProviders.read(Array(text.utf8), table: members) }
private let members = heraldProviders.jobMembers

private func parseError(_ text: String) -> JobError? {
    do { _ = try parse(text); return nil } catch { return error }
}

private func validate(_ bytes: [UInt8]) -> JSONScanError? {
    bytes.withUnsafeBufferPointer { b in
        do throws(JSONScanError) { _ = try JSONScanner.validate(b); return nil } catch { return error }
    }
}

@Suite struct JobParserTests {
    @Test func fullJob() throws {
        let (job, apns) = try read("""
            {"id":"j1","token":"\(token)","topic":"com.example.app.voip","environment":"sandbox","app":"main",
             "push_type":"voip","priority":5,"expiration":1900000000,"collapse_id":"c","apns_id":"123e4567-e89b-12d3-a456-4266554400a0",
             "payload":{"aps":{}}}
            """)
        #expect(job.id == "j1")
        #expect(job.token == token)
        #expect(job.topic == "com.example.app.voip")
        #expect(apns.environment == .sandbox)
        #expect(job.app == "main")
        #expect(apns.pushType == .voip)
        #expect(apns.priority == 5)
        #expect(job.expiration == 1_900_000_000)
        #expect(apns.collapseID == "c")
        #expect(apns.apnsID == "123e4567-e89b-12d3-a456-4266554400a0")
        #expect(job.payload == Array(#"{"aps":{}}"#.utf8))
        let n = apns.notification(job, topic: job.topic!, environment: apns.environment!)
        #expect(NotificationValidator.validate(n) == nil)
    }

    @Test func defaultsAndNulls() throws {
        let (job, apns) = try read(#"{"token":"ab","payload":{},"topic":null,"priority":null,"id":42}"#)
        #expect(apns.pushType == .alert)
        #expect(job.topic == nil && apns.priority == nil && apns.environment == nil && job.expiration == nil)
        #expect(job.id == "42")
    }

    @Test func payloadIsSlicedByteForByte() throws {
        let payload = "{ \"aps\" :\t{\"alert\" : \"h\\u00e9llo \\ud83d\\ude00 \u{00E9}\"} ,\n \"n\": 1.50e+3, \"k\":[ ] }"
        let job = try parse("{\r\n \"payload\" :  \(payload)  ,\"token\":\"\(token)\" }  \n")
        #expect(job.payload == Array(payload.utf8))
    }

    @Test func unknownFieldsAreIgnored() throws {
        let job = try parse(#"{"mine":{"deep":[1,2,{"x":"y"}]},"token":"ab","Token":5,"payload":{},"herald_extra":true}"#)
        #expect(job.token == "ab")
    }

    @Test func escapedKeysStillMatch() throws {
        let job = try parse(#"{"to\u006ben":"ab","p\u0061yload":{"a":1}}"#)
        #expect(job.token == "ab")
        #expect(job.payload == Array(#"{"a":1}"#.utf8))
    }

    @Test func stringsDecodeEscapes() throws {
        let apns = try read(#"{"token":"ab","payload":{},"collapse_id":"a\"b\\c\/d\n\u00e9\ud83d\ude00"}"#).apns
        #expect(apns.collapseID == "a\"b\\c/d\n\u{00E9}\u{1F600}")
    }

    static let errors: [(String, String)] = [
        ("", "not_json"), ("   ", "not_json"), ("nope", "not_json"), ("{", "not_json"),
        (#"{"token":"ab","payload":{}"#, "not_json"), (#"{"token":"ab","payload":{}} x"#, "not_json"),
        (#"{"token":"ab","payload":{},}"#, "not_json"), (#"{"token":"ab" "payload":{}}"#, "not_json"),
        ("[1,2]", "not_object"), ("\"s\"", "not_object"), ("42", "not_object"), ("null", "not_object"),
        (#"{"payload":{}}"#, "missing_token"), (#"{"token":null,"payload":{}}"#, "missing_token"),
        (#"{"token":"xyz1","payload":{}}"#, "bad_token"), (#"{"token":"abc","payload":{}}"#, "bad_token"),
        (#"{"token":"","payload":{}}"#, "bad_token"), (#"{"token":12,"payload":{}}"#, "wrong_type"),
        (#"{"token":"ab"}"#, "missing_payload"), (#"{"token":"ab","payload":"{}"}"#, "payload_not_object"),
        (#"{"token":"ab","payload":[]}"#, "payload_not_object"),
        (#"{"token":"ab","payload":{},"environment":"development"}"#, "bad_environment"),
        (#"{"token":"ab","payload":{},"push_type":"Alert"}"#, "unknown_push_type"),
        (#"{"token":"ab","payload":{},"priority":"10"}"#, "wrong_type"),
        (#"{"token":"ab","payload":{},"priority":10.0}"#, "wrong_type"),
        (#"{"token":"ab","payload":{},"priority":99999999999}"#, "out_of_range"),
        (#"{"token":"ab","payload":{},"expiration":99999999999999999999}"#, "out_of_range"),
        (#"{"token":"ab","payload":{},"expiration":1e9}"#, "wrong_type"),
        (#"{"token":"ab","payload":{},"topic":true}"#, "wrong_type"),
        (#"{"token":"ab","payload":{},"id":[]}"#, "wrong_type"),
        (#"{"token":"ab","token":"cd","payload":{}}"#, "duplicate_field"),
        (#"{"token":"ab","payload":{"a":01}}"#, "not_json"),
        (#"{"token":"ab","payload":{"a":"\x"}}"#, "not_json"),
        (#"{"token":"ab","payload":{"a":"\ud800"}}"#, "not_json"),
        (#"{"token":"ab","payload":{"a":"\udc00\ud800"}}"#, "not_json"),
        (#"{"token":"ab","payload":{"a":tru}}"#, "not_json"),
    ]

    @Test func errorsAreClearAndTyped() {
        for (text, code) in Self.errors {
            let error = parseError(text)
            #expect(error?.code == code, "\(text) gave \(String(describing: error))")
            #expect(!(error?.description.isEmpty ?? true))
        }
    }

    @Test func errorMessagesSayWhat() {
        #expect(parseError(#"{"token":"ab","payload":{},"push_type":"fax"}"#)?.description.contains("fax") == true)
        #expect(parseError(#"{"token":"ab","payload":{},"priority":"10"}"#)?.description == "\"priority\" must be an integer")
        #expect(parseError("[]")?.description == "job is not a JSON object")
    }

    @Test func rawControlCharactersAndBadUTF8AreRefused() {
        #expect(parseError("{\"token\":\"ab\",\"payload\":{\"a\":\"x\ny\"}}")?.code == "not_json")
        var bytes = Array(#"{"token":"ab","payload":{"a":"x"}}"#.utf8)
        bytes[bytes.firstIndex(of: UInt8(ascii: "x"))!] = 0xC0  // overlong lead byte in place of x
        #expect(throws: JobError.self) { try JobParser.parse(bytes) }
        let surrogateUTF8: [UInt8] = Array(#"{"token":"ab","payload":{"a":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}}"#.utf8)
        #expect(throws: JobError.self) { try JobParser.parse(surrogateUTF8) }
        let fine: [UInt8] = Array(#"{"token":"ab","payload":{"a":""#.utf8) + [0xF0, 0x9F, 0x98, 0x80] + Array(#""}}"#.utf8)
        #expect((try? JobParser.parse(fine)) != nil)
    }

    @Test func tenMegabyteStringIsLinearAndSafe() throws {
        let big = String(repeating: "x", count: 10 * 1024 * 1024)
        let (job, apns) = try read(#"{"token":"ab","payload":{"a":"\#(big)"},"mine":"\#(big)"}"#)
        #expect(job.payload.count == big.utf8.count + 8)
        #expect(NotificationValidator.validate(apns.notification(job, topic: "t", environment: .production))?.reason == .payloadTooLarge)
        // unterminated 10 MB string: an error, not a crash
        #expect(parseError(#"{"token":"ab","payload":{"a":"\#(big)"#)?.code == "not_json")
        // 10 MB of escapes
        let escaped = String(repeating: "\\n", count: 5 * 1024 * 1024)
        #expect(try parse(#"{"token":"ab","payload":{},"mine":"\#(escaped)"}"#).token == "ab")
    }

    @Test func nestingIsLimited() throws {
        let okDepth = JSONScanner.defaultMaxDepth - 1  // the job object itself is one level
        let ok = String(repeating: "[", count: okDepth - 1) + String(repeating: "]", count: okDepth - 1)
        #expect(try parse(#"{"token":"ab","payload":{"a":\#(ok)}}"#).token == "ab")
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(parseError(#"{"token":"ab","payload":{"a":\#(deep)}}"#) == .notJSON(.tooDeep(limit: JSONScanner.defaultMaxDepth)))
        let open = String(repeating: "{\"a\":", count: 1_000_000)
        #expect(parseError(#"{"token":"ab","payload":\#(open)"#)?.code == "not_json")
    }

    @Test func heraldEnvelopeIsRecognised() {
        #expect(JobParser.isHeraldEnvelope(Array(#"{"herald":{"attempt":2},"job":{}}"#.utf8)))
        #expect(!JobParser.isHeraldEnvelope(Array(#"{ "herald":1}"#.utf8)))
        #expect(!JobParser.isHeraldEnvelope(Array(#"{"token":"ab"}"#.utf8)))
        #expect(!JobParser.isHeraldEnvelope([]))
    }
}

@Suite struct JSONScannerTests {
    static let valid = [
        "0", "-0", "1.5", "-1.5e10", "1E-2", "12345678901234567890123", "true", "false", "null", "\"\"",
        "[]", "{}", " [ 1 , \"a\" , { } , [ ] ] ", "{\"a\":{\"b\":[null,true,false]}}", "\"\\u0000\"",
        "\"\\ud83d\\ude00\"", "\"\\uD83D\\uDE00\"", "\"\u{10FFFF}\"",
    ]
    static let invalid = [
        "", " ", "01", "-", "1.", ".5", "1e", "+1", "[1,]", "[,1]", "{\"a\"}", "{\"a\":}", "{a:1}", "[1 2]",
        "\"abc", "'a'", "\"\\u12\"", "\"\\uzzzz\"", "\"\\ud83d\"", "\"\\ud83d\\u0041\"", "\"\\ude00\"",
        "nul", "truex", "[1]]", "{}{}", "\u{FEFF}{}",
    ]

    @Test func acceptsValid() {
        for text in Self.valid { #expect(validate(Array(text.utf8)) == nil, "\(text)") }
    }

    @Test func refusesInvalid() {
        for text in Self.invalid { #expect(validate(Array(text.utf8)) != nil, "\(text)") }
    }

    @Test func refusesBadUTF8() {
        for bad: [UInt8] in [[0x22, 0x80, 0x22], [0x22, 0xC1, 0xBF, 0x22], [0x22, 0xE0, 0x80, 0x80, 0x22],
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0xF0, 0x9F, 0x98, 0x22], [0x22, 0xFF, 0x22], [0x22, 0xE2, 0x82]]
        {
            #expect(validate(bad) != nil, "\(bad)")
        }
    }

    /// The word-at-a-time skip stops where a byte loop would, for every byte value at every lane of the first
    /// three words, after any run of plain bytes, and with the string's end anywhere.
    @Test func plainASCIIIsSkippedToExactlyTheFirstByteThatNeedsALook() {
        func reference(_ bytes: [UInt8], from start: Int, to end: Int) -> Int {
            var i = start
            while i < end, bytes[i] >= 0x20, bytes[i] < 0x80, bytes[i] != 0x22, bytes[i] != 0x5C { i += 1 }
            return i
        }
        var mismatches = 0
        for value in 0...255 {
            for position in 0..<24 {
                var bytes = [UInt8](repeating: UInt8(ascii: "x"), count: 30)
                bytes[position] = UInt8(value)
                // A second special byte later on must not move the first stop.
                bytes[min(position + 3, 29)] = 0x01
                for (start, end) in [(0, 30), (1, 30), (0, position), (2, 17)] where start <= end {
                    let got = bytes.withUnsafeBufferPointer { JSONScanner.skipPlain($0, from: start, to: end) }
                    if got != reference(bytes, from: start, to: end) { mismatches += 1 }
                }
            }
        }
        #expect(mismatches == 0)
        // Whole strings through the scanner: a quote, an escape, a control byte or UTF-8 at every offset.
        for position in 0..<20 {
            let before = String(repeating: "a", count: position)
            #expect(validate(Array("\"\(before)\\n\(before)é\"".utf8)) == nil)
            #expect(validate(Array("\"\(before)\u{01}\"".utf8)) == .controlCharacterInString(offset: 1 + position))
            #expect(validate(Array("\"\(before)\"x".utf8)) == .trailingData(offset: 2 + position))
        }
    }

    @Test func aHexTokenIsEvenLengthHexOfEitherCaseAndNothingElse() {
        for value in 0...127 {
            let byte = UInt8(value)
            let text = String(decoding: [UInt8(ascii: "0"), byte, byte, UInt8(ascii: "A")], as: UTF8.self)
            #expect(isHexToken(text) == (hexValue(byte) != nil), "\(value)")
        }
        #expect(isHexToken("0aF9") && !isHexToken("") && !isHexToken("abc") && !isHexToken("0aé9"))
    }

    @Test func isObject() {
        #expect(JSONScanner.isObject(Array("{\"a\":1}".utf8)))
        #expect(!JSONScanner.isObject(Array("[1]".utf8)))
        #expect(!JSONScanner.isObject(Array("{".utf8)))
    }
}

@Suite struct JSONWriterTests {
    @Test func writesNestedObjectsWithEscapedKeysAndValues() {
        var w = JSONWriter()
        w.beginObject()
        w.field("id", "a\"b\\c\n\t\u{1}é😀")
        w.field("n", Int64(-9_223_372_036_854_775_808))
        w.key("k\"ey"); w.beginObject(); w.field("m", 0); w.endObject()
        w.field("last", "x")
        w.endObject()
        let text = String(decoding: w.bytes, as: UTF8.self)
        #expect(text == #"{"id":"a\"b\\c\n\t\u0001é😀","n":-9223372036854775808,"k\"ey":{"m":0},"last":"x"}"#)
        #expect(JSONScanner.isObject(w.bytes))
    }

    @Test func escapedRoundTripsThroughTheParser() throws {
        let nasty = "\u{0}\u{1F}\"\\/\u{7F}\u{2028}日本\u{1F600}"
        let job = try JobParser.parse(Array("{\"token\":\"ab\",\"payload\":{},\"id\":\(jsonEscaped(nasty))}".utf8))
        #expect(job.id == nasty)
        #expect(jsonEscaped("plain") == "\"plain\"")
    }
}

@Suite struct TimestampTests {
    @Test(arguments: [
        ("1970-01-01T00:00:00Z", Int64(0)),
        ("2026-12-24T18:00:00Z", Int64(1_798_135_200_000)),
        ("2026-12-24T19:00:00.250+01:00", Int64(1_798_135_200_250)),
        ("2026-12-24T17:30:00.5-00:30", Int64(1_798_135_200_500)),
        ("2024-02-29T00:00:00.123456z", Int64(1_709_164_800_123)),
        ("2000-03-01 00:00:00Z", Int64(951_868_800_000)),
    ])
    func readsRFC3339(text: String, millis: Int64) {
        #expect(Timestamp.rfc3339Milliseconds(text) == millis)
    }

    @Test(arguments: ["", "2026-12-24", "2026-12-24T18:00:00", "2026-13-01T00:00:00Z", "2023-02-29T00:00:00Z",
                      "2026-12-24T24:00:00Z", "2026-12-24T18:00:00.Z", "2026-12-24T18:00:00+0100", "2026-12-24T18:00:00Zjunk"])
    func refusesWhatIsNotRFC3339(text: String) {
        #expect(Timestamp.rfc3339Milliseconds(text) == nil)
    }

    @Test func deliverAtTakesMillisecondsOrRFC3339() throws {
        let a = try JobParser.parse(Array(#"{"token":"aabb","payload":{},"deliver_at":1798135200000}"#.utf8))
        #expect(a.deliverAt == 1_798_135_200_000)
        let b = try JobParser.parse(Array(#"{"token":"aabb","payload":{},"deliver_at":"2026-12-24T18:00:00Z"}"#.utf8))
        #expect(b.deliverAt == 1_798_135_200_000)
        for bad in [#""tomorrow""#, "-5", "1.5", "true"] {
            #expect(throws: JobError.badDeliverAt) { try JobParser.parse(Array(#"{"token":"aabb","payload":{},"deliver_at":\#(bad)}"#.utf8)) }
        }
    }
}

/// Issue 14: multicast jobs list their devices in `tokens`.
@Suite struct MulticastParsingTests {
    @Test func tokensAreReadInOrderWithTheMembersExactBytes() throws {
        let text = #"{"id":"m","tokens" : [ "aabb","CCDD" ,"aabb"],"payload":{}}"#
        let spec = try parse(text)
        #expect(spec.tokens == ["aabb", "CCDD", "aabb"], "as listed: duplicates are the worker's business")
        #expect(spec.token == nil)
        let member = try #require(spec.tokensMember)
        #expect(String(decoding: Array(text.utf8)[member], as: UTF8.self) == #""tokens" : [ "aabb","CCDD" ,"aabb"]"#)
    }

    @Test func badTokenListsAreRefusedWithAReason() {
        let cases: [(String, String)] = [
            (#"{"tokens":[],"payload":{}}"#, "bad_tokens"),
            (#"{"tokens":"aabb","payload":{}}"#, "bad_tokens"),
            (#"{"tokens":["aabb",7],"payload":{}}"#, "bad_tokens"),
            (#"{"tokens":["aabb","xyz1"],"payload":{}}"#, "bad_tokens"),
            (#"{"token":"aabb","tokens":["ccdd"],"payload":{}}"#, "bad_tokens"),
            (#"{"tokens":["aabb"],"tokens":["ccdd"],"payload":{}}"#, "duplicate_field"),
            (#"{"tokens":["aabb"]}"#, "missing_payload"),
        ]
        for (text, code) in cases {
            #expect(parseError(text)?.code == code, "\(text)")
        }
        #expect(parseError(#"{"tokens":["aabb","xyz1"],"payload":{}}"#)?.description.contains("tokens[1]") == true)
        #expect(parseError(#"{"tokens":null,"payload":{}}"#) == .missingToken, "null counts as absent")
    }

    /// Issue 30: `"token": null` beside `tokens` counts as absent, so each token's own job reads as one `token`,
    /// wherever the null member stood (its children were all refused as `duplicate_field` before).
    @Test func aNullTokenBesideTokensLeavesEachChildOneToken() throws {
        let jobs = [
            #"{"id":"t","token":null,"tokens":["aabb","ccdd"],"payload":{"aps":{}}}"#,
            #"{"id":"t","tokens":["aabb","ccdd"], "token" : null ,"payload":{"aps":{}}}"#,
            #"{"id":"t","tokens":["aabb","ccdd"],"payload":{"aps":{}},"token":null}"#,
            #"{"token":null , "tokens":["aabb","ccdd"],"payload":{"aps":{}}}"#,
        ]
        for text in jobs {
            let spec = try parse(text)
            let parts = try #require(spec.tokenJobParts(of: Array(text.utf8)))
            for child in ["aabb", "ccdd"] {
                let bytes = parts.prefix + Array(child.utf8) + parts.suffix
                let childText = String(decoding: bytes, as: UTF8.self)
                #expect(validate(bytes) == nil, "\(childText)")
                let childSpec = try parse(childText)
                #expect(childSpec.token == child, "\(childText)")
                #expect(childSpec.tokens == nil && childSpec.id == spec.id && childSpec.payload == spec.payload)
                #expect(!childText.contains("null"), "\(childText)")
            }
        }
    }

    /// Issue 30: an FCM job with `tokens` was refused as `bad_tokens: ... hexadecimal`, which sends the producer
    /// after its token format; multicast is an APNs feature, and the reason now says so, wherever `platform` stands.
    @Test func anFCMJobWithTokensIsToldMulticastIsForAPNs() {
        for text in [#"{"tokens":["fcm:APA91b-x"],"platform":"fcm","message":{"topic":"news"}}"#,
                     #"{"platform":"fcm","message":{"topic":"news"},"tokens":["aabb"]}"#] {
            let error = parseError(text)
            #expect(error?.code == "bad_tokens", "\(text)")
            #expect(error?.description.contains("multicast) is for APNs jobs") == true, "\(text)")
            #expect(error?.description.contains("hexadecimal") == false, "\(text)")
        }
    }

    @Test func theLimitIsTenThousandTokens() throws {
        func job(_ n: Int) -> String { #"{"tokens":[\#((0..<n).map { _ in "\"\(token)\"" }.joined(separator: ","))],"payload":{}}"# }
        #expect(try parse(job(JobParser.maxTokens)).tokens?.count == 10_000)
        #expect(parseError(job(JobParser.maxTokens + 1)) == .tooManyTokens(limit: 10_000))
    }

    /// W3C trace context: a valid `traceparent` is kept for the result entries; a malformed one is ignored (as the
    /// spec asks), never a reason to refuse the job; given twice it is refused like any field.
    @Test func aValidTraceparentIsKeptAndAMalformedOneIgnored() throws {
        let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        #expect(try parse(#"{"token":"\#(token)","traceparent":"\#(valid)","payload":{}}"#).traceparent == valid)
        for bad in ["00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                    "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                    valid + "-extra", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", "trace", ""] {
            #expect(try parse(#"{"token":"\#(token)","traceparent":"\#(bad)","payload":{}}"#).traceparent == nil, "\(bad)")
        }
        // Not a string at all is malformed too: ignored, the job kept (issue 54).
        for notText in ["42", "true", "null", "{\"v\":1}", "[\"\(valid)\"]"] {
            #expect(try parse(#"{"token":"\#(token)","traceparent":\#(notText),"payload":{}}"#).traceparent == nil, "\(notText)")
        }
        #expect(TraceParent.isValid("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future"), "a later version may add fields")
        #expect(parseError(#"{"token":"\#(token)","traceparent":"\#(valid)","traceparent":"\#(valid)","payload":{}}"#) == .duplicateField("traceparent"))
    }
}

/// Issue 25, item 6: the job-level `"validate_only"` and what it turns into on the way to FCM.
@Suite struct ValidateOnlyParsingTests {
    @Test(arguments: [
        (#""validate_only":true"#, true), (#""validate_only":false"#, false), (#""validate_only":null"#, false), ("", false),
        (#""validate\u005fonly":true"#, true),
    ])
    func theFlagIsReadAsGiven(member: String, expected: Bool) throws {
        let comma = member.isEmpty ? "" : ","
        #expect(try parse(#"{"token":"\#(token)","payload":{}\#(comma)\#(member)}"#).validateOnly == expected)
    }

    @Test(arguments: [#""true""#, "1", "{}"])
    func aFlagThatIsNotABooleanIsAWrongTypeRejection(value: String) {
        let error = parseError(#"{"token":"\#(token)","payload":{},"validate_only":\#(value)}"#)
        #expect(error == .wrongType(field: "validate_only", expected: "true or false"))
        #expect(error?.code == "wrong_type")
    }

    @Test func aSecondFlagIsADuplicateField() {
        #expect(parseError(#"{"token":"\#(token)","payload":{},"validate_only":true,"validate_only":false}"#) == .duplicateField("validate_only"))
    }

    @Test func fcmGetsItsOwnValidateOnlyBesideTheMessageBytesUntouched() throws {
        let message = Array(#"{"token":"t","data":{"k":"v"}}"#.utf8)
        let body = FCMSender.body(message: message, validateOnly: true)
        #expect(String(decoding: body, as: UTF8.self) == #"{"message":{"token":"t","data":{"k":"v"}},"validate_only":true}"#)
        #expect(validate(body) == nil)
        #expect(String(decoding: FCMSender.body(message: message), as: UTF8.self) == #"{"message":{"token":"t","data":{"k":"v"}}}"#)
    }

    /// Every platform is a job's `platform`, and the refusal of any other names them all: derived from
    /// `Platform.allCases`, so a new provider is listed without an edit.
    @Test func aBadPlatformsErrorListsEveryPlatform() throws {
        let error = try #require(parseError(#"{"platform":"gcm","message":{}}"#))
        for platform in Platform.allCases {
            #expect(error.description.contains(platform.rawValue), "\(error)")
            // Every provider's target at once: FCM's and Push Kit's `message`, Web Push's `subscription`, Expo's `to`.
            #expect(try parse(#"{"platform":"\#(platform.rawValue)","message":{},"subscription":{},"to":"ExpoPushToken[a]","token":"\#(token)","payload":{}}"#).platform == platform)
        }
        // A job of a provider that takes its own `message` and has none is told so in its own provider's name.
        for platform in Platform.allCases where platform.carriesMessage {
            let missing = try #require(parseError(#"{"platform":"\#(platform.rawValue)","payload":{}}"#))
            #expect(missing == .missingMessage(platform) && missing.description.hasPrefix("a \(platform.displayName) job"), "\(missing)")
        }
    }
}

@testable import PushCore
import Testing

/// The parser's side of the provider seam: members declared by providers are sliced for them, by index, in an
/// inline table built once from the declarations.
@Suite struct JobMemberTableTests {
    /// Two providers' members, one name declared by both.
    static let table = JobMemberTable([
        .apns: [JobMember("note"), JobMember("shared"), JobMember("aim", shape: .target)],
        .fcm: [JobMember("shared"), JobMember("blob", shape: .impliesPlatform(withoutPayload: true))],
    ])

    private func parse(_ text: String) throws(JobError) -> JobSpec { try JobParser.parse(Array(text.utf8), members: Self.table) }

    @Test func aMemberIsSlicedForEachProviderThatDeclaresItAndReadByItsIndex() throws {
        let text = #"{"token":"ab","payload":{},"note":"n\u00e9","shared":[1, 2],"other":5}"#
        let spec = try parse(text)
        let bytes = Array(text.utf8)
        let note = try spec.readMembers(of: .apns, in: bytes) { (m: JobMemberReader) throws(JobError) -> String? in try m.string(0, "note") }
        #expect(note == "né")
        for (platform, index) in [(Platform.apns, 1), (.fcm, 0)] {
            let shared = try #require(spec.members.slice(platform, index))
            #expect(String(decoding: bytes[shared.range], as: UTF8.self) == #""shared":[1, 2]"#)
            #expect(shared.value.kind == .array)
        }
        #expect(spec.members.slice(.apns, 2) == nil && spec.members.slice(.fcm, 1) == nil)
        #expect(spec.members.slice(.webpush, 0) == nil, "a platform that declared nothing has no slot")
    }

    @Test func aMemberGivenTwiceOrOfTheWrongTypeIsRefusedAndNullIsAbsent() throws {
        #expect(throws: JobError.duplicateField("note")) { try parse(#"{"note":"a","token":"ab","note":null,"payload":{}}"#) }
        let spec = try parse(#"{"note":null,"token":"ab","payload":{}}"#)
        #expect(spec.members.slice(.apns, 0) == nil)
        let bytes = Array(#"{"note":5,"token":"ab","payload":{}}"#.utf8)
        let wrong = try JobParser.parse(bytes, members: Self.table)
        #expect(throws: JobError.wrongType(field: "note", expected: "a string")) {
            try wrong.readMembers(of: .apns, in: bytes) { (m: JobMemberReader) throws(JobError) -> String? in try m.string(0, "note") }
        }
    }

    @Test func shapesDecideThePlatformOfAJobThatNamesNone() throws {
        #expect(try parse(#"{"blob":{}}"#).platform == .fcm, "implies its platform without a payload")
        #expect(try parse(#"{"blob":{},"payload":{}}"#).platform == .apns, "not with one")
        #expect(try parse(#"{"blob":{},"aim":"x"}"#).platform == .apns, "nor beside a target")
        #expect(try parse(#"{"blob":{},"platform":"apns"}"#).platform == .apns, "nor when the job names its platform")
        #expect(throws: JobError.badPlatform("ios")) { try parse(#"{"platform":"ios","blob":{}}"#) }
        #expect(try parse(#"{"platform":"ios","aim":"x","payload":{}}"#).platform == .apns, "a target and a payload keep the old shape")
    }

    @Test func withoutATableEveryProviderMemberIsAnUnknownField() throws {
        let spec = try JobParser.parse(Array(#"{"note":"a","note":"b","token":"ab","payload":{}}"#.utf8))
        #expect(spec.members.present == 0)
    }
}

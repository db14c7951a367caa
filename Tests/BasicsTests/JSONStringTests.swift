import Basics
import Foundation
import Testing

/// The one JSON string escaper, checked against one table of RFC 8259 cases and against Foundation's decoder.
@Suite struct JSONStringTests {
    /// Input and the exact quoted output every Herald writer (results, envelopes, dead letters, tokens) produces.
    static let table: [(String, String)] = [
        ("", #""""#),
        ("plain", #""plain""#),
        ("quote\"", #""quote\"""#),
        ("back\\slash", #""back\\slash""#),
        ("\n\r\t\u{8}\u{C}", #""\n\r\t\b\f""#),
        ("\u{0}\u{1}\u{1F}", #""\u0000\u0001\u001f""#),
        ("\u{B}\u{1B}", #""\u000b\u001b""#),
        ("a/b", #""a/b""#),  // `/` passes through
        ("\u{7F}", "\"\u{7F}\""),  // DEL is not a JSON control character
        ("\u{2028}\u{2029}", "\"\u{2028}\u{2029}\""),  // valid JSON, left as UTF-8
        ("é日本😀", "\"é日本😀\""),
        ("mixed \"run\"\nend", #""mixed \"run\"\nend""#),
    ]

    @Test(arguments: table)
    func escapesExactlyAsTheTableSays(input: String, expected: String) {
        #expect(jsonEscaped(input) == expected)
        var fromBytes: [UInt8] = [UInt8(ascii: "x")]
        appendJSONString(utf8: Array(input.utf8), to: &fromBytes)
        #expect(fromBytes == [UInt8(ascii: "x")] + Array(expected.utf8), "the byte form appends the same bytes")
    }

    @Test func everyCharacterBelow0x80AndSomeBeyondRoundTripThroughFoundation() throws {
        var scalars = (0..<0x80).map { Character(Unicode.Scalar(UInt8($0))) }
        scalars += ["é", "\u{2028}", "\u{FFFD}", "😀"]
        for character in scalars {
            let text = "a\(character)b"
            let json = "[" + jsonEscaped(text) + "]"
            let decoded = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String], "\(json.debugDescription)")
            #expect(decoded == [text], "\(json.debugDescription)")
        }
    }
}

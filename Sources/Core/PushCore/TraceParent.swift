/// The W3C Trace Context `traceparent` header's form (https://www.w3.org/TR/trace-context/):
/// `<version>-<trace-id>-<parent-id>-<flags>`, lower-case hex of 2, 32, 16 and 2 digits, neither id all zeros,
/// version `ff` forbidden. A later version may append fields after a dash; version 00 may not.
public enum TraceParent {
    public static func isValid(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count >= 55, bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-") else { return false }
        func hex(_ range: Range<Int>) -> Bool {
            bytes[range].allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f")) }
        }
        func zeros(_ range: Range<Int>) -> Bool { bytes[range].allSatisfy { $0 == UInt8(ascii: "0") } }
        guard hex(0..<2), hex(3..<35), hex(36..<52), hex(53..<55), !zeros(3..<35), !zeros(36..<52) else { return false }
        let version = text.prefix(2)
        if version == "ff" { return false }
        if version == "00" { return bytes.count == 55 }
        return bytes.count == 55 || bytes[55] == UInt8(ascii: "-")
    }

    /// `text` when it is a valid `traceparent`, else nil (a malformed one is ignored, never an error).
    public static func valid(_ text: String) -> String? { isValid(text) ? text : nil }
}

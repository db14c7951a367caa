/// Minimal JSON string writing on bytes: Herald builds its small headers and entries by concatenation so a
/// job's bytes are never re-serialised.
enum JSONBytes {
    private static let hex = Array("0123456789abcdef".utf8)

    /// Appends `"..."` with JSON escapes. `bytes` must be UTF-8 (callers check, or base64 first).
    static func appendString<S: Sequence>(_ bytes: S, to out: inout [UInt8]) where S.Element == UInt8 {
        out.append(UInt8(ascii: "\""))
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""): out.append(92); out.append(byte)
            case 92: out.append(92); out.append(92)
            case 10: out.append(92); out.append(UInt8(ascii: "n"))
            case 13: out.append(92); out.append(UInt8(ascii: "r"))
            case 9: out.append(92); out.append(UInt8(ascii: "t"))
            case 0..<0x20, 0x7F:
                out.append(contentsOf: Array(#"\u00"#.utf8))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    static func appendString(_ text: String, to out: inout [UInt8]) { appendString(text.utf8, to: &out) }

    static func isValidUTF8(_ bytes: [UInt8]) -> Bool {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    /// Index of the first occurrence of `needle` in `haystack[from...]`.
    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int, limit: Int? = nil) -> Int? {
        let end = min(limit ?? haystack.count, haystack.count) - needle.count
        guard !needle.isEmpty, start <= end else { return nil }
        var index = start
        while index <= end {
            if haystack[index] == needle[0] {
                var match = true
                for offset in 1..<needle.count where haystack[index + offset] != needle[offset] {
                    match = false
                    break
                }
                if match { return index }
            }
            index += 1
        }
        return nil
    }
}

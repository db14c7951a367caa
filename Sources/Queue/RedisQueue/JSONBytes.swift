/// Byte helpers for the JSON Herald builds by concatenation (so a job's bytes are never re-serialised); the
/// string escaping itself is Basics' `appendJSONString`.
enum JSONBytes {
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

/// Byte-wise prefix and suffix tests: String's Unicode-aware versions (and Foundation's bridges) cost more
/// than the rest of a request, and every name compared here is ASCII.
enum UTF8Matching {
    static func hasPrefix(_ text: String, _ prefix: String) -> Bool {
        let a = text.utf8, b = prefix.utf8
        guard a.count >= b.count else { return false }
        return a.prefix(b.count).elementsEqual(b)
    }

    static func hasSuffix(_ text: String, _ suffix: String) -> Bool {
        let a = text.utf8, b = suffix.utf8
        guard a.count >= b.count else { return false }
        return a.suffix(b.count).elementsEqual(b)
    }

    /// A header name as received against a name the provider reads.
    static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard bytes.count == count else { return false }
        let expected = UnsafeBufferPointer(start: text.utf8Start, count: count)
        for index in 0..<count where bytes[index] != expected[index] { return false }
        return true
    }

    /// What stands between `prefix` and `suffix` in `text` when it is one non-empty path segment (no `/`): the
    /// project or app of a send path.
    static func segment(of text: String, between prefix: String, and suffix: String) -> String? {
        guard text.utf8.count > prefix.utf8.count + suffix.utf8.count, hasPrefix(text, prefix), hasSuffix(text, suffix) else { return nil }
        let segment = String(text.utf8.dropFirst(prefix.utf8.count).dropLast(suffix.utf8.count))!
        return segment.contains("/") ? nil : segment
    }

    /// ASCII case-insensitive prefix test.
    static func hasPrefixIgnoringCase(_ text: String, _ prefix: String) -> Bool {
        let a = text.utf8, b = prefix.utf8
        guard a.count >= b.count else { return false }
        return zip(a, b).allSatisfy { lower($0) == lower($1) }
    }

    @inline(__always) static func lower(_ c: UInt8) -> UInt8 { c >= 0x41 && c <= 0x5a ? c | 0x20 : c }
}

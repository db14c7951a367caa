/// The one JSON string escaper (RFC 8259 section 7). `"` and `\` are escaped, control characters below 0x20
/// use the short forms `\n \r \t \b \f` where JSON has one and `\u00XX` (lowercase hex) otherwise. Everything
/// else passes through as UTF-8: `/` is not escaped (optional in RFC 8259, and paths and URLs stay readable),
/// DEL (0x7F) is not a control character in JSON, and U+2028/U+2029 are valid in JSON strings (they only
/// matter to JavaScript engines older than ES2019, which no consumer of Herald's JSON is).

/// Appends `s` as a quoted JSON string.
public func appendJSONString(_ s: String, to out: inout [UInt8]) {
    var s = s
    s.withUTF8 { appendJSONString(utf8: $0, to: &out) }
}

/// Appends `bytes` as a quoted JSON string. `bytes` must be valid UTF-8 (callers check, or base64 first):
/// invalid sequences are copied as they are.
public func appendJSONString(utf8 bytes: [UInt8], to out: inout [UInt8]) {
    bytes.withUnsafeBufferPointer { appendJSONString(utf8: $0, to: &out) }
}

/// Appends `utf8` as a quoted JSON string, copying runs that need no escape in one append each.
public func appendJSONString(utf8: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
    out.reserveCapacity(out.count + utf8.count + 2)
    out.append(UInt8(ascii: "\""))
    var runStart = 0
    for i in 0..<utf8.count {
        let b = utf8[i]
        guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
        if runStart < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i])) }
        runStart = i + 1
        out.append(UInt8(ascii: "\\"))
        switch b {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(b)
        case 0x0A: out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(UInt8(ascii: "r"))
        case 0x09: out.append(UInt8(ascii: "t"))
        case 0x08: out.append(UInt8(ascii: "b"))
        case 0x0C: out.append(UInt8(ascii: "f"))
        default:
            out.append(UInt8(ascii: "u"))
            out.append(UInt8(ascii: "0"))
            out.append(UInt8(ascii: "0"))
            out.append(lowercaseHexDigit(b >> 4))
            out.append(lowercaseHexDigit(b & 0xF))
        }
    }
    if runStart < utf8.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...])) }
    out.append(UInt8(ascii: "\""))
}

/// `s` as a quoted JSON string literal.
public func jsonEscaped(_ s: String) -> String {
    var out: [UInt8] = []
    appendJSONString(s, to: &out)
    return String(decoding: out, as: UTF8.self)
}

@inline(__always) private func lowercaseHexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
}

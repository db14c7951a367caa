/// Why a byte sequence is not valid JSON; `offset` is the byte where the scan stopped.
public enum JSONScanError: Error, Equatable, Sendable, CustomStringConvertible {
    case unexpectedEnd
    case unexpectedByte(UInt8, offset: Int)
    case invalidEscape(offset: Int)
    case invalidSurrogate(offset: Int)
    case controlCharacterInString(offset: Int)
    case invalidUTF8(offset: Int)
    case invalidNumber(offset: Int)
    case tooDeep(limit: Int)
    case trailingData(offset: Int)

    public var description: String {
        switch self {
        case .unexpectedEnd: return "unexpected end of input"
        case .unexpectedByte(let b, let o):
            let shown = b >= 0x20 && b < 0x7F ? "'\(Character(Unicode.Scalar(b)))'" : "0x" + String(b, radix: 16)
            return "unexpected byte \(shown) at offset \(o)"
        case .invalidEscape(let o): return "invalid escape sequence at offset \(o)"
        case .invalidSurrogate(let o): return "unpaired UTF-16 surrogate escape at offset \(o)"
        case .controlCharacterInString(let o): return "unescaped control character in string at offset \(o)"
        case .invalidUTF8(let o): return "invalid UTF-8 at offset \(o)"
        case .invalidNumber(let o): return "invalid number at offset \(o)"
        case .tooDeep(let limit): return "nesting deeper than \(limit) levels"
        case .trailingData(let o): return "data after the JSON value at offset \(o)"
        }
    }

    /// Where in the input it went wrong (nil for the end of input and the depth limit).
    public var offset: Int? {
        switch self {
        case .unexpectedEnd, .tooDeep: nil
        case .unexpectedByte(_, let o), .invalidEscape(let o), .invalidSurrogate(let o), .controlCharacterInString(let o),
             .invalidUTF8(let o), .invalidNumber(let o), .trailingData(let o): o
        }
    }

    /// 1-based line and column (in bytes) of `offset` in `bytes`, for people reading a file.
    public static func lineAndColumn(of offset: Int, in bytes: some Collection<UInt8>) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        for byte in bytes.prefix(offset) {
            if byte == UInt8(ascii: "\n") { line += 1; column = 1 } else { column += 1 }
        }
        return (line, column)
    }
}

public enum JSONKind: Sendable, Equatable {
    case object, array, string, number, bool, null
}

/// A scanned value: where it lies in the input, so it can be sliced byte for byte.
public struct JSONToken: Sendable, Equatable {
    public var kind: JSONKind
    /// The whole value, quotes and brackets included.
    public var range: Range<Int>
    /// For strings: the string contains a backslash escape (decoding needs the slow path).
    public var hasEscapes: Bool
    /// For numbers: no fraction and no exponent.
    public var isInteger: Bool

    /// For strings: the bytes between the quotes.
    public var contentRange: Range<Int> {
        kind == .string ? (range.lowerBound + 1)..<(range.upperBound - 1) : range
    }
}

/// A strict RFC 8259 scanner over bytes: validates everything (UTF-8, escapes, surrogate pairs, number
/// grammar, nesting depth) in one linear pass and reports byte ranges instead of building values, so the
/// job parser can slice the payload without re-encoding it. Not Sendable: it borrows a buffer pointer that
/// is only valid inside the caller's `withUnsafeBufferPointer`.
public struct JSONScanner {
    public let bytes: UnsafeBufferPointer<UInt8>
    public var position: Int
    public let maxDepth: Int

    public static let defaultMaxDepth = 128

    public init(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int = JSONScanner.defaultMaxDepth) {
        self.bytes = bytes
        self.position = 0
        self.maxDepth = maxDepth
    }

    // MARK: whole documents

    /// Validates a complete document (one value, whitespace around it allowed) and returns its top-level token.
    public static func validate(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int = defaultMaxDepth)
        throws(JSONScanError) -> JSONToken
    {
        var scanner = JSONScanner(bytes, maxDepth: maxDepth)
        scanner.skipWhitespace()
        let token = try scanner.scanValue(depth: 0)
        try scanner.expectEnd()
        return token
    }

    /// True when `bytes` is one complete, valid JSON object.
    public static func isObject(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            (try? validate(buffer, maxDepth: maxDepth))?.kind == .object
        }
    }

    /// Throws unless only whitespace remains.
    public mutating func expectEnd() throws(JSONScanError) {
        skipWhitespace()
        if position != bytes.count { throw .trailingData(offset: position) }
    }

    // MARK: objects, member by member

    /// Consumes `{`; then call `nextMember` until it returns nil.
    public mutating func beginObject() throws(JSONScanError) {
        skipWhitespace()
        guard position < bytes.count else { throw .unexpectedEnd }
        guard bytes[position] == UInt8(ascii: "{") else { throw .unexpectedByte(bytes[position], offset: position) }
        position += 1
    }

    /// The next key and value of the object opened by `beginObject` (nested values fully validated),
    /// or nil after its closing brace. `first` must start true and is managed by this call.
    public mutating func nextMember(first: inout Bool, depth: Int = 1) throws(JSONScanError)
        -> (key: JSONToken, value: JSONToken)?
    {
        skipWhitespace()
        guard position < bytes.count else { throw .unexpectedEnd }
        if bytes[position] == UInt8(ascii: "}") {
            position += 1
            return nil
        }
        if !first {
            guard bytes[position] == UInt8(ascii: ",") else { throw .unexpectedByte(bytes[position], offset: position) }
            position += 1
            skipWhitespace()
            guard position < bytes.count else { throw .unexpectedEnd }
        }
        first = false
        guard bytes[position] == UInt8(ascii: "\"") else { throw .unexpectedByte(bytes[position], offset: position) }
        let key = try scanString()
        skipWhitespace()
        guard position < bytes.count else { throw .unexpectedEnd }
        guard bytes[position] == UInt8(ascii: ":") else { throw .unexpectedByte(bytes[position], offset: position) }
        position += 1
        skipWhitespace()
        let value = try scanValue(depth: depth)
        return (key, value)
    }

    // MARK: values

    @inline(__always)
    public mutating func skipWhitespace() {
        while position < bytes.count {
            let b = bytes[position]
            guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { return }
            position += 1
        }
    }

    /// Scans one value starting at `position` (no leading whitespace); `depth` = containers already open.
    public mutating func scanValue(depth: Int) throws(JSONScanError) -> JSONToken {
        guard position < bytes.count else { throw .unexpectedEnd }
        let start = position
        switch bytes[position] {
        case UInt8(ascii: "\""):
            return try scanString()
        case UInt8(ascii: "{"):
            try scanContainer(depth: depth + 1, close: UInt8(ascii: "}"), isObject: true)
            return JSONToken(kind: .object, range: start..<position, hasEscapes: false, isInteger: false)
        case UInt8(ascii: "["):
            try scanContainer(depth: depth + 1, close: UInt8(ascii: "]"), isObject: false)
            return JSONToken(kind: .array, range: start..<position, hasEscapes: false, isInteger: false)
        case UInt8(ascii: "t"):
            try scanLiteral("true")
            return JSONToken(kind: .bool, range: start..<position, hasEscapes: false, isInteger: false)
        case UInt8(ascii: "f"):
            try scanLiteral("false")
            return JSONToken(kind: .bool, range: start..<position, hasEscapes: false, isInteger: false)
        case UInt8(ascii: "n"):
            try scanLiteral("null")
            return JSONToken(kind: .null, range: start..<position, hasEscapes: false, isInteger: false)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try scanNumber()
        default:
            throw .unexpectedByte(bytes[position], offset: position)
        }
    }

    private mutating func scanContainer(depth: Int, close: UInt8, isObject: Bool) throws(JSONScanError) {
        if depth > maxDepth { throw .tooDeep(limit: maxDepth) }
        position += 1  // opening bracket
        skipWhitespace()
        guard position < bytes.count else { throw .unexpectedEnd }
        if bytes[position] == close {
            position += 1
            return
        }
        while true {
            if isObject {
                guard bytes[position] == UInt8(ascii: "\"") else {
                    throw .unexpectedByte(bytes[position], offset: position)
                }
                _ = try scanString()
                skipWhitespace()
                guard position < bytes.count else { throw .unexpectedEnd }
                guard bytes[position] == UInt8(ascii: ":") else {
                    throw .unexpectedByte(bytes[position], offset: position)
                }
                position += 1
                skipWhitespace()
            }
            _ = try scanValue(depth: depth)
            skipWhitespace()
            guard position < bytes.count else { throw .unexpectedEnd }
            let b = bytes[position]
            position += 1
            if b == close { return }
            guard b == UInt8(ascii: ",") else { throw .unexpectedByte(b, offset: position - 1) }
            skipWhitespace()
            guard position < bytes.count else { throw .unexpectedEnd }
        }
    }

    private mutating func scanLiteral(_ word: StaticString) throws(JSONScanError) {
        let n = word.utf8CodeUnitCount
        guard bytes.count - position >= n else { throw .unexpectedEnd }
        let w = word.utf8Start
        for i in 0..<n where bytes[position + i] != w[i] {
            throw .unexpectedByte(bytes[position + i], offset: position + i)
        }
        position += n
    }

    /// `position` at the opening quote. Linear in the string's length whatever it holds.
    public mutating func scanString() throws(JSONScanError) -> JSONToken {
        let start = position
        var i = position + 1
        var escapes = false
        let end = bytes.count
        while true {
            i = Self.skipPlain(bytes, from: i, to: end)
            guard i < end else { throw .unexpectedEnd }
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                i += 1
                break
            } else if b == UInt8(ascii: "\\") {
                escapes = true
                i = try scanEscape(at: i)
            } else if b < 0x20 {
                throw .controlCharacterInString(offset: i)
            } else if b < 0x80 {
                i += 1
            } else {
                i = try scanUTF8(at: i)
            }
        }
        position = i
        return JSONToken(kind: .string, range: start..<i, hasEscapes: escapes, isInteger: false)
    }

    /// The index of the first byte at or after `i` that is not plain printable ASCII (a quote, a backslash, a
    /// control byte or a UTF-8 lead or continuation byte), or `end`. Plain ASCII is most of every string, so it is
    /// skipped eight bytes at a time: one word load and a handful of bit operations flag any such byte (the
    /// lowest flag is exact; borrows only move flags up to later bytes), then the bytes before the first flag are
    /// skipped. Half the instructions of a byte loop on the worker's job parse (scripts/callgrind-worker).
    @inline(__always)
    static func skipPlain(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Int {
        var i = start
        if let base = bytes.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while i &+ 8 <= end {
                let v = UInt64(littleEndian: UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self))
                let quote = v ^ (ones &* 0x22)
                let backslash = v ^ (ones &* 0x5C)
                let flags = (v | ((v &- ones &* 0x20) & ~v) | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)) & highs
                if flags != 0 { return i &+ flags.trailingZeroBitCount >> 3 }
                i &+= 8
            }
        }
        while i < end {
            let c = bytes[i]
            guard c >= 0x20 && c < 0x80 && c != 0x22 && c != 0x5C else { break }
            i += 1
        }
        return i
    }

    /// Returns the index after the escape starting at the backslash at `i`.
    private func scanEscape(at i: Int) throws(JSONScanError) -> Int {
        guard i + 1 < bytes.count else { throw .unexpectedEnd }
        switch bytes[i + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
            UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return i + 2
        case UInt8(ascii: "u"):
            let unit = try hex4(at: i + 2)
            if unit >= 0xDC00 && unit <= 0xDFFF { throw .invalidSurrogate(offset: i) }
            if unit >= 0xD800 && unit <= 0xDBFF {
                guard i + 7 < bytes.count, bytes[i + 6] == UInt8(ascii: "\\"), bytes[i + 7] == UInt8(ascii: "u") else {
                    throw .invalidSurrogate(offset: i)
                }
                let low = try hex4(at: i + 8)
                guard low >= 0xDC00 && low <= 0xDFFF else { throw .invalidSurrogate(offset: i) }
                return i + 12
            }
            return i + 6
        default:
            throw .invalidEscape(offset: i)
        }
    }

    private func hex4(at i: Int) throws(JSONScanError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw .unexpectedEnd }
        var v: UInt32 = 0
        for k in i..<(i + 4) {
            guard let d = hexValue(bytes[k]) else { throw .invalidEscape(offset: k) }
            v = v << 4 | UInt32(d)
        }
        return v
    }

    /// Validates one multi-byte UTF-8 sequence (no overlongs, no surrogates, at most U+10FFFF).
    private func scanUTF8(at i: Int) throws(JSONScanError) -> Int {
        let b0 = bytes[i]
        let count: Int
        var lo: UInt8 = 0x80
        var hi: UInt8 = 0xBF
        switch b0 {
        case 0xC2...0xDF: count = 2
        case 0xE0: count = 3; lo = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: count = 3
        case 0xED: count = 3; hi = 0x9F
        case 0xF0: count = 4; lo = 0x90
        case 0xF1...0xF3: count = 4
        case 0xF4: count = 4; hi = 0x8F
        default: throw .invalidUTF8(offset: i)
        }
        guard i + count <= bytes.count else { throw .invalidUTF8(offset: i) }
        let b1 = bytes[i + 1]
        guard b1 >= lo && b1 <= hi else { throw .invalidUTF8(offset: i) }
        var k = 2
        while k < count {
            guard bytes[i + k] & 0xC0 == 0x80 else { throw .invalidUTF8(offset: i) }
            k += 1
        }
        return i + count
    }

    private mutating func scanNumber() throws(JSONScanError) -> JSONToken {
        let start = position
        var i = position
        let end = bytes.count
        var integer = true
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard i < end else { throw .unexpectedEnd }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
        } else if isDigit(bytes[i]) {
            while i < end && isDigit(bytes[i]) { i += 1 }
        } else {
            throw .invalidNumber(offset: i)
        }
        if i < end && bytes[i] == UInt8(ascii: ".") {
            integer = false
            i += 1
            guard i < end, isDigit(bytes[i]) else { throw .invalidNumber(offset: i) }
            while i < end && isDigit(bytes[i]) { i += 1 }
        }
        if i < end && (bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E")) {
            integer = false
            i += 1
            if i < end && (bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-")) { i += 1 }
            guard i < end, isDigit(bytes[i]) else { throw .invalidNumber(offset: i) }
            while i < end && isDigit(bytes[i]) { i += 1 }
        }
        position = i
        return JSONToken(kind: .number, range: start..<i, hasEscapes: false, isInteger: integer)
    }

    // MARK: reading scanned values

    /// The string's value (escapes decoded); only for string tokens from this buffer.
    public func stringValue(_ token: JSONToken) -> String {
        let content = UnsafeBufferPointer(rebasing: bytes[token.contentRange])
        if !token.hasEscapes { return String(decoding: content, as: UTF8.self) }
        return String(decoding: JSONScanner.unescape(content), as: UTF8.self)
    }

    /// True when the string token's raw bytes (no escapes) equal `literal`; no allocation.
    public func stringEquals(_ token: JSONToken, _ literal: StaticString) -> Bool {
        guard !token.hasEscapes else { return stringValue(token) == literal.description }
        let r = token.contentRange
        guard r.count == literal.utf8CodeUnitCount else { return false }
        let p = literal.utf8Start
        for k in 0..<r.count where bytes[r.lowerBound + k] != p[k] { return false }
        return true
    }

    /// An integer number token as Int64; nil for fractions, exponents or overflow.
    public func int64Value(_ token: JSONToken) -> Int64? {
        guard token.kind == .number, token.isInteger else { return nil }
        var i = token.range.lowerBound
        let negative = bytes[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        var v: Int64 = 0
        while i < token.range.upperBound {
            let d = Int64(bytes[i] &- UInt8(ascii: "0"))
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (s, o2) = negative ? m.subtractingReportingOverflow(d) : m.addingReportingOverflow(d)
            if o1 || o2 { return nil }
            v = s
            i += 1
        }
        return v
    }

    /// The raw bytes of a token (e.g. a number's literal text).
    public func text(_ token: JSONToken) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[token.range]), as: UTF8.self)
    }

    /// Decodes the escapes of already-validated string content.
    static func unescape(_ s: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(s.count)
        var i = 0
        while i < s.count {
            let b = s[i]
            guard b == UInt8(ascii: "\\") else {
                out.append(b)
                i += 1
                continue
            }
            let e = s[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4Unchecked(s, i)
                i += 4
                if scalar >= 0xD800 && scalar <= 0xDBFF {
                    let low = hex4Unchecked(s, i + 2)
                    i += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                appendUTF8(Unicode.Scalar(scalar) ?? "\u{FFFD}", to: &out)
            default: out.append(e)  // " \ /
            }
        }
        return out
    }

    private static func hex4Unchecked(_ s: UnsafeBufferPointer<UInt8>, _ i: Int) -> UInt32 {
        var v: UInt32 = 0
        for k in i..<(i + 4) { v = v << 4 | UInt32(hexValue(s[k]) ?? 0) }
        return v
    }
}

@inline(__always) func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

@inline(__always) public func hexValue(_ b: UInt8) -> UInt8? {
    switch b {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - UInt8(ascii: "A") + 10
    default: return nil
    }
}

func appendUTF8(_ scalar: Unicode.Scalar, to out: inout [UInt8]) {
    let v = scalar.value
    switch v {
    case 0..<0x80: out.append(UInt8(v))
    case 0x80..<0x800:
        out.append(0xC0 | UInt8(v >> 6)); out.append(0x80 | UInt8(v & 0x3F))
    case 0x800..<0x10000:
        out.append(0xE0 | UInt8(v >> 12)); out.append(0x80 | UInt8((v >> 6) & 0x3F))
        out.append(0x80 | UInt8(v & 0x3F))
    default:
        out.append(0xF0 | UInt8(v >> 18)); out.append(0x80 | UInt8((v >> 12) & 0x3F))
        out.append(0x80 | UInt8((v >> 6) & 0x3F)); out.append(0x80 | UInt8(v & 0x3F))
    }
}


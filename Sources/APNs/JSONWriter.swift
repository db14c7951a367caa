/// Appends JSON straight into a byte buffer (results, envelopes, dead-letter entries) without Foundation.
/// Commas are placed automatically; the caller is responsible for balanced begin/end calls.
public struct JSONWriter: Sendable {
    public var bytes: [UInt8]
    private var needsComma = false

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public mutating func beginObject() { separator(); bytes.append(UInt8(ascii: "{")); needsComma = false }
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma = true }
    public mutating func beginArray() { separator(); bytes.append(UInt8(ascii: "[")); needsComma = false }
    public mutating func endArray() { bytes.append(UInt8(ascii: "]")); needsComma = true }

    /// An object key; the next value call writes its value.
    public mutating func key(_ name: String) {
        separator()
        appendJSONString(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    public mutating func string(_ value: String) { separator(); appendJSONString(value, to: &bytes); needsComma = true }
    public mutating func int(_ value: Int64) { separator(); appendDecimal(value, to: &bytes); needsComma = true }
    public mutating func int(_ value: Int) { int(Int64(value)) }
    public mutating func bool(_ value: Bool) { separator(); bytes.append(contentsOf: value ? trueBytes : falseBytes); needsComma = true }
    public mutating func null() { separator(); bytes.append(contentsOf: nullBytes); needsComma = true }

    /// Bytes that are already valid JSON (e.g. a job's payload), copied verbatim.
    public mutating func raw(_ json: [UInt8]) { separator(); bytes.append(contentsOf: json); needsComma = true }
    public mutating func raw(_ json: UnsafeBufferPointer<UInt8>) { separator(); bytes.append(contentsOf: json); needsComma = true }

    // Key/value conveniences; the optional forms write nothing for nil.
    public mutating func field(_ name: String, _ value: String) { key(name); string(value) }
    public mutating func field(_ name: String, _ value: String?) { if let value { key(name); string(value) } }
    public mutating func field(_ name: String, _ value: Int64) { key(name); int(value) }
    public mutating func field(_ name: String, _ value: Int64?) { if let value { key(name); int(value) } }
    public mutating func field(_ name: String, _ value: Int) { key(name); int(Int64(value)) }
    public mutating func field(_ name: String, _ value: Int?) { if let value { key(name); int(Int64(value)) } }
    public mutating func field(_ name: String, _ value: Bool) { key(name); bool(value) }
    public mutating func rawField(_ name: String, _ json: [UInt8]) { key(name); raw(json) }

    @inline(__always) private mutating func separator() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }
}

private let trueBytes: [UInt8] = Array("true".utf8)
private let falseBytes: [UInt8] = Array("false".utf8)
private let nullBytes: [UInt8] = Array("null".utf8)
private let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

/// Appends `s` as a quoted JSON string: `"` `\` and control characters escaped, everything else as UTF-8.
public func appendJSONString(_ s: String, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    var s = s
    s.withUTF8 { utf8 in
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
                out.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                out.append(hexDigits[Int(b >> 4)])
                out.append(hexDigits[Int(b & 0xF)])
            }
        }
        if runStart < utf8.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...])) }
    }
    out.append(UInt8(ascii: "\""))
}

/// `s` as a quoted JSON string literal.
public func jsonEscaped(_ s: String) -> String {
    var out: [UInt8] = []
    out.reserveCapacity(s.utf8.count + 2)
    appendJSONString(s, to: &out)
    return String(decoding: out, as: UTF8.self)
}

/// Appends the decimal digits of `value` (no allocation beyond the buffer).
public func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
    if value < 0 { out.append(UInt8(ascii: "-")) }
    var magnitude = value.magnitude
    if magnitude == 0 { out.append(UInt8(ascii: "0")); return }
    var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    var n = 0
    withUnsafeMutableBytes(of: &digits) { d in
        while magnitude > 0 {
            d[19 - n] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
            n += 1
        }
        // Byte by byte: appending a slice of a raw buffer goes through a slow generic path.
        for k in (20 - n)..<20 { out.append(d[k]) }
    }
}

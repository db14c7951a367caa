import Basics

/// Appends a small JSON object straight into a byte buffer without Foundation (the provider token's header and
/// claims). Commas are placed automatically; the caller is responsible for balanced begin/end calls.
public struct JSONWriter: Sendable {
    public var bytes: [UInt8]
    private var needsComma = false

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public mutating func beginObject() { separator(); bytes.append(UInt8(ascii: "{")); needsComma = false }
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma = true }

    /// An object key; the next value call writes its value.
    public mutating func key(_ name: String) {
        separator()
        appendJSONString(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    public mutating func string(_ value: String) { separator(); appendJSONString(value, to: &bytes); needsComma = true }
    public mutating func int(_ value: Int64) { separator(); appendDecimal(value, to: &bytes); needsComma = true }

    public mutating func field(_ name: String, _ value: String) { key(name); string(value) }
    public mutating func field(_ name: String, _ value: Int64) { key(name); int(value) }

    @inline(__always) private mutating func separator() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }
}

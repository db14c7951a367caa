import Basics

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

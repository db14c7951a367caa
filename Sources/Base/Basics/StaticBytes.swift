/// Appends the bytes of a string literal: one copy of its static storage, where appending a `String`'s UTF-8
/// view costs a hundred or more instructions a call (small answers are made of many such pieces).
@inlinable public func appendStatic(_ text: StaticString, to out: inout [UInt8]) {
    out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
}

/// Appends a `String`'s UTF-8 bytes in one copy.
@inlinable public func appendUTF8(_ text: String, to out: inout [UInt8]) {
    var text = text
    text.withUTF8 { out.append(contentsOf: $0) }
}

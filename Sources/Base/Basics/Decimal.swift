/// The one decimal writer for byte buffers (JSON numbers, RESP lengths and integers): no String, no allocation
/// beyond the buffer's own growth.

/// Appends the decimal digits of `value`, with a leading `-` when negative.
public func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
    if value >= 0 && value < 10 {
        out.append(UInt8(ascii: "0") + UInt8(value))
        return
    }
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { scratch in
        let count = writeDecimal(value, to: scratch.baseAddress!)
        out.append(contentsOf: UnsafeBufferPointer(start: scratch.baseAddress, count: count))
    }
}

/// Writes the decimal digits of `value` (a leading `-` when negative) at `out`, which has room for 20 bytes
/// (Int64.min's sign and 19 digits), and returns how many it wrote: for callers that fill a buffer in place.
@inlinable public func writeDecimal(_ value: Int64, to out: UnsafeMutablePointer<UInt8>) -> Int {
    writeDecimal(value, length: decimalLength(value), to: out)
}

/// The same, for a caller that already has `decimalLength(value)` (it wrote a length prefix first).
@inlinable public func writeDecimal(_ value: Int64, length: Int, to out: UnsafeMutablePointer<UInt8>) -> Int {
    var magnitude = value.magnitude
    var k = length
    repeat {
        k -= 1
        out[k] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
        magnitude /= 10
    } while magnitude > 0
    if value < 0 { out[0] = UInt8(ascii: "-") }
    return length
}

public func appendDecimal(_ value: Int, to out: inout [UInt8]) { appendDecimal(Int64(value), to: &out) }

/// How many bytes `appendDecimal(value)` writes (sign included), for length prefixes written before the digits.
@inlinable public func decimalLength(_ value: Int64) -> Int {
    var rest = value.magnitude
    var length = value < 0 ? 2 : 1
    while rest >= 10 {
        rest /= 10
        length += 1
    }
    return length
}

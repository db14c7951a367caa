/// The one decimal writer for byte buffers (JSON numbers, RESP lengths and integers): no String, no allocation
/// beyond the buffer's own growth.

/// Appends the decimal digits of `value`, with a leading `-` when negative.
public func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
    if value < 0 { out.append(UInt8(ascii: "-")) }
    var magnitude = value.magnitude
    if magnitude < 10 {
        out.append(UInt8(ascii: "0") + UInt8(magnitude))
        return
    }
    // 20 digits hold UInt64.max (Int64.min's magnitude needs 19).
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
    withUnsafeMutableBytes(of: &digits) { d in
        var n = 0
        while magnitude > 0 {
            d[23 - n] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
            n += 1
        }
        // Byte by byte: appending a slice of a raw buffer goes through a slow generic path.
        for k in (24 - n)..<24 { out.append(d[k]) }
    }
}

public func appendDecimal(_ value: Int, to out: inout [UInt8]) { appendDecimal(Int64(value), to: &out) }

/// How many bytes `appendDecimal(value)` writes (sign included), for length prefixes written before the digits.
public func decimalLength(_ value: Int64) -> Int {
    var rest = value.magnitude
    var length = value < 0 ? 2 : 1
    while rest >= 10 {
        rest /= 10
        length += 1
    }
    return length
}

/// Writes commands as RESP arrays of bulk strings straight into a byte buffer (no C formatter, no copies of
/// the arguments beyond the one append).
enum RESPEncoder {
    static func append(_ args: [[UInt8]], to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "*"))
        appendDecimal(args.count, to: &buffer)
        for arg in args {
            buffer.append(UInt8(ascii: "$"))
            appendDecimal(arg.count, to: &buffer)
            buffer.append(contentsOf: arg)
            buffer.append(13)
            buffer.append(10)
        }
    }

    static func encode(_ args: [[UInt8]]) -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(args.reduce(16) { $0 + $1.count + 16 })
        append(args, to: &buffer)
        return buffer
    }

    private static func appendDecimal(_ value: Int, to buffer: inout [UInt8]) {
        if value < 10 {
            buffer.append(UInt8(48 + value))
        } else {
            var digits: [UInt8] = []
            var rest = value
            while rest > 0 {
                digits.append(UInt8(48 + rest % 10))
                rest /= 10
            }
            buffer.append(contentsOf: digits.reversed())
        }
        buffer.append(13)
        buffer.append(10)
    }
}

extension Array where Element == UInt8 {
    @inline(__always) init(_ text: String) { self = Array(text.utf8) }
}

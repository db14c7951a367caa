import Basics

/// Writes commands as RESP arrays of bulk strings straight into a byte buffer (no C formatter, no copies of
/// the arguments beyond the one append).
enum RESPEncoder {
    static func append(_ args: [[UInt8]], to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "*"))
        appendDecimal(args.count, to: &buffer)
        buffer.append(13)
        buffer.append(10)
        for arg in args {
            buffer.append(UInt8(ascii: "$"))
            appendDecimal(arg.count, to: &buffer)
            buffer.append(13)
            buffer.append(10)
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
}

extension Array where Element == UInt8 {
    @inline(__always) init(_ text: String) { self = Array(text.utf8) }
}

import Basics

/// Command arguments encoded as RESP bulk strings straight into one buffer as they are appended.
/// The completion script takes ~35 arguments per job; building them as one array per argument cost more than
/// everything else the worker does per job, so the hot path writes them here instead.
public struct RESPArguments: Sendable {
    public private(set) var bytes: [UInt8] = []
    public private(set) var count = 0

    public init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    public mutating func append(_ value: [UInt8]) {
        header(value.count)
        bytes.append(contentsOf: value)
        bytes.append(13)
        bytes.append(10)
    }

    public mutating func append(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            header(utf8.count)
            bytes.append(contentsOf: utf8)
        }
        bytes.append(13)
        bytes.append(10)
    }

    public mutating func append(_ value: Int64) {
        header(decimalLength(value))
        appendDecimal(value, to: &bytes)
        bytes.append(13)
        bytes.append(10)
    }

    public mutating func append(_ value: Int) { append(Int64(value)) }

    /// Appends the arguments of `other` after these.
    public mutating func append(contentsOf other: RESPArguments) {
        bytes.append(contentsOf: other.bytes)
        count += other.count
    }

    private mutating func header(_ length: Int) {
        count += 1
        bytes.append(UInt8(ascii: "$"))
        if length < 10 {
            bytes.append(UInt8(48 + length))
        } else if length < 100 {
            bytes.append(UInt8(48 + length / 10))
            bytes.append(UInt8(48 + length % 10))
        } else {
            appendDecimal(length, to: &bytes)
        }
        bytes.append(13)
        bytes.append(10)
    }

    /// A whole command: `*N` then `prefix` arguments, then these.
    func command(prefix: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 64 + prefix.reduce(0) { $0 + $1.count + 16 })
        out.append(UInt8(ascii: "*"))
        appendDecimal(prefix.count + count, to: &out)
        out.append(13)
        out.append(10)
        for argument in prefix {
            out.append(UInt8(ascii: "$"))
            appendDecimal(argument.count, to: &out)
            out.append(13)
            out.append(10)
            out.append(contentsOf: argument)
            out.append(13)
            out.append(10)
        }
        out.append(contentsOf: bytes)
        return out
    }

    /// The arguments one by one again (for the blocking client's slow path and tests).
    public var decoded: [[UInt8]] {
        var result: [[UInt8]] = []
        result.reserveCapacity(count)
        var index = 0
        while index < bytes.count {
            index += 1  // '$'
            var length = 0
            while bytes[index] != 13 {
                length = length * 10 + Int(bytes[index] - 48)
                index += 1
            }
            index += 2
            result.append(Array(bytes[index..<(index + length)]))
            index += length + 2
        }
        return result
    }
}

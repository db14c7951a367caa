import Basics

/// Command arguments encoded as RESP bulk strings straight into one buffer as they are appended.
/// The completion script takes ~35 arguments per job; building them as one array per argument cost more than
/// everything else the worker does per job, so the hot path writes them here instead.
///
/// The appends are `@inlinable`: the queue (another module) calls them ~35 times per job, and a call across the
/// module boundary each time measured +0.8 % instructions on the queue bench.
public struct RESPArguments: Sendable {
    /// The arguments encoded so far (`$<length>\r\n<bytes>\r\n` each).
    public var bytes: [UInt8] { encoded }
    /// How many arguments `bytes` holds.
    public var count: Int { arguments }
    @usableFromInline var encoded: [UInt8] = []
    @usableFromInline var arguments = 0

    public init(capacity: Int = 0) { encoded.reserveCapacity(capacity) }

    @inlinable public mutating func append(_ value: [UInt8]) {
        header(value.count)
        encoded.append(contentsOf: value)
        encoded.append(13)
        encoded.append(10)
    }

    @inlinable public mutating func append(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            header(utf8.count)
            encoded.append(contentsOf: utf8)
        }
        encoded.append(13)
        encoded.append(10)
    }

    @inlinable public mutating func append(_ value: Int64) {
        header(decimalLength(value))
        appendDecimal(value, to: &encoded)
        encoded.append(13)
        encoded.append(10)
    }

    @inlinable public mutating func append(_ value: Int) { append(Int64(value)) }

    /// Appends the arguments of `other` after these.
    public mutating func append(contentsOf other: RESPArguments) {
        encoded.append(contentsOf: other.encoded)
        arguments += other.arguments
    }

    @inlinable mutating func header(_ length: Int) {
        arguments += 1
        encoded.append(UInt8(ascii: "$"))
        if length < 10 {
            encoded.append(UInt8(48 + length))
        } else if length < 100 {
            encoded.append(UInt8(48 + length / 10))
            encoded.append(UInt8(48 + length % 10))
        } else {
            appendDecimal(length, to: &encoded)
        }
        encoded.append(13)
        encoded.append(10)
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

import Basics

/// Command arguments encoded as RESP bulk strings straight into one buffer as they are appended.
/// The completion script takes ~35 arguments per job; building them as one array per argument cost more than
/// everything else the worker does per job, so the hot path writes them here instead.
///
/// The appends are `@inlinable`: the queue (another module) calls them ~35 times per job, and a call across the
/// module boundary each time measured +0.8 % instructions on the queue bench.
public struct RESPArguments: Sendable {
    /// The arguments encoded so far (`$<length>\r\n<bytes>\r\n` each).
    public var bytes: [UInt8] { storage.withBytes { Array($0) } }
    /// How many arguments `bytes` holds.
    public var count: Int { arguments }
    @usableFromInline var storage: ByteStorage
    @usableFromInline var arguments = 0

    public init(capacity: Int = 0) { storage = ByteStorage(capacity: capacity) }

    @inlinable public mutating func append(_ value: [UInt8]) { value.withUnsafeBufferPointer { appendBulk($0) } }

    @inlinable public mutating func append(_ value: String) {
        var value = value
        value.withUTF8 { appendBulk($0) }
    }

    @inlinable public mutating func append(_ value: Int64) {
        let length = decimalLength(value)
        let p = reserve(length + 26)
        var n = Self.writeHeader(length, to: p)
        n += writeDecimal(value, length: length, to: p + n)
        p[n] = 13
        p[n + 1] = 10
        storage.count += n + 2
        arguments += 1
    }

    @inlinable public mutating func append(_ value: Int) { append(Int64(value)) }

    /// `$<length>\r\n<bytes>\r\n` written in place after one capacity check: an Array's appends cost ~270
    /// instructions per argument in uniqueness and capacity checks, and a result entry has ~26 arguments.
    @inlinable @inline(__always) mutating func appendBulk(_ value: UnsafeBufferPointer<UInt8>) {
        let length = value.count
        let p = reserve(length + 26)
        var n = Self.writeHeader(length, to: p)
        if let base = value.baseAddress { (p + n).initialize(from: base, count: length) }
        n += length
        p[n] = 13
        p[n + 1] = 10
        storage.count += n + 2
        arguments += 1
    }

    /// Where the next `extra` bytes go: the storage made unique (a copy of these arguments keeps its own) and
    /// grown if they do not fit.
    @inlinable @inline(__always) mutating func reserve(_ extra: Int) -> UnsafeMutablePointer<UInt8> {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy(extra: extra) }
        return storage.reserve(extra)
    }

    /// `$<length>\r\n` at `p` (room for 24 bytes); returns its size.
    @inlinable @inline(__always) static func writeHeader(_ length: Int, to p: UnsafeMutablePointer<UInt8>) -> Int {
        p[0] = UInt8(ascii: "$")
        var digits = 1
        if length < 10 {
            p[1] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: length)
        } else if length < 100 {
            p[1] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: length / 10)
            p[2] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: length % 10)
            digits = 2
        } else {
            digits = writeDecimal(Int64(length), to: p + 1)
        }
        p[1 + digits] = 13
        p[2 + digits] = 10
        return digits + 3
    }

    /// Appends the arguments of `other` after these.
    public mutating func append(contentsOf other: RESPArguments) {
        other.storage.withBytes { source in
            let p = reserve(source.count)
            if let base = source.baseAddress { p.initialize(from: base, count: source.count) }
            storage.count += source.count
        }
        arguments += other.arguments
    }

    /// A whole command: `*N` then `prefix` arguments, then these.
    func command(prefix: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(storage.count + 64 + prefix.reduce(0) { $0 + $1.count + 16 })
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
        storage.withBytes { out.append(contentsOf: $0) }
        return out
    }

    /// The arguments one by one again (for the blocking client's slow path and tests).
    public var decoded: [[UInt8]] {
        let bytes = self.bytes
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

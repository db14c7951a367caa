/// A strict JSON syntax check that answers "is this one JSON object?" without building it:
/// JSONSerialization per request would make the simulator the bottleneck of every benchmark.
struct JSONShape {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0

    static func isObject(_ data: [UInt8]) -> Bool {
        data.withUnsafeBufferPointer { buffer in
            var parser = JSONShape(bytes: buffer)
            parser.skipSpace()
            guard parser.peek == UInt8(ascii: "{"), parser.value() else { return false }
            parser.skipSpace()
            return parser.index == buffer.count
        }
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// The byte ranges of a top-level object's member values, by key (as written, escapes kept), so a caller can
    /// pass one member on byte for byte (the FCM simulator records `message` as received). nil: not one object.
    static func memberValueRanges(_ data: [UInt8]) -> [String: Range<Int>]? {
        data.withUnsafeBufferPointer { buffer -> [String: Range<Int>]? in
            var parser = JSONShape(bytes: buffer)
            var ranges: [String: Range<Int>] = [:]
            parser.skipSpace()
            guard parser.peek == UInt8(ascii: "{") else { return nil }
            parser.index += 1
            parser.depth = 1
            parser.skipSpace()
            if parser.peek == UInt8(ascii: "}") {
                parser.index += 1
            } else {
                while true {
                    parser.skipSpace()
                    let keyStart = parser.index
                    guard parser.peek == UInt8(ascii: "\""), parser.string() else { return nil }
                    let key = String(decoding: UnsafeBufferPointer(rebasing: buffer[(keyStart + 1)..<(parser.index - 1)]), as: UTF8.self)
                    parser.skipSpace()
                    guard parser.peek == UInt8(ascii: ":") else { return nil }
                    parser.index += 1
                    parser.skipSpace()
                    let valueStart = parser.index
                    guard parser.value() else { return nil }
                    ranges[key] = valueStart..<parser.index
                    parser.skipSpace()
                    if parser.peek == UInt8(ascii: ",") { parser.index += 1; continue }
                    if parser.peek == UInt8(ascii: "}") { parser.index += 1; break }
                    return nil
                }
            }
            parser.skipSpace()
            return parser.index == buffer.count ? ranges : nil
        }
    }


    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0a, 0x0d: index += 1
            default: return
            }
        }
    }

    private mutating func value() -> Bool {
        skipSpace()
        guard let c = peek else { return false }
        switch c {
        case UInt8(ascii: "{"): return object()
        case UInt8(ascii: "["): return array()
        case UInt8(ascii: "\""): return string()
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        default: return number()
        }
    }

    private mutating func object() -> Bool {
        depth += 1
        guard depth < 64 else { return false }
        index += 1
        skipSpace()
        if peek == UInt8(ascii: "}") { index += 1; depth -= 1; return true }
        while true {
            skipSpace()
            guard peek == UInt8(ascii: "\""), string() else { return false }
            skipSpace()
            guard peek == UInt8(ascii: ":") else { return false }
            index += 1
            guard value() else { return false }
            skipSpace()
            if peek == UInt8(ascii: ",") { index += 1; continue }
            if peek == UInt8(ascii: "}") { index += 1; depth -= 1; return true }
            return false
        }
    }

    private mutating func array() -> Bool {
        depth += 1
        guard depth < 64 else { return false }
        index += 1
        skipSpace()
        if peek == UInt8(ascii: "]") { index += 1; depth -= 1; return true }
        while true {
            guard value() else { return false }
            skipSpace()
            if peek == UInt8(ascii: ",") { index += 1; continue }
            if peek == UInt8(ascii: "]") { index += 1; depth -= 1; return true }
            return false
        }
    }

    private mutating func string() -> Bool {
        index += 1
        while index < bytes.count {
            // Fast path: eight plain characters at a time (no quote, backslash or control byte in the word).
            let base = UnsafeRawPointer(bytes.baseAddress!)
            while index + 8 <= bytes.count {
                let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                if Self.hasSpecialByte(word) { break }
                index += 8
            }
            guard index < bytes.count else { return false }
            // Then byte by byte up to the special one.
            var c = bytes[index]
            while c >= 0x20 && c != UInt8(ascii: "\"") && c != UInt8(ascii: "\\") {
                index += 1
                guard index < bytes.count else { return false }
                c = bytes[index]
            }
            if c == UInt8(ascii: "\"") { index += 1; return true }
            if c < 0x20 { return false }
            if c == UInt8(ascii: "\\") {
                index += 1
                guard let e = peek else { return false }
                if e == UInt8(ascii: "u") {
                    guard index + 4 < bytes.count else { return false }
                    for offset in 1...4 where !isHex(bytes[index + offset]) { return false }
                    index += 5
                    continue
                }
                guard "\"\\/bfnrt".utf8.contains(e) else { return false }
            }
            index += 1
        }
        return false
    }

    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// SWAR test: does any byte of `word` equal '"' or '\\', or lie below 0x20?
    @inline(__always)
    private static func hasSpecialByte(_ word: UInt64) -> Bool {
        func hasZero(_ v: UInt64) -> Bool { (v &- ones) & ~v & highs != 0 }
        let below = (word &- ones &* 0x20) & ~word & highs
        return below != 0 || hasZero(word ^ (ones &* 0x22)) || hasZero(word ^ (ones &* 0x5c))
    }

    private func isHex(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: count)
        for offset in 0..<count where bytes[index + offset] != expected[offset] { return false }
        index += count
        return true
    }

    private mutating func number() -> Bool {
        let start = index
        if peek == UInt8(ascii: "-") { index += 1 }
        guard let first = peek, first >= 0x30, first <= 0x39 else { return false }
        if first == 0x30 { index += 1 } else { digits() }
        if peek == UInt8(ascii: ".") {
            index += 1
            guard let d = peek, d >= 0x30, d <= 0x39 else { return false }
            digits()
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            index += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
            guard let d = peek, d >= 0x30, d <= 0x39 else { return false }
            digits()
        }
        return index > start
    }

    private mutating func digits() {
        while let c = peek, c >= 0x30, c <= 0x39 { index += 1 }
    }
}

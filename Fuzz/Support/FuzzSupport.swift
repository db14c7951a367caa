/// Shared glue for the libFuzzer targets in Fuzz/Targets: each target's `LLVMFuzzerTestOneInput` calls
/// `fuzzInput` and states its invariants with `fuzzCheck`, so a broken invariant is a crash libFuzzer records.

#if canImport(Glibc)
import Glibc
#endif

/// The input as an Array (libFuzzer may pass a null pointer with size 0).
public func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// Aborts (a crash libFuzzer saves as an artifact) when an invariant does not hold, printing why first.
public func fuzzCheck(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
    if condition { return }
    let text = "fuzz invariant failed at \(file):\(line): \(message())\n"
    var bytes = Array(text.utf8)
    _ = write(2, &bytes, bytes.count)
    abort()
}

/// A small deterministic generator seeded from the input, for choices (such as chunk boundaries) that must
/// replay exactly when libFuzzer re-runs a saved crash.
public struct FuzzRandom {
    private var state: UInt64

    public init(seed bytes: [UInt8]) {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        state = h | 1
    }

    /// xorshift64*: plenty for picking split points.
    public mutating func next(below bound: Int) -> Int {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return Int((state &* 0x2545_f491_4f6c_dd1d) % UInt64(max(bound, 1)))
    }

    /// `bytes` cut into consecutive non-empty pieces at random points (one piece for short input).
    public mutating func chunks(of bytes: [UInt8]) -> [[UInt8]] {
        var pieces: [[UInt8]] = []
        var start = 0
        while start < bytes.count {
            let length = 1 + next(below: min(bytes.count - start, 16))
            pieces.append(Array(bytes[start..<(start + length)]))
            start += length
        }
        return pieces
    }
}

/// True when `needle` occurs as a contiguous run of `haystack`.
public func fuzzContains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    if needle.isEmpty { return true }
    guard haystack.count >= needle.count else { return false }
    for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
        if haystack[start..<(start + needle.count)].elementsEqual(needle) { return true }
    }
    return false
}

/// Growable bytes in one raw allocation, written in place by their owner after one capacity check: an Array's
/// appends check uniqueness and capacity on every call, a few hundred instructions per argument or header on
/// the worker's hot paths (`RESPArguments`, `HeaderBlock`). Grown by doubling. A class, so sharing is its
/// owner's choice: `RESPArguments` copies on write, a connection's `HeaderBlock` keeps one.
/// @unchecked: written only by its one owner (`RESPArguments` copies a shared one first; a `HeaderBlock` stays on its loop).
public final class ByteStorage: @unchecked Sendable {
    public private(set) var base: UnsafeMutablePointer<UInt8>
    /// Bytes in use from `base`; the owner advances it past what it wrote after `reserve`.
    public var count = 0
    public private(set) var capacity: Int

    public init(capacity: Int) {
        self.capacity = Swift.max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// Where the next `extra` bytes go, grown first if they do not fit.
    @inlinable @inline(__always) public func reserve(_ extra: Int) -> UnsafeMutablePointer<UInt8> {
        if capacity - count < extra { grow(toFit: extra) }
        return base + count
    }

    public func grow(toFit extra: Int) {
        let bigger = Swift.max(capacity * 2, count + extra)
        let fresh = UnsafeMutablePointer<UInt8>.allocate(capacity: bigger)
        fresh.initialize(from: base, count: count)
        base.deallocate()
        base = fresh
        capacity = bigger
    }

    /// A copy of the bytes in use with room for `extra` more.
    public func copy(extra: Int) -> ByteStorage {
        let copy = ByteStorage(capacity: count + Swift.max(extra, count))
        copy.base.initialize(from: base, count: count)
        copy.count = count
        return copy
    }

    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R { body(UnsafeBufferPointer(start: base, count: count)) }
}

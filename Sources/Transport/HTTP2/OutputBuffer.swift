/// Frames nghttp2 produced that TLS has not taken yet, and when the next flush is due. Kept out of the
/// connection's phase so that the buffer is never copied when the phase changes.
struct OutputBuffer {
    /// One `SSL_write` batch: refilled from nghttp2 only once the previous batch is fully written.
    private(set) var bytes: [UInt8] = []
    private(set) var offset = 0
    /// Something may be waiting to go out: flush at the end of this entry.
    var needsFlush = false
    /// A zero-delay timer will run an entry (and so a flush) after this loop turn.
    var flushScheduled = false

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    var isDrained: Bool { offset >= bytes.count }

    /// Starts a new batch (only when drained, so nothing unwritten is lost).
    mutating func startBatch() {
        bytes.removeAll(keepingCapacity: true)
        offset = 0
    }

    mutating func append(_ chunk: UnsafeBufferPointer<UInt8>) { bytes.append(contentsOf: chunk) }

    mutating func wrote(_ count: Int) { offset += count }

    /// Drops whatever is left and the memory: the connection closed.
    mutating func release() {
        bytes = []
        offset = 0
    }
}

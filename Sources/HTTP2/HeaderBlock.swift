import CNghttp2

/// Reusable scratch for one request's header list: the bytes of every name and value in one buffer, and
/// where each lies, turned into `nghttp2_nv`s for the call. One per connection, kept across requests so none
/// allocates. The bytes are a raw buffer written with one capacity check per header: an Array's appends (two
/// per header, and a byte) cost ~400 instructions per header, eight headers a request (scripts/callgrind-worker).
final class HeaderBlock {
    struct Span {
        var nameStart: Int
        var nameLength: Int
        var valueStart: Int
        var valueLength: Int
        var flags: UInt8
    }

    private var base: UnsafeMutablePointer<UInt8>
    private var count = 0
    private var capacity: Int
    private var spans: [Span] = []
    private var nameValues: [nghttp2_nv] = []

    init(capacity: Int = 1024) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
        spans.reserveCapacity(16)
        nameValues.reserveCapacity(16)
    }

    deinit { base.deallocate() }

    func reset() {
        count = 0
        spans.removeAll(keepingCapacity: true)
    }

    func add(_ name: String, _ value: String, flags: UInt8) {
        // Through the contiguous UTF-8 buffers: appending a String.UTF8View goes element by element.
        var name = name
        var value = value
        name.withUTF8 { n in
            value.withUTF8 { v in
                // A zero after each value keeps every pointer inside the buffer even when a header is empty.
                let needed = n.count + v.count + 1
                if capacity - count < needed { grow(toFit: needed) }
                let nameStart = count
                if let source = n.baseAddress { (base + count).initialize(from: source, count: n.count) }
                count += n.count
                let valueStart = count
                if let source = v.baseAddress { (base + count).initialize(from: source, count: v.count) }
                count += v.count
                base[count] = 0
                count += 1
                spans.append(Span(nameStart: nameStart, nameLength: n.count, valueStart: valueStart, valueLength: v.count, flags: flags))
            }
        }
    }

    private func grow(toFit needed: Int) {
        let bigger = max(capacity * 2, count + needed)
        let fresh = UnsafeMutablePointer<UInt8>.allocate(capacity: bigger)
        fresh.initialize(from: base, count: count)
        base.deallocate()
        base = fresh
        capacity = bigger
    }

    /// The headers as nghttp2 takes them, valid only inside `body` (nghttp2 copies what it keeps).
    func withNameValues<R>(_ body: (UnsafeBufferPointer<nghttp2_nv>) -> R) -> R {
        nameValues.removeAll(keepingCapacity: true)
        for span in spans {
            nameValues.append(nghttp2_nv(name: base + span.nameStart, value: base + span.valueStart,
                                         namelen: span.nameLength, valuelen: span.valueLength, flags: span.flags))
        }
        return nameValues.withUnsafeBufferPointer(body)
    }
}

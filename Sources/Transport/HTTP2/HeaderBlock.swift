import Basics
import CNghttp2

/// Reusable scratch for one request's header list: the bytes of every name and value in one buffer, and
/// where each lies, turned into `nghttp2_nv`s for the call. One per connection, kept across requests so none
/// allocates. The bytes are written in place with one capacity check per header (`ByteStorage`): an Array's
/// appends (two per header, and a byte) cost ~400 instructions per header, eight headers a request.
final class HeaderBlock {
    struct Span {
        var nameStart: Int
        var nameLength: Int
        var valueStart: Int
        var valueLength: Int
        var flags: UInt8
    }

    private let bytes: ByteStorage
    private var spans: [Span] = []
    private var nameValues: [nghttp2_nv] = []

    init(capacity: Int = 1024) {
        bytes = ByteStorage(capacity: capacity)
        spans.reserveCapacity(16)
        nameValues.reserveCapacity(16)
    }

    func reset() {
        bytes.count = 0
        spans.removeAll(keepingCapacity: true)
    }

    func add(_ name: String, _ value: String, flags: UInt8) {
        // Through the contiguous UTF-8 buffers: appending a String.UTF8View goes element by element.
        var name = name
        var value = value
        name.withUTF8 { n in
            value.withUTF8 { v in
                // A zero after each value keeps every pointer inside the buffer even when a header is empty.
                let p = bytes.reserve(n.count + v.count + 1)
                if let source = n.baseAddress { p.initialize(from: source, count: n.count) }
                if let source = v.baseAddress { (p + n.count).initialize(from: source, count: v.count) }
                p[n.count + v.count] = 0
                let nameStart = bytes.count
                bytes.count += n.count + v.count + 1
                spans.append(Span(nameStart: nameStart, nameLength: n.count, valueStart: nameStart + n.count, valueLength: v.count, flags: flags))
            }
        }
    }

    /// The headers as nghttp2 takes them, valid only inside `body` (nghttp2 copies what it keeps).
    func withNameValues<R>(_ body: (UnsafeBufferPointer<nghttp2_nv>) -> R) -> R {
        nameValues.removeAll(keepingCapacity: true)
        let base = bytes.base
        for span in spans {
            nameValues.append(nghttp2_nv(name: base + span.nameStart, value: base + span.valueStart,
                                         namelen: span.nameLength, valuelen: span.valueLength, flags: span.flags))
        }
        return nameValues.withUnsafeBufferPointer(body)
    }
}

import CNghttp2

/// Reusable scratch for one request's header list: the bytes of every name and value in one buffer, and
/// where each lies, turned into `nghttp2_nv`s for the call. Kept across requests so none allocates.
struct HeaderBlock {
    struct Span {
        var nameStart: Int
        var nameLength: Int
        var valueStart: Int
        var valueLength: Int
        var flags: UInt8
    }

    private var bytes: [UInt8] = []
    private var spans: [Span] = []
    private var nameValues: [nghttp2_nv] = []

    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        spans.removeAll(keepingCapacity: true)
    }

    mutating func add(_ name: String, _ value: String, flags: UInt8) {
        // Through the contiguous UTF-8 buffers: appending a String.UTF8View goes element by element.
        var name = name
        var value = value
        let nameStart = bytes.count
        name.withUTF8 { bytes.append(contentsOf: $0) }
        let valueStart = bytes.count
        value.withUTF8 { bytes.append(contentsOf: $0) }
        bytes.append(0)  // keeps the base address valid even when every header is empty
        spans.append(Span(nameStart: nameStart, nameLength: valueStart - nameStart, valueStart: valueStart,
                          valueLength: bytes.count - 1 - valueStart, flags: flags))
    }

    /// The headers as nghttp2 takes them, valid only inside `body` (nghttp2 copies what it keeps).
    mutating func withNameValues<R>(_ body: (UnsafeBufferPointer<nghttp2_nv>) -> R) -> R {
        nameValues.removeAll(keepingCapacity: true)
        return bytes.withUnsafeMutableBufferPointer { storage in
            let base = storage.baseAddress!
            for span in spans {
                nameValues.append(nghttp2_nv(name: base + span.nameStart, value: base + span.valueStart,
                                             namelen: span.nameLength, valuelen: span.valueLength, flags: span.flags))
            }
            return nameValues.withUnsafeBufferPointer(body)
        }
    }
}

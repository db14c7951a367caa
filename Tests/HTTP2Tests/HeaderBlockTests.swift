import CNghttp2
import Testing
@testable import HTTP2

/// The header list handed to nghttp2: every name and value byte for byte with its flags, across the buffer's
/// growth, for empty and non-ASCII headers, and again after a reset.
@Suite struct HeaderBlockTests {
    static func read(_ block: HeaderBlock) -> [(String, String, UInt8)] {
        block.withNameValues { nva in
            nva.map { nv in
                (String(decoding: UnsafeBufferPointer(start: nv.name, count: nv.namelen), as: UTF8.self),
                 String(decoding: UnsafeBufferPointer(start: nv.value, count: nv.valuelen), as: UTF8.self), nv.flags)
            }
        }
    }

    @Test func everyHeaderReachesNghttp2ExactlyAcrossGrowthAndResets() {
        let block = HeaderBlock(capacity: 8)
        let noIndex = UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue)
        let headers: [(String, String, UInt8)] = [
            (":method", "POST", 0), (":path", "/3/device/" + String(repeating: "ab", count: 32), noIndex), ("empty", "", 0),
            ("", "nameless", 0), ("authorization", "bearer " + String(repeating: "J", count: 300), noIndex), ("x-é", "ünï", 0),
        ]
        for round in 0..<3 {
            block.reset()
            let these = Array(headers.dropFirst(round))
            for (name, value, flags) in these { block.add(name, value, flags: flags) }
            let got = Self.read(block)
            #expect(got.count == these.count)
            for (a, b) in zip(got, these) { #expect(a.0 == b.0 && a.1 == b.1 && a.2 == b.2, "\(b.0)") }
        }
    }
}

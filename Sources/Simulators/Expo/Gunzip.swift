import CZlib

/// Inflates a gzip body (Expo's SDKs send large requests with `content-encoding: gzip`), at most `limit` bytes out;
/// nil for bytes that are not a whole gzip stream or inflate past the limit.
enum Gunzip {
    static func inflate(_ bytes: [UInt8], limit: Int) -> [UInt8]? {
        var stream = z_stream()
        guard czlib_inflate_init_gzip(&stream) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        var input = bytes
        return input.withUnsafeMutableBufferPointer { source -> [UInt8]? in
            stream.next_in = source.baseAddress
            stream.avail_in = uInt(source.count)
            while true {
                let (status, produced) = chunk.withUnsafeMutableBufferPointer { target -> (Int32, Int) in
                    stream.next_out = target.baseAddress
                    stream.avail_out = uInt(target.count)
                    let status = CZlib.inflate(&stream, Z_NO_FLUSH)
                    return (status, target.count - Int(stream.avail_out))
                }
                out.append(contentsOf: chunk[0..<produced])
                if out.count > limit { return nil }
                if status == Z_STREAM_END { return out }
                guard status == Z_OK, produced > 0 || stream.avail_in > 0 else { return nil }
            }
        }
    }

    /// gzip's magic bytes.
    static func isGzip(_ bytes: [UInt8]) -> Bool { bytes.count >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b }
}

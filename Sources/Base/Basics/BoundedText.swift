/// Caps text that comes from outside (an APNs reason, a producer's field) before Herald keeps or stores it, so
/// one 1 MB answer cannot put a megabyte into every results entry.
public enum BoundedText {
    /// `text` when it has at most `maxBytes` UTF-8 bytes; else its longest prefix that ends on a UTF-8 scalar
    /// boundary followed by `…(truncated, N bytes)` (N: the full length), at most `maxBytes` bytes in all.
    public static func truncate(_ text: String, maxBytes: Int) -> String {
        let utf8 = text.utf8
        let total = utf8.count
        guard total > maxBytes else { return text }
        let marker = "…(truncated, \(total) bytes)"
        var end = utf8.index(utf8.startIndex, offsetBy: max(0, maxBytes - marker.utf8.count))
        // Back off continuation bytes (10xxxxxx) so no scalar is cut in two.
        while end > utf8.startIndex && utf8[end] & 0xC0 == 0x80 { end = utf8.index(before: end) }
        return String(decoding: utf8[..<end], as: UTF8.self) + marker
    }
}

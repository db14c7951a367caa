/// Expo's push token shape, checked locally so a malformed one is rejected before a request is spent on it:
/// `ExponentPushToken[...]` or `ExpoPushToken[...]` with a non-empty inside of printable bytes other than `]`,
/// quotes or backslashes (the token goes into JSON text as it is).
public enum ExpoPushToken {
    private static let prefixes: [[UInt8]] = [Array("ExponentPushToken[".utf8), Array("ExpoPushToken[".utf8)]
    /// Far above any token Expo issues (22 characters inside), so a hostile job cannot fill a request with one.
    public static let maxBytes = 256

    public static func isValid(_ token: String) -> Bool {
        let bytes = Array(token.utf8)
        guard bytes.count <= maxBytes, bytes.last == UInt8(ascii: "]") else { return false }
        guard let prefix = prefixes.first(where: { bytes.starts(with: $0) }), bytes.count > prefix.count + 1 else { return false }
        return bytes[prefix.count..<(bytes.count - 1)].allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "]") && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    }
}

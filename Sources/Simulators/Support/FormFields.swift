/// `application/x-www-form-urlencoded` bodies, as both OAuth token endpoints (FCM's JWT-bearer grant, Push Kit's
/// client credentials) read them.
enum FormFields {
    /// `application/x-www-form-urlencoded` into fields (the last of a repeated name wins).
    static func parse(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = percentDecode(parts[0]) else { continue }
            fields[name] = parts.count > 1 ? percentDecode(parts[1]) ?? "" : ""
        }
        return fields
    }

    private static func percentDecode(_ bytes: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x41...0x46: return c - 0x41 + 10
            case 0x61...0x66: return c - 0x61 + 10
            default: return nil
            }
        }
        while index < bytes.endIndex {
            let c = bytes[index]
            if c == UInt8(ascii: "+") {
                out.append(0x20)
            } else if c == UInt8(ascii: "%"), index + 2 < bytes.endIndex, let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) {
                out.append(high << 4 | low)
                index += 2
            } else {
                out.append(c)
            }
            index += 1
        }
        return String(validating: out, as: UTF8.self)
    }
}

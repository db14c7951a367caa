private let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

/// Unpadded base64url (RFC 4648 section 5), as JWS requires.
public func base64URLEncoded(_ bytes: [UInt8]) -> String {
    var out: [UInt8] = []
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var i = 0
    while i + 3 <= bytes.count {
        let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
        out.append(alphabet[Int(v >> 18)]); out.append(alphabet[Int(v >> 12 & 63)])
        out.append(alphabet[Int(v >> 6 & 63)]); out.append(alphabet[Int(v & 63)])
        i += 3
    }
    let rest = bytes.count - i
    if rest == 1 {
        let v = UInt32(bytes[i]) << 16
        out.append(alphabet[Int(v >> 18)]); out.append(alphabet[Int(v >> 12 & 63)])
    } else if rest == 2 {
        let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
        out.append(alphabet[Int(v >> 18)]); out.append(alphabet[Int(v >> 12 & 63)])
        out.append(alphabet[Int(v >> 6 & 63)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// Decodes unpadded (or padded) base64url; nil on any other character.
public func base64URLDecoded(_ text: String) -> [UInt8]? {
    var values: [UInt8] = []
    values.reserveCapacity(text.utf8.count)
    for b in text.utf8 {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(b - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(b - UInt8(ascii: "a") + 26)
        case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(b - UInt8(ascii: "0") + 52)
        case UInt8(ascii: "-"): values.append(62)
        case UInt8(ascii: "_"): values.append(63)
        case UInt8(ascii: "="): continue
        default: return nil
        }
    }
    if values.count % 4 == 1 { return nil }
    var out: [UInt8] = []
    var i = 0
    while i < values.count {
        let n = min(4, values.count - i)
        var v: UInt32 = 0
        for k in 0..<4 { v = v << 6 | UInt32(k < n ? values[i + k] : 0) }
        out.append(UInt8(v >> 16))
        if n > 2 { out.append(UInt8(v >> 8 & 0xFF)) }
        if n > 3 { out.append(UInt8(v & 0xFF)) }
        i += 4
    }
    return out
}

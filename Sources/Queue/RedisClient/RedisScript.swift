/// A Lua script and its SHA-1, so it can be called with EVALSHA and re-sent with EVAL when Redis answers
/// NOSCRIPT (its script cache is empty after a restart or SCRIPT FLUSH).
public struct RedisScript: Sendable, Hashable {
    public let source: String
    public let sha1: String

    public init(_ source: String) {
        self.source = source
        self.sha1 = SHA1.hex(Array(source.utf8))
    }

    func evalsha(keys: [[UInt8]], args: [[UInt8]]) -> [[UInt8]] {
        [Array("EVALSHA".utf8), Array(sha1.utf8), Array(String(keys.count).utf8)] + keys + args
    }

    func eval(keys: [[UInt8]], args: [[UInt8]]) -> [[UInt8]] {
        [Array("EVAL".utf8), Array(source.utf8), Array(String(keys.count).utf8)] + keys + args
    }

    static func isNoScript(_ reply: RESPValue) -> Bool {
        if case .error(let message) = reply { return message.hasPrefix("NOSCRIPT") }
        return false
    }
}

/// SHA-1 only to name scripts the way Redis does (not for security).
enum SHA1 {
    static func hex(_ message: [UInt8]) -> String {
        var h0: UInt32 = 0x67452301, h1: UInt32 = 0xEFCDAB89, h2: UInt32 = 0x98BADCFE, h3: UInt32 = 0x10325476, h4: UInt32 = 0xC3D2E1F0
        var data = message
        let bitLength = UInt64(message.count) * 8
        data.append(0x80)
        while data.count % 64 != 56 { data.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        var w = [UInt32](repeating: 0, count: 80)
        for chunk in stride(from: 0, to: data.count, by: 64) {
            for i in 0..<16 {
                let b = chunk + i * 4
                w[i] = UInt32(data[b]) << 24 | UInt32(data[b + 1]) << 16 | UInt32(data[b + 2]) << 8 | UInt32(data[b + 3])
            }
            for i in 16..<80 {
                let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
                w[i] = (x << 1) | (x >> 31)
            }
            var a = h0, b = h1, c = h2, d = h3, e = h4
            for i in 0..<80 {
                let f: UInt32, k: UInt32
                switch i {
                case 0..<20: f = (b & c) | (~b & d); k = 0x5A827999
                case 20..<40: f = b ^ c ^ d; k = 0x6ED9EBA1
                case 40..<60: f = (b & c) | (b & d) | (c & d); k = 0x8F1BBCDC
                default: f = b ^ c ^ d; k = 0xCA62C1D6
                }
                let temp = ((a << 5) | (a >> 27)) &+ f &+ e &+ k &+ w[i]
                e = d; d = c; c = (b << 30) | (b >> 2); b = a; a = temp
            }
            h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d; h4 &+= e
        }
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for word in [h0, h1, h2, h3, h4] {
            for shift in stride(from: 28, through: 0, by: -4) { out.append(digits[Int((word >> UInt32(shift)) & 0xF)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

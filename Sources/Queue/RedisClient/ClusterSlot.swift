/// Redis Cluster's key-to-slot rule: CRC16 (XMODEM: polynomial 0x1021, initial 0) of the key, or of its hash
/// tag, modulo 16384. The tag is what lies between the first `{` and the first `}` after it, when not empty;
/// so `{user1000}.following` and `{user1000}.followers` share a slot, and `{}x` or `x{` hash whole.
public enum ClusterSlot {
    public static let count = 16_384

    public static func of(_ key: [UInt8]) -> Int {
        key.withUnsafeBufferPointer { buffer in
            var hashed = buffer[...]
            if let open = buffer.firstIndex(of: UInt8(ascii: "{")),
               let close = buffer[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1 {
                hashed = buffer[(open + 1)..<close]
            }
            return Int(crc16(hashed) & 0x3FFF)
        }
    }

    public static func of(_ key: String) -> Int { of(Array(key.utf8)) }

    static func crc16<C: Collection>(_ bytes: C) -> UInt16 where C.Element == UInt8 {
        var crc: UInt16 = 0
        for byte in bytes { crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)] }
        return crc
    }

    private static let table: [UInt16] = (0..<256).map { index in
        var crc = UInt16(index) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        return crc
    }
}

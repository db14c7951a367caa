/// One decoded Redis reply. Values, not C pointers, so replies can cross threads and be compared in tests.
/// hiredis 0.14 reports a nil array (`*-1`) like a nil bulk, so it arrives as `.bulk(nil)`: test with `isNil`.
/// hiredis also refuses arrays nested deeper than 7 levels (a protocol error); no Redis command here comes close.
public enum RESPValue: Sendable, Equatable {
    case simple(String)
    case error(String)
    case integer(Int64)
    case bulk([UInt8]?)
    case array([RESPValue]?)

    /// The text of a simple or bulk string (bulk decoded as UTF-8, lossy), or an integer's digits.
    public var string: String? {
        switch self {
        case .simple(let text): return text
        case .bulk(let bytes?): return String(decoding: bytes, as: UTF8.self)
        case .integer(let value): return String(value)
        default: return nil
        }
    }

    /// The raw bytes of a bulk or simple string.
    public var bytes: [UInt8]? {
        switch self {
        case .bulk(let bytes?): return bytes
        case .simple(let text): return Array(text.utf8)
        default: return nil
        }
    }

    /// An integer reply, or a string reply holding an integer (Lua scripts and XADD ids come back as strings).
    public var int: Int64? {
        switch self {
        case .integer(let value): return value
        case .bulk(let bytes?): return Int64(String(decoding: bytes, as: UTF8.self))
        case .simple(let text): return Int64(text)
        default: return nil
        }
    }

    public var array: [RESPValue]? {
        if case .array(let items?) = self { return items }
        return nil
    }

    /// Nil bulk or nil array: Redis's "no value".
    public var isNil: Bool {
        switch self {
        case .bulk(nil), .array(nil): return true
        default: return false
        }
    }

    public var errorMessage: String? {
        if case .error(let message) = self { return message }
        return nil
    }
}

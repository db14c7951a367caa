import CHiredis

/// hiredis's RESP parser fed with whatever bytes the socket gave, handing back complete replies as `RESPValue`.
///
/// Owns a `redisReader*` (freed in `deinit`); confined to the thread of the connection that owns it, not Sendable.
final class RESPReader {
    private let reader: UnsafeMutablePointer<redisReader>
    /// Where the array guard notes a refused element count, for the error text (reader's privdata).
    private let refusedCount = UnsafeMutablePointer<Int32>.allocate(capacity: 1)

    /// Largest array reply accepted. hiredis 0.14 callocs a pointer per announced element before any arrives,
    /// so the 12 bytes `*400000000\r\n` would reserve 3.2 GB (found by fuzzing). Herald's replies are bounded by
    /// its own counts (claim batches of at most 10,000 jobs, ranges with LIMIT), far below this.
    static let maxArrayElements: Int32 = 1 << 24

    init() {
        reader = redisReaderCreateWithFunctions(Self.guardedFunctions)
        refusedCount.initialize(to: 0)
        reader.pointee.privdata = UnsafeMutableRawPointer(refusedCount)
    }

    deinit {
        redisReaderFree(reader)
        refusedCount.deallocate()
    }

    func feed(_ bytes: [UInt8], count: Int? = nil) throws(RedisError) {
        let length = min(count ?? bytes.count, bytes.count)
        guard length > 0 else { return }
        let rc = bytes.withUnsafeBytes { buffer in
            redisReaderFeed(reader, buffer.baseAddress!.assumingMemoryBound(to: CChar.self), length)
        }
        if rc != REDIS_OK { throw .protocolError(errorText) }
    }

    /// The next complete reply, or nil when more bytes are needed.
    func next() throws(RedisError) -> RESPValue? {
        var raw: UnsafeMutableRawPointer?
        guard redisReaderGetReply(reader, &raw) == REDIS_OK else { throw .protocolError(errorText) }
        guard let raw else { return nil }
        let reply = raw.assumingMemoryBound(to: redisReply.self)
        defer { freeReplyObject(raw) }
        return Self.convert(reply)
    }

    private var errorText: String {
        if refusedCount.pointee != 0 {
            return "array reply of \(refusedCount.pointee) elements is above the limit of \(Self.maxArrayElements)"
        }
        return withUnsafeBytes(of: reader.pointee.errstr) { buffer in
            String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    private static func convert(_ reply: UnsafeMutablePointer<redisReply>) -> RESPValue {
        let r = reply.pointee
        switch r.type {
        case REDIS_REPLY_STRING:
            return .bulk(bytes(r.str, r.len))
        case REDIS_REPLY_STATUS:
            return .simple(String(decoding: bytes(r.str, r.len), as: UTF8.self))
        case REDIS_REPLY_ERROR:
            return .error(String(decoding: bytes(r.str, r.len), as: UTF8.self))
        case REDIS_REPLY_INTEGER:
            return .integer(Int64(r.integer))
        case REDIS_REPLY_NIL:
            return .bulk(nil)
        case REDIS_REPLY_ARRAY:
            var items: [RESPValue] = []
            items.reserveCapacity(Int(r.elements))
            for index in 0..<Int(r.elements) {
                if let element = r.element[index] { items.append(convert(element)) }
            }
            return .array(items)
        default:
            return .error("unknown reply type \(r.type)")
        }
    }

    /// hiredis's own reply builders with arrays above `maxArrayElements` refused (hiredis then fails the read).
    /// Allocated once and never freed: every reader points at it for its whole life.
    nonisolated(unsafe) private static let guardedFunctions: UnsafeMutablePointer<redisReplyObjectFunctions> = {
        var functions = plainFunctions
        functions.createArray = { task, elements in
            guard elements <= RESPReader.maxArrayElements else {
                task?.pointee.privdata?.assumingMemoryBound(to: Int32.self).pointee = elements
                return nil
            }
            return RESPReader.plainFunctions.createArray(task, elements)
        }
        let pointer = UnsafeMutablePointer<redisReplyObjectFunctions>.allocate(capacity: 1)
        pointer.initialize(to: functions)
        return pointer
    }()

    /// The builders `redisReaderCreate` installs (hiredis keeps them private to its library).
    nonisolated(unsafe) private static let plainFunctions: redisReplyObjectFunctions = {
        let plain = redisReaderCreate()!
        defer { redisReaderFree(plain) }
        return plain.pointee.fn.pointee
    }()

    private static func bytes(_ pointer: UnsafeMutablePointer<CChar>?, _ length: Int) -> [UInt8] {
        guard let pointer, length > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: length))
    }
}

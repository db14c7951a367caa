/// One entry of a Redis stream as XRANGE, XREVRANGE and XREAD return it: `[id, [field, value, ...]]`.
/// Every reader of the results stream (stats, tail, the demo, the benchmark) decodes it here.
public struct StreamEntry: Sendable, Equatable {
    public let id: String
    /// Field/value pairs in stream order.
    public let fields: [(String, String)]

    public static func == (a: StreamEntry, b: StreamEntry) -> Bool {
        a.id == b.id && a.fields.elementsEqual(b.fields) { $0 == $1 }
    }

    /// The time part of the id: when Redis recorded the entry, ms since the epoch.
    public var milliseconds: Int64 { Int64(id.prefix { $0 != "-" }) ?? 0 }

    /// The first value of `field`, if any.
    public subscript(field: String) -> String? { fields.first { $0.0 == field }?.1 }

    public init(id: String, fields: [(String, String)]) {
        self.id = id
        self.fields = fields
    }

    /// Decodes one `[id, [field, value, ...]]` element; nil when it has another shape.
    public init?(_ reply: RESPValue) {
        guard let parts = reply.array, parts.count == 2, let id = parts[0].string, let flat = parts[1].array else { return nil }
        var fields: [(String, String)] = []
        fields.reserveCapacity(flat.count / 2)
        var index = 0
        while index + 1 < flat.count {
            fields.append((flat[index].string ?? "", flat[index + 1].string ?? ""))
            index += 2
        }
        self.init(id: id, fields: fields)
    }

    /// The entries of an XRANGE / XREVRANGE reply.
    public static func entries(_ reply: RESPValue) -> [StreamEntry] {
        (reply.array ?? []).compactMap(StreamEntry.init)
    }

    /// The entries of an XREAD reply, all streams together, in order.
    public static func entries(readReply reply: RESPValue) -> [StreamEntry] {
        (reply.array ?? []).flatMap { stream -> [StreamEntry] in
            guard let pair = stream.array, pair.count == 2 else { return [] }
            return entries(pair[1])
        }
    }
}

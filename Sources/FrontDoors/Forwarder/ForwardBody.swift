import Foundation
import RedisQueue

/// The JSON a webhook receives: one POST per batch of one stream,
/// `{"stream":"<key>","entries":[{"stream_id":"<id>","<field>":<value>,...},...]}`, numeric fields as numbers.
public enum ForwardBody {
    /// Fields of results and dropped tokens that hold numbers.
    static let numeric: Set<String> = ["status", "attempt", "retry_at", "invalid_since", "latency_ms"]

    /// One entry as a JSON object (also `herald tail --json`'s line).
    public static func object(streamID: String, fields: [(String, String)]) -> [String: Any] {
        var object: [String: Any] = ["stream_id": streamID]
        for (key, value) in fields where object[key] == nil {
            object[key] = numeric.contains(key) ? (Int64(value).map { $0 as Any } ?? value) : value
        }
        return object
    }

    public static func encode(stream: String, entries: [StreamEntry]) -> [UInt8] {
        let body: [String: Any] = ["stream": stream, "entries": entries.map { object(streamID: $0.id, fields: $0.fields) }]
        return Array((try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data())
    }
}

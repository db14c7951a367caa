import Basics
import Foundation

/// An element of `<prefix>:dead`: `{"reason":"...","at":<ms>,"id":"<job id>","job":"<raw job as a JSON string>"}`
/// (`id` the same as the job's `rejected` result: the producer's when it could be read), or
/// `"job_base64"` instead of `"job"` when the bytes are not UTF-8. Jobs longer than `maxJobBytes` keep only
/// their first `maxJobBytes` bytes and say so with `"truncated":true,"job_bytes":<full length>`.
public struct DeadLetterEntry: Sendable, Equatable {
    public var reason: String
    /// ms since the epoch.
    public var at: Int64
    /// The id the job's result entry carries (the producer's whenever it could be read); nil in entries written
    /// before ids were added.
    public var id: String?
    public var job: [UInt8]
    public var truncated: Bool
    public var originalLength: Int
    /// Its place in `<p>:dead` (`"seq"`, written by the completion script: larger is newer), nil in letters written
    /// before the dead-letter index.
    public var seq: Int64?

    /// 16 MiB by default: room for the 10 MB jobs the issue requires without letting one bad producer fill Redis.
    public static let defaultMaxJobBytes = 16 * 1024 * 1024

    public init(reason: String, at: Int64, id: String? = nil, job: [UInt8], truncated: Bool = false, originalLength: Int? = nil) {
        self.reason = reason
        self.at = at
        self.id = id
        self.job = job
        self.truncated = truncated
        self.originalLength = originalLength ?? job.count
    }

    /// Herald's reason texts are short; a longer one (a detail quoting input) is cut to this, marked.
    public static let maxReasonBytes = 4096

    /// The JSON bytes stored in the list (the reason capped at `maxReasonBytes`).
    public static func encode(reason: String, at: Int64, id: String? = nil, job: [UInt8], maxJobBytes: Int = defaultMaxJobBytes) -> [UInt8] {
        let truncated = job.count > maxJobBytes
        let kept = truncated ? Array(job[..<max(0, maxJobBytes)]) : job
        var out: [UInt8] = []
        out.reserveCapacity(kept.count + kept.count / 8 + 128)
        out.append(contentsOf: Array(#"{"reason":"#.utf8))
        appendJSONString(BoundedText.truncate(reason, maxBytes: maxReasonBytes), to: &out)
        out.append(contentsOf: Array(#","at":"#.utf8))
        out.append(contentsOf: Array(String(at).utf8))
        if let id {
            out.append(contentsOf: Array(#","id":"#.utf8))
            appendJSONString(BoundedText.truncate(id, maxBytes: ResultEntry.maxTextBytes), to: &out)
        }
        if JSONBytes.isValidUTF8(kept) {
            out.append(contentsOf: Array(#","job":"#.utf8))
            appendJSONString(utf8: kept, to: &out)
        } else {
            out.append(contentsOf: Array(#","job_base64":""#.utf8))
            out.append(contentsOf: Array(Data(kept).base64EncodedString().utf8))
            out.append(UInt8(ascii: "\""))
        }
        if truncated {
            out.append(contentsOf: Array(#","truncated":true,"job_bytes":"#.utf8))
            out.append(contentsOf: Array(String(job.count).utf8))
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Reads an element back (for `herald` tools that inspect or replay dead letters).
    public static func decode(_ bytes: [UInt8]) -> DeadLetterEntry? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) as? [String: Any],
              let reason = object["reason"] as? String, let at = (object["at"] as? NSNumber)?.int64Value else { return nil }
        let job: [UInt8]
        if let text = object["job"] as? String {
            job = Array(text.utf8)
        } else if let encoded = object["job_base64"] as? String, let data = Data(base64Encoded: encoded) {
            job = Array(data)
        } else {
            return nil
        }
        let truncated = object["truncated"] as? Bool ?? false
        let length = (object["job_bytes"] as? NSNumber)?.intValue ?? job.count
        var entry = DeadLetterEntry(reason: reason, at: at, id: object["id"] as? String, job: job, truncated: truncated, originalLength: length)
        entry.seq = (object["seq"] as? NSNumber)?.int64Value
        return entry
    }
}

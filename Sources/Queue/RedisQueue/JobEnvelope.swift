import Basics
import Foundation

/// The retry wrapper around a job: `{"herald":{"queue":"<origin>","attempt":N,"id":"<id>","nonce":"<hex>"[,"since":<ms>][,"paced":<ms>]},"job":<job>}`;
/// the scheduler adds `,"epoch":"<dataset epoch>"` to the header as it moves it to a queue (`QueueScripts.moveDue`).
///
/// Built by concatenation and taken apart by slicing, so the producer's job bytes come out exactly as they went
/// in (only the small header is parsed). `queue` comes first so the scheduler script can read it with a plain
/// pattern. The nonce keeps retry ZSET members unique even when a producer reused an id. A job from a producer
/// (no envelope) is attempt 1 with no id. Producers must not start their own jobs with `{"herald":{`; one that does
/// gets no epoch mark, so `Lease` counts it as attempt 1 whatever its header says.
public enum JobEnvelope {
    static let prefix = Array(#"{"herald":{"#.utf8)
    static let jobMarker = Array(#"},"job":"#.utf8)

    /// `since`: when the job's first attempt was made (ms since the epoch), for a queue's give-up limit.
    /// `paced`: the time its budgets reserved for it (`BudgetCheck`): it comes back paid for and is not checked again.
    public static func wrap(job: [UInt8], attempt: Int, id: String, queue: String, since: Int64? = nil, paced: Int64? = nil) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(job.count + id.utf8.count + queue.utf8.count + 96)
        out.append(contentsOf: prefix)
        out.append(contentsOf: Array(#""queue":"#.utf8))
        appendJSONString(queue, to: &out)
        out.append(contentsOf: Array(#","attempt":"#.utf8))
        appendDecimal(attempt, to: &out)
        out.append(contentsOf: Array(#","id":"#.utf8))
        appendJSONString(id, to: &out)
        out.append(contentsOf: Array(#","nonce":"#.utf8))
        appendJSONString(String(UInt64.random(in: 0...UInt64.max), radix: 16), to: &out)
        if let since {
            out.append(contentsOf: Array(#","since":"#.utf8))
            out.append(contentsOf: Array(String(since).utf8))
        }
        if let paced {
            out.append(contentsOf: Array(#","paced":"#.utf8))
            out.append(contentsOf: Array(String(paced).utf8))
        }
        out.append(contentsOf: jobMarker)
        out.append(contentsOf: job)
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The latest time (ms since the epoch, 2^42: the year 2109) Herald takes from Redis: a `since`, `paced` or
    /// budget time beyond it, or before the epoch, is no time Herald wrote, and is not used (issue 54: such a
    /// value trapped the worker's arithmetic).
    public static let latestMillis: Int64 = 1 << 42

    /// `value` when it lies within 0...`latestMillis`, else nil.
    static func plausibleTime(_ value: Int64?) -> Int64? { value.flatMap { (0...latestMillis).contains($0) ? $0 : nil } }

    public static func unwrap(_ bytes: [UInt8]) -> (job: [UInt8], attempt: Int, id: String?, queue: String?, epoch: String?, since: Int64?, paced: Int64?) {
        guard bytes.count > prefix.count + jobMarker.count, bytes.starts(with: prefix), bytes.last == UInt8(ascii: "}"),
              let marker = JSONBytes.find(jobMarker, in: bytes, from: prefix.count, limit: min(bytes.count, 64 * 1024)) else {
            return (bytes, 1, nil, nil, nil, nil, nil)
        }
        // Inside a JSON string a quote is always escaped, so the first `},"job":` ends the header.
        let header = Array(bytes[(prefix.count - 1)...marker])
        guard let object = try? JSONSerialization.jsonObject(with: Data(header)) as? [String: Any],
              let attempt = (object["attempt"] as? NSNumber)?.intValue else {
            return (bytes, 1, nil, nil, nil, nil, nil)
        }
        let job = Array(bytes[(marker + jobMarker.count)..<(bytes.count - 1)])
        return (job, max(1, attempt), object["id"] as? String, object["queue"] as? String, object["epoch"] as? String,
                plausibleTime((object["since"] as? NSNumber)?.int64Value), plausibleTime((object["paced"] as? NSNumber)?.int64Value))
    }
}

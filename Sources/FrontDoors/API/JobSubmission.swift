import Basics
import Glibc
import PushCore

/// The jobs in a `POST /v1/jobs` body: one job object, or `{"jobs": [job, ...]}`. Each job's bytes are sliced
/// out as sent (the worker gets exactly what the producer wrote, plus an `id` when it had none). Pure.
public enum JobSubmission {
    public enum Split: Equatable {
        /// The body is one job (whatever it is: a job that is not JSON is refused by the job parser, with its reason).
        case single([UInt8])
        case batch([[UInt8]])
        /// `jobs` is there but unusable: an answer for the whole request.
        case unusable(status: Int, reason: String)
    }

    /// `maxJobs`: the most jobs one request may carry.
    public static func split(_ body: [UInt8], maxJobs: Int) -> Split {
        body.withUnsafeBufferPointer { buffer -> Split in
            var scanner = JSONScanner(buffer)
            do {
                scanner.skipWhitespace()
                guard scanner.position < buffer.count, buffer[scanner.position] == UInt8(ascii: "{") else { return .single(body) }
                try scanner.beginObject()
                var first = true
                var jobsValue: JSONToken?
                while let (key, value) = try scanner.nextMember(first: &first) {
                    if scanner.stringEquals(key, "jobs") { jobsValue = value }
                }
                try scanner.expectEnd()
                guard let jobs = jobsValue else { return .single(body) }
                guard jobs.kind == .array else { return .unusable(status: 400, reason: "\"jobs\" must be an array of job objects") }
                var elements: [[UInt8]] = []
                var inner = JSONScanner(UnsafeBufferPointer(rebasing: buffer[jobs.range]))
                inner.position = 1
                inner.skipWhitespace()
                if inner.position < inner.bytes.count, inner.bytes[inner.position] == UInt8(ascii: "]") { return .unusable(status: 400, reason: "\"jobs\" is empty") }
                while true {
                    inner.skipWhitespace()
                    let element = try inner.scanValue(depth: 1)
                    elements.append(Array(UnsafeBufferPointer(rebasing: inner.bytes[element.range])))
                    if elements.count > maxJobs {
                        return .unusable(status: 413, reason: "more than \(maxJobs) jobs in one request (api.max_jobs_per_request)")
                    }
                    inner.skipWhitespace()
                    let b = inner.bytes[inner.position]
                    inner.position += 1
                    if b == UInt8(ascii: "]") { break }
                }
                return .batch(elements)
            } catch {
                // Not JSON: the job parser refuses it as a job, with the text a worker's rejection would carry.
                return .single(body)
            }
        }
    }

    /// False when no member of `job` can be an `id` (no `"id"` and no escape anywhere in its bytes): then an id
    /// put in front cannot collide with one, and the job need not be checked again.
    public static func mayNameID(_ job: [UInt8]) -> Bool {
        job.withUnsafeBufferPointer { bytes in
            guard bytes.count >= 4, let base = bytes.baseAddress else { return false }
            // A backslash anywhere: a key may be spelled with escapes.
            if memchr(base, 92, bytes.count) != nil { return true }
            // Quote by quote (memchr finds them faster than a byte loop), for `"id"`.
            var at = 0
            while at + 3 < bytes.count, let found = memchr(base + at, 34, bytes.count - 3 - at) {
                let i = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                if bytes[i + 1] == 105, bytes[i + 2] == 100, bytes[i + 3] == 34 { return true }
                at = i + 1
            }
            return false
        }
    }

    /// `job` with its top-level `id` member's value (a string or a number, as the job parser takes it) made the
    /// string `id`, every other byte kept; nil when `job` is not an object with such a member.
    public static func replacingID(_ job: [UInt8], with id: String) -> [UInt8]? {
        job.withUnsafeBufferPointer { buffer -> [UInt8]? in
            var scanner = JSONScanner(buffer)
            do {
                scanner.skipWhitespace()
                guard scanner.position < buffer.count, buffer[scanner.position] == UInt8(ascii: "{") else { return nil }
                try scanner.beginObject()
                var first = true
                while let (key, value) = try scanner.nextMember(first: &first) {
                    guard scanner.stringEquals(key, "id"), value.kind == .string || value.kind == .number else { continue }
                    var out: [UInt8] = []
                    out.reserveCapacity(job.count + id.utf8.count)
                    out.append(contentsOf: job[..<value.range.lowerBound])
                    appendJSONString(id, to: &out)
                    out.append(contentsOf: job[value.range.upperBound...])
                    return out
                }
                return nil
            } catch {
                return nil
            }
        }
    }

    /// `job` with `"id":"<id>"` as its first member (`job` is an object without an `id`).
    public static func withID(_ job: [UInt8], id: String) -> [UInt8] {
        guard let open = job.firstIndex(of: UInt8(ascii: "{")) else { return job }
        var rest = open + 1
        while rest < job.count, job[rest] == 32 || job[rest] == 9 || job[rest] == 10 || job[rest] == 13 { rest += 1 }
        var out: [UInt8] = []
        out.reserveCapacity(job.count + id.utf8.count + 8)
        out.append(contentsOf: job[0...open])
        out.append(contentsOf: #""id":"#.utf8)
        appendJSONString(id, to: &out)
        if rest < job.count, job[rest] != UInt8(ascii: "}") { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: job[(open + 1)...])
        return out
    }
}

/// Reads a producer's job in one validating pass over its bytes (the worker's hot path): no Foundation,
/// no intermediate dictionary, and the payload sliced out byte for byte. Unknown fields are ignored so
/// producers can add their own; `null` counts as absent.
public enum JobParser {
    /// The most device tokens one multicast job (`tokens`) may list.
    public static let maxTokens = 10_000

    /// `members`: the providers' members to slice (the worker's table holds every provider's); others are ignored
    /// like any unknown field.
    public static func parse(_ bytes: [UInt8], members: JobMemberTable = .none) throws(JobError) -> JobSpec {
        // Typed throws straight through: a `Result` around the spec copied it twice more per job.
        try bytes.withUnsafeBufferPointer { (buffer) throws(JobError) -> JobSpec in try parse(buffer, members: members) }
    }

    /// Same as `parse(_: [UInt8])` for bytes that are not in an Array (e.g. a Redis reply buffer).
    public static func parse(_ buffer: UnsafeBufferPointer<UInt8>, members table: JobMemberTable = .none) throws(JobError) -> JobSpec {
        // Member slices keep 32-bit offsets (more than Redis's 512 MB limit on a value).
        guard buffer.count <= Int(Int32.max) else { throw JobError.member(code: "job_too_large", description: "job is larger than 2 GiB") }
        var scanner = JSONScanner(buffer)
        var job = JobSpec(members: table)
        var seen: UInt32 = 0
        var tokenSeen = false
        // Read as given and judged at the end: a job with `token` and `payload` keeps working whatever a
        // producer's own `platform` or `message` field says (fields Herald did not know before FCM).
        var platformText: String? = nil
        // Read once the platform is known: `tokens` is an APNs multicast, and an FCM job's tokens are not hexadecimal.
        var tokensValue: JSONToken? = nil
        do {
            scanner.skipWhitespace()
            guard scanner.position < buffer.count else { throw JobError.notJSON(.unexpectedEnd) }
            guard buffer[scanner.position] == UInt8(ascii: "{") else {
                // Say "not an object" only for input that is valid JSON of another kind.
                _ = try JSONScanner.validate(buffer)
                throw JobError.notAnObject
            }
            try scanner.beginObject()
            var first = true
            while let (key, value) = try scanner.nextMember(first: &first) {
                guard let field = Field(key, in: scanner) else {
                    // A provider's member: sliced for it (a `null` one too, until the end, so that twice is still twice).
                    for slot in table.slots(of: key, in: scanner) ?? [] {
                        guard job.members.keep(JobMemberSlice(key: key, value: value), in: slot) else { throw JobError.duplicateField(table.names[slot]) }
                    }
                    continue
                }
                let bit = UInt32(1) << field.rawValue
                if seen & bit != 0 { throw JobError.duplicateField(field.name) }
                seen |= bit
                if value.kind == .null {
                    // Absent, but its bytes must leave a multicast's children, which each get a `token` of their own.
                    if field == .token { job.nullTokenMember = key.range.lowerBound..<value.range.upperBound }
                    continue
                }
                switch field {
                case .id:
                    switch value.kind {
                    case .string: job.id = scanner.stringValue(value)
                    case .number: job.id = scanner.text(value)
                    default: throw JobError.wrongType(field: "id", expected: "a string or a number")
                    }
                case .token:
                    // Checked by the job's provider: only an APNs token must be hexadecimal.
                    job.token = try string(value, field.name, scanner)
                    tokenSeen = true
                case .topic: job.topic = try string(value, field.name, scanner)
                case .app: job.app = try string(value, field.name, scanner)
                case .expiration: job.expiration = try integer(value, field.name, scanner)
                case .deliverAt:
                    switch value.kind {
                    case .number:
                        guard value.isInteger, let ms = scanner.int64Value(value), ms >= 0 else { throw JobError.badDeliverAt }
                        job.deliverAt = ms
                    case .string:
                        guard let ms = Timestamp.rfc3339Milliseconds(scanner.stringValue(value)) else { throw JobError.badDeliverAt }
                        job.deliverAt = ms
                    default:
                        throw JobError.badDeliverAt
                    }
                case .traceparent:
                    // W3C Trace Context: a malformed value (a number, an object, a bad string) is ignored, as its spec
                    // asks, never a reason to refuse the job.
                    job.traceparent = value.kind == .string ? TraceParent.valid(scanner.stringValue(value)) : nil
                case .tokens:
                    tokensValue = value
                    job.tokensMember = key.range.lowerBound..<value.range.upperBound
                case .payload:
                    job.payloadValue = value
                    job.payload = Array(UnsafeBufferPointer(rebasing: buffer[value.range]))
                case .validateOnly:
                    guard value.kind == .bool else { throw JobError.wrongType(field: "validate_only", expected: "true or false") }
                    job.validateOnly = scanner.text(value) == "true"
                case .platform:
                    platformText = value.kind == .string ? scanner.stringValue(value) : scanner.text(value)
                }
            }
            try scanner.expectEnd()
        } catch let error as JSONScanError {
            throw JobError.notJSON(error)
        } catch let error as JobError {
            throw error
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
        // A `null` member counts as absent (it was kept only to find a duplicate).
        if job.members.present != 0 { job.members.dropNulls() }
        let given = platformText.flatMap(Platform.init(rawValue:))
        if let tokensValue {
            if let platform = given ?? (platformText == nil ? job.members.anyImplied({ $0.carriesSubscription }) : nil),
               platform.carriesSubscription {
                throw JobError.badTokens("\"tokens\" (multicast) is for APNs jobs; a \(platform.displayName) job names its \"subscription\"")
            }
            if let platform = given, platform.carriesMessage {
                throw JobError.badTokens("\"tokens\" (multicast) is for APNs jobs; a \(platform.displayName) job names its target (token, topic or condition) in its \"message\"")
            }
            job.tokens = try tokens(tokensValue, scanner)
        }
        let targeted = tokenSeen || job.tokens != nil || job.members.hasTarget
        if let platformText {
            if let given {
                job.platform = given
                job.platformGiven = true
            } else if !(targeted && job.payloadValue != nil) {
                throw JobError.badPlatform(platformText)
            }
        }
        // No `platform`: a job with a member that implies its provider, and no device target, is that provider's
        // by its shape (`JobMember.Shape`); the last such provider in platform order when several are implied.
        if !job.platformGiven && !targeted && job.members.present != 0 {
            if let platform = job.members.implied({
                if case .impliesPlatform(let withoutPayload) = $0 { !withoutPayload || job.payloadValue == nil } else { false }
            }) { job.platform = platform }
        }
        return job
    }

    /// The job's `id` (a string or a number) when it can be read, even from a job `parse` rejects for another
    /// field or for JSON that breaks after the id: the producer can then match the rejection to its job. Reads
    /// the top-level members in order and stops at the first `id` or the first error.
    public static func readableID(_ bytes: [UInt8]) -> String? { readable(.id, in: bytes) }

    /// The job's valid `traceparent` when a job that does not parse still has one readable (for its rejection).
    public static func readableTraceparent(_ bytes: [UInt8]) -> String? {
        readable(.traceparent, in: bytes).flatMap(TraceParent.valid)
    }

    /// The job's `platform` when a job that does not parse still names a known one (for its rejection's metrics).
    public static func readablePlatform(_ bytes: [UInt8]) -> Platform? { readable(.platform, in: bytes).flatMap(Platform.init(rawValue:)) }

    /// The first member `field` of a top-level object, as text, whatever the rest of the job holds.
    private static func readable(_ field: Field, in bytes: [UInt8]) -> String? {
        bytes.withUnsafeBufferPointer { buffer -> String? in
            var scanner = JSONScanner(buffer)
            do throws(JSONScanError) {
                scanner.skipWhitespace()
                guard scanner.position < buffer.count, buffer[scanner.position] == UInt8(ascii: "{") else { return nil }
                try scanner.beginObject()
                var first = true
                while let (key, value) = try scanner.nextMember(first: &first) {
                    guard Field(key, in: scanner) == field else { continue }
                    switch value.kind {
                    case .string: return scanner.stringValue(value)
                    case .number: return scanner.text(value)
                    default: return nil
                    }
                }
            } catch {
                return nil
            }
            return nil
        }
    }

    /// True for a job that is Herald's own retry envelope rather than a producer's job.
    public static func isHeraldEnvelope(_ bytes: [UInt8]) -> Bool {
        let prefix: StaticString = "{\"herald\":"
        guard bytes.count >= prefix.utf8CodeUnitCount else { return false }
        let p = prefix.utf8Start
        for i in 0..<prefix.utf8CodeUnitCount where bytes[i] != p[i] { return false }
        return true
    }

    /// The elements of `tokens`: 1...maxTokens hexadecimal strings.
    private static func tokens(_ value: JSONToken, _ scanner: JSONScanner) throws(JobError) -> [String] {
        guard value.kind == .array else { throw JobError.badTokens("\"tokens\" must be a list of device tokens") }
        return try elements(value, scanner, name: "tokens") { (s, element, index) throws(JobError) in
            guard element.kind == .string, case let token = s.stringValue(element), isHexToken(token) else {
                throw JobError.badTokens("tokens[\(index)] is not a non-empty, even-length hexadecimal string")
            }
            return token
        }
    }

    /// The elements of a list of objects (Web Push's `subscriptions`): 1...maxTokens, each object's bytes.
    public static func objects(_ value: JSONToken, _ scanner: JSONScanner, name: String) throws(JobError) -> [[UInt8]] {
        try elements(value, scanner, name: name) { (s, element, index) throws(JobError) in
            guard element.kind == .object else { throw JobError.badTokens("\(name)[\(index)] is not a JSON object") }
            return Array(UnsafeBufferPointer(rebasing: s.bytes[element.range]))
        }
    }

    /// A multicast list's 1...maxTokens elements, each read by `read`. The array was validated when it was
    /// scanned, so walking it again cannot meet bad JSON.
    private static func elements<T>(_ value: JSONToken, _ scanner: JSONScanner, name: String,
                                    _ read: (JSONScanner, JSONToken, Int) throws(JobError) -> T) throws(JobError) -> [T] {
        var s = scanner
        s.position = value.range.lowerBound + 1
        var out: [T] = []
        while true {
            s.skipWhitespace()
            if s.bytes[s.position] == UInt8(ascii: "]") { break }
            if s.bytes[s.position] == UInt8(ascii: ",") {
                s.position += 1
                s.skipWhitespace()
            }
            guard let element = try? s.scanValue(depth: 1) else { throw JobError.badTokens("\"\(name)\" is not a valid list") }
            guard out.count < maxTokens else { throw JobError.tooManyTokens(limit: maxTokens) }
            out.append(try read(s, element, out.count))
        }
        guard !out.isEmpty else { throw JobError.badTokens("\"\(name)\" is empty") }
        return out
    }

    static func string(_ value: JSONToken, _ field: String, _ scanner: JSONScanner) throws(JobError) -> String {
        guard value.kind == .string else { throw JobError.wrongType(field: field, expected: "a string") }
        return scanner.stringValue(value)
    }

    static func integer(_ value: JSONToken, _ field: String, _ scanner: JSONScanner) throws(JobError) -> Int64 {
        guard value.kind == .number, value.isInteger else {
            throw JobError.wrongType(field: field, expected: "an integer")
        }
        guard let v = scanner.int64Value(value) else { throw JobError.outOfRange(field: field) }
        return v
    }

    private enum Field: UInt32 {
        case id, token, topic, app, expiration, payload, deliverAt, tokens, platform, traceparent, validateOnly

        var name: String {
            switch self {
            case .id: "id"
            case .token: "token"
            case .topic: "topic"
            case .app: "app"
            case .expiration: "expiration"
            case .payload: "payload"
            case .deliverAt: "deliver_at"
            case .tokens: "tokens"
            case .platform: "platform"
            case .traceparent: "traceparent"
            case .validateOnly: "validate_only"
            }
        }

        /// Matches on length first so most unknown keys cost one comparison.
        init?(_ key: JSONToken, in s: JSONScanner) {
            let length = key.hasEscapes ? -1 : key.contentRange.count
            switch length {
            case 2 where s.stringEquals(key, "id"): self = .id
            case 3 where s.stringEquals(key, "app"): self = .app
            case 5 where s.stringEquals(key, "token"): self = .token
            case 5 where s.stringEquals(key, "topic"): self = .topic
            case 6 where s.stringEquals(key, "tokens"): self = .tokens
            case 7 where s.stringEquals(key, "payload"): self = .payload
            case 8 where s.stringEquals(key, "platform"): self = .platform
            case 10 where s.stringEquals(key, "expiration"): self = .expiration
            case 10 where s.stringEquals(key, "deliver_at"): self = .deliverAt
            case 11 where s.stringEquals(key, "traceparent"): self = .traceparent
            case 13 where s.stringEquals(key, "validate_only"): self = .validateOnly
            case -1:
                let name = s.stringValue(key)
                guard let f = Field.allByName[name] else { return nil }
                self = f
            default: return nil
            }
        }

        static let allByName: [String: Field] = {
            var d: [String: Field] = [:]
            var raw: UInt32 = 0
            while let f = Field(rawValue: raw) { d[f.name] = f; raw += 1 }
            return d
        }()
    }
}

/// Non-empty, even length, hexadecimal: what APNs accepts in `/3/device/<token>`.
public func isHexToken(_ token: String) -> Bool {
    var token = token
    return token.withUTF8 { bytes in
        guard !bytes.isEmpty, bytes.count % 2 == 0 else { return false }
        // Two range checks per byte (a digit; a letter a-f in either case, `| 0x20` lowercasing A-F), not
        // `hexValue`'s switch and optional: every job's token passes here twice.
        for b in bytes where !(b &- 48 < 10 || (b | 0x20) &- 97 < 6) { return false }
        return true
    }
}

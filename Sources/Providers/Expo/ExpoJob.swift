import PushCore

/// An Expo job's own member, read by `ExpoProvider.readJob` from the slice the parser kept: `to`, one push token or
/// a list of them (a multicast: one job per token, each its own outcome, as `tokens` is for APNs). The message
/// (`title`, `body`, `data`, `sound`, ...) is the envelope's `payload`, as Expo documents it but without `to`.
public struct ExpoJob: Sendable, Equatable {
    /// Every token, each once, in the producer's order; one for a job that names a string.
    public var tokens: [String] = []
    /// The bytes of a list's `"to": [...]` member, key to closing bracket: replaced by `"to":"<token>"` to make each
    /// token's own job.
    public var toMember: Range<Int>?

    public init() {}

    static let members: [JobMember] = [JobMember("to")]

    static func read(_ job: [UInt8], spec: JobSpec) throws(JobError) -> ExpoJob {
        guard let payload = spec.payloadValue else { throw JobError.missingPayload }
        guard payload.kind == .object else { throw JobError.payloadNotAnObject }
        return try spec.readMembers(of: .expo, in: job) { (m: JobMemberReader) throws(JobError) -> ExpoJob in
            var read = ExpoJob()
            guard let to = m.slice(0) else { throw JobError.member(code: "missing_to", description: "an expo job needs \"to\": a push token or a list of them") }
            switch to.value.kind {
            case .string:
                read.tokens = [m.scanner.stringValue(to.value)]
            case .array:
                var seen = Set<String>()
                for element in m.scanner.elements(of: to.value) {
                    guard element.kind == .string else { throw JobError.badTokens("\"to\" must list push tokens (strings)") }
                    let token = m.scanner.stringValue(element)
                    if seen.insert(token).inserted { read.tokens.append(token) }
                }
                guard !read.tokens.isEmpty else { throw JobError.badTokens("\"to\" is empty") }
                guard read.tokens.count <= JobParser.maxTokens else { throw JobError.tooManyTokens(limit: JobParser.maxTokens) }
                read.toMember = to.range
            default:
                throw JobError.wrongType(field: "to", expected: "a push token or a list of them")
            }
            for (index, token) in read.tokens.enumerated() where !ExpoPushToken.isValid(token) {
                throw JobError.member(code: "bad_expo_token",
                                      description: "to[\(index)] '\(token.prefix(64))' is not an Expo push token (ExponentPushToken[...] or ExpoPushToken[...])")
            }
            return read
        }
    }

    /// A list's bytes before and after its `"to":[...]` member, with `"to":` added: each token's own job is prefix +
    /// the token as a JSON string + suffix.
    public func jobParts(of job: [UInt8]) -> (prefix: [UInt8], suffix: [UInt8])? {
        toMember.map { JobSpec.jobParts(of: job, replacing: $0, with: #""to":"#) }
    }
}

import PushCore

/// A harmony job's own members, read by `HarmonyProvider.readJob` from the slices the parser kept: the scenario
/// (`push_type`), Push Kit's `pushOptions` and `target` objects, and the envelope's `payload` (its bytes, sent as
/// written). Types only here (a job of the wrong shape is unreadable); Push Kit's own rules are `HarmonyRules`'.
public struct HarmonyJob: Sendable, Equatable {
    public var pushType: HarmonyPushType = .alert
    /// `pushOptions`' bytes as written, nil when absent.
    public var pushOptions: [UInt8]?
    /// The tokens: `target.token`'s, else the envelope's `token`; each a string, in the producer's order.
    public var tokens: [String] = []
    public var payload: [UInt8] = []
    /// The job has a `target` (an empty list in it is Push Kit's 80300010, not an unreadable job).
    var targetGiven = false

    public init() {}

    /// Its members, in the order `read` asks for them.
    static let members: [JobMember] = [JobMember("push_type"), JobMember("pushOptions"), JobMember("target")]

    static func read(_ job: [UInt8], spec: JobSpec) throws(JobError) -> HarmonyJob {
        guard spec.tokens == nil else {
            throw JobError.badTokens("\"tokens\" (multicast) is for APNs jobs; a harmony job lists its tokens in \"target\": {\"token\": [...]}")
        }
        guard let payload = spec.payloadValue else { throw JobError.missingPayload }
        guard payload.kind == .object else { throw JobError.payloadNotAnObject }
        var read = try spec.readMembers(of: .harmony, in: job) { (m: JobMemberReader) throws(JobError) -> HarmonyJob in
            var read = HarmonyJob()
            if let value = m.slice(0)?.value {
                if value.kind == .string, let type = HarmonyPushType(word: m.scanner.stringValue(value)) {
                    read.pushType = type
                } else if value.kind == .number, value.isInteger, let n = m.scanner.int64Value(value),
                          let type = HarmonyPushType(rawValue: Int(clamping: n)) {
                    read.pushType = type
                } else {
                    throw JobError.member(code: "unknown_push_type", description:
                        "\"push_type\" must be one of " + HarmonyPushType.allCases.map { "\($0.word) (\($0.rawValue))" }.joined(separator: ", "))
                }
            }
            if let value = m.slice(1)?.value {
                guard value.kind == .object else { throw JobError.wrongType(field: "pushOptions", expected: "an object") }
                read.pushOptions = m.bytes(value)
            }
            if let value = m.slice(2)?.value {
                read.tokens = try targetTokens(value, m.scanner)
                read.targetGiven = true
                if spec.token != nil { throw JobError.badTokens("give either \"token\" or \"target\", not both") }
            }
            return read
        }
        if let token = spec.token {
            read.tokens = [token]
        } else if !read.targetGiven {
            throw JobError.missingToken
        }
        read.payload = spec.payload
        return read
    }

    /// `target`: an object whose `token` is a list of strings (Push Kit's count rules are `HarmonyRules`').
    private static func targetTokens(_ target: JSONToken, _ scanner: JSONScanner) throws(JobError) -> [String] {
        guard target.kind == .object else { throw JobError.wrongType(field: "target", expected: "an object {\"token\": [...]}") }
        var tokens: [String]? = nil
        for (key, value) in scanner.members(at: target.range.lowerBound) where key == "token" {
            guard value.kind == .array else { throw JobError.wrongType(field: "target.token", expected: "a list of push tokens") }
            var list: [String] = []
            for element in scanner.elements(of: value) {
                guard element.kind == .string else { throw JobError.wrongType(field: "target.token", expected: "a list of strings") }
                list.append(scanner.stringValue(element))
            }
            tokens = list
        }
        guard let tokens else { throw JobError.wrongType(field: "target", expected: "an object {\"token\": [...]}") }
        return tokens
    }
}

/// What a HarmonyOS notification carries besides its payload: the scenario, `pushOptions` as written, and every
/// token (each once) the one request names.
public struct HarmonyFields: ProviderFields, Equatable {
    public var pushType: HarmonyPushType
    public var pushOptions: [UInt8]?
    public var tokens: [String]

    public init(pushType: HarmonyPushType, pushOptions: [UInt8]?, tokens: [String]) {
        self.pushType = pushType
        self.pushOptions = pushOptions
        self.tokens = tokens
    }
}

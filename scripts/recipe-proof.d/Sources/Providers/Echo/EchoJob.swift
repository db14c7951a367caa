import PushCore

/// An echo job: the envelope's `token` and `payload`, and its own member `note` (a string, at most 200 bytes).
public struct EchoJob: Sendable, Equatable {
    public var token: String
    public var note: String?

    public init(token: String, note: String? = nil) {
        self.token = token
        self.note = note
    }

    static let members = [JobMember("note")]

    static func read(_ job: [UInt8], spec: JobSpec) throws(JobError) -> EchoJob {
        guard let token = spec.token, !token.isEmpty, spec.tokens == nil else {
            throw JobError.member(code: "echo_token", description: "an echo job names one \"token\"")
        }
        guard spec.payloadValue != nil else { throw JobError.missingPayload }
        let note = try spec.readMembers(of: .echo, in: job) { (m: JobMemberReader) throws(JobError) -> String? in try m.string(0, "note") }
        if let note, note.utf8.count > 200 { throw JobError.member(code: "echo_note", description: "\"note\" is at most 200 bytes") }
        return EchoJob(token: token, note: note)
    }
}

/// What the echo sender needs beyond the envelope: the note.
public struct EchoFields: ProviderFields, Equatable {
    public var note: String?
    public func isEqual(to other: any ProviderFields) -> Bool { (other as? EchoFields) == self }
}

import PushCore

/// An APNs job's own members, read by `APNsProvider.readJob` from the slices the parser kept.
public struct APNsJob: Sendable, Equatable {
    public var environment: APNsEnvironment?
    public var pushType: PushType = .alert
    public var priority: Int?
    public var collapseID: String?
    public var apnsID: String?
    /// A broadcast channel ID (`apns-channel-id`) instead of a device token.
    public var channel: String?

    /// Its members, in the order `read` asks for them.
    static let members: [JobMember] = [
        JobMember("environment"), JobMember("push_type"), JobMember("priority"), JobMember("collapse_id"), JobMember("apns_id"),
        // A broadcast's target: with a payload, the job has APNs' shape, as with a token.
        JobMember("channel", shape: .target),
    ]

    /// Reads the members and judges what APNs rules of the envelope: a token's form, one target, a payload object.
    static func read(_ job: [UInt8], spec: JobSpec) throws(JobError) -> APNsJob {
        var read = !spec.hasMembers(of: .apns) ? APNsJob() : try spec.readMembers(of: .apns, in: job) { (m: JobMemberReader) throws(JobError) -> APNsJob in
            var read = APNsJob()
            if let raw = try m.string(0, "environment") {
                guard let environment = APNsEnvironment(rawValue: raw) else { throw JobError.badEnvironment(raw) }
                read.environment = environment
            }
            if let raw = try m.string(1, "push_type") {
                guard let type = PushType(rawValue: raw) else { throw JobError.unknownPushType(raw) }
                read.pushType = type
            }
            if let v = try m.integer(2, "priority") {
                guard v >= Int64(Int32.min) && v <= Int64(Int32.max) else { throw JobError.outOfRange(field: "priority") }
                read.priority = Int(v)
            }
            read.collapseID = try m.string(3, "collapse_id")
            read.apnsID = try m.string(4, "apns_id")
            if let channel = try m.string(5, "channel") {
                guard Broadcast.isValidChannelID(channel) else { throw JobError.badChannel }
                read.channel = channel
            }
            return read
        }
        if let payload = spec.payloadValue, payload.kind != .object { throw JobError.payloadNotAnObject }
        if read.channel != nil {
            // A broadcast: one target only, and a Live Activity update unless the job says otherwise (which the
            // validator then refuses with Apple's InvalidPushType).
            if spec.token != nil || spec.tokens != nil { throw JobError.tokenAndChannel }
            if !spec.members.isNamed(.apns, 1) { read.pushType = .liveactivity }
        } else {
            if spec.token != nil && spec.tokens != nil { throw JobError.badTokens("give either \"token\" or \"tokens\", not both") }
            guard spec.token != nil || spec.tokens != nil else { throw JobError.missingToken }
            if let token = spec.token, !isHexToken(token) { throw JobError.tokenNotHex }
        }
        guard spec.payloadValue != nil else { throw JobError.missingPayload }
        return read
    }

    /// The notification once the worker has resolved topic and environment (job value or app default); a job
    /// naming a `channel` becomes a broadcast to the app's `bundleID`.
    public func notification(_ spec: JobSpec, topic: String, environment: APNsEnvironment, bundleID: String = "") -> PushNotification {
        let target: PushTarget = if let channel { .channel(id: channel, bundleID: bundleID) } else { .device(token: spec.token ?? "") }
        return .apns(target: target, topic: topic, environment: environment, pushType: pushType, priority: priority,
                     expiration: spec.expiration, collapseID: collapseID, apnsID: apnsID, payload: spec.payload)
    }
}

/// APNs' own refusals of its members, with the codes and words they always had.
extension JobError {
    public static func unknownPushType(_ value: String) -> JobError {
        .member(code: "unknown_push_type", description: "\"push_type\" \"\(value.prefix(64))\" is unknown; expected one of "
                + PushType.allCases.map(\.rawValue).joined(separator: ", "))
    }

    public static let badChannel = JobError.member(
        code: "bad_channel", description: "\"channel\" is not a channel ID as APNs sends it (base64, at most \(Broadcast.maxChannelIDBytes) characters)")
}

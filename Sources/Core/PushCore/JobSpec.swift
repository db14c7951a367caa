import Basics

/// A job as the producer wrote it, before the worker fills in defaults from configuration.
/// `payload` holds the exact bytes of the job's `"payload"` value.
public struct JobSpec: Sendable, Equatable {
    public var id: String?
    public var token: String?
    /// `tokens`: a multicast job, one payload for each of these (as listed; duplicates are removed later).
    public var tokens: [String]?
    /// The bytes of the `"tokens": [...]` member, key to closing bracket: replaced by `"token":"<t>"` to make
    /// each token's own job from this one.
    public var tokensMember: Range<Int>?
    /// The bytes of a `"token": null` member (null counts as absent): left out of each token's own job, which
    /// would otherwise name `token` twice.
    public var nullTokenMember: Range<Int>?
    /// A broadcast channel ID (`apns-channel-id`) instead of a device token.
    public var channel: String?
    public var topic: String?
    public var environment: APNsEnvironment?
    public var app: String?
    public var pushType: PushType = .alert
    public var priority: Int?
    public var expiration: Int64?
    /// `deliver_at`: not before this time (ms since the epoch); nil sends at once.
    public var deliverAt: Int64?
    public var collapseID: String?
    public var apnsID: String?
    /// A W3C `traceparent` the producer gave (valid ones only): carried into the job's result entries and log lines.
    public var traceparent: String?
    /// `"validate_only": true`: every check, FCM's own dry run, and a `validated` outcome instead of a delivery.
    public var validateOnly = false
    public var payload: [UInt8] = []
    /// `platform` as the job gave it, else its shape: a `message` and no `payload` make an FCM job.
    public var platform: Platform = .apns
    /// True when the job said `platform` itself (then the app it names must be of that kind).
    public var platformGiven = false
    /// The exact bytes of an FCM job's `"message"` object.
    public var message: [UInt8] = []
    /// A Web Push job's `subscription` object, its bytes as given; `ttl` (seconds) and `urgency` as given.
    public var subscription: [UInt8] = []
    /// `subscriptions`: a Web Push multicast, each object's bytes as given.
    public var subscriptions: [[UInt8]]?
    /// The bytes of the `"subscriptions": [...]` member, key to closing bracket: replaced by
    /// `"subscription":<s>` to make each subscription's own job.
    public var subscriptionsMember: Range<Int>?
    public var ttl: Int64?
    public var urgency: String?

    public init() {}

    /// A multicast job's tokens, each once (a device listed twice gets one notification; compared in lower case,
    /// as APNs reads them), in the producer's order.
    public var uniqueTokens: [String]? {
        guard let tokens else { return nil }
        var seen = Set<String>()
        seen.reserveCapacity(tokens.count)
        return tokens.filter { seen.insert($0.lowercased()).inserted }
    }

    /// A Web Push multicast's subscriptions, each once (byte for byte), in the producer's order.
    public var uniqueSubscriptions: [String]? {
        guard let subscriptions else { return nil }
        var seen = Set<[UInt8]>()
        return subscriptions.filter { seen.insert($0).inserted }.map { String(decoding: $0, as: UTF8.self) }
    }

    /// A Web Push multicast's bytes before and after its `"subscriptions":[...]` member, with `"subscription":`
    /// added: each subscription's own job is prefix + the subscription's bytes + suffix.
    public func subscriptionJobParts(of job: [UInt8]) -> (prefix: [UInt8], suffix: [UInt8])? {
        guard let member = subscriptionsMember else { return nil }
        return (Array(job[..<member.lowerBound]) + Array(#""subscription":"#.utf8), Array(job[member.upperBound...]))
    }

    /// A multicast job's bytes (`job`, the ones this spec was parsed from) before and after its `"tokens":[...]`
    /// member, with `"token":"` and `"` added: each token's own job is prefix + token + suffix.
    public func tokenJobParts(of job: [UInt8]) -> (prefix: [UInt8], suffix: [UInt8])? {
        guard var member = tokensMember else { return nil }
        var job = job
        if let null = nullTokenMember {
            let cut = Self.memberWithItsComma(null, in: job)
            job.removeSubrange(cut)
            if cut.upperBound <= member.lowerBound { member = (member.lowerBound - cut.count)..<(member.upperBound - cut.count) }
        }
        var prefix = Array(job[..<member.lowerBound])
        prefix.append(contentsOf: Array(#""token":""#.utf8))
        var suffix: [UInt8] = [UInt8(ascii: "\"")]
        suffix.append(contentsOf: job[member.upperBound...])
        return (prefix, suffix)
    }

    /// An object member's bytes with the comma that separates it from its neighbour (the one after it, else the
    /// one before it), so that removing them leaves valid JSON. The object has another member (`tokens`).
    private static func memberWithItsComma(_ member: Range<Int>, in job: [UInt8]) -> Range<Int> {
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
        var after = member.upperBound
        while after < job.count, isSpace(job[after]) { after += 1 }
        if after < job.count, job[after] == UInt8(ascii: ",") { return member.lowerBound..<(after + 1) }
        var before = member.lowerBound - 1
        while before > 0, job[before] != UInt8(ascii: ",") { before -= 1 }
        return before..<member.upperBound
    }

    /// The notification once the worker has resolved topic and environment (job value or app default); a job
    /// naming a `channel` becomes a broadcast to the app's `bundleID`.
    public func notification(topic: String, environment: APNsEnvironment, bundleID: String = "") -> PushNotification {
        let target: PushTarget = if let channel { .channel(id: channel, bundleID: bundleID) } else { .device(token: token ?? "") }
        return PushNotification(
            target: target, topic: topic, environment: environment, pushType: pushType,
            priority: priority, expiration: expiration, collapseID: collapseID, apnsID: apnsID, payload: payload)
    }
}

/// Why a job cannot even be read; such jobs go to the dead-letter list with `description` as reason.
public enum JobError: Error, Equatable, Sendable, CustomStringConvertible {
    case notJSON(JSONScanError)
    case notAnObject
    case missingToken
    case tokenNotHex
    case missingPayload
    case payloadNotAnObject
    case badEnvironment(String)
    case unknownPushType(String)
    case wrongType(field: String, expected: String)
    case outOfRange(field: String)
    case duplicateField(String)
    case badDeliverAt
    case badTokens(String)
    case tooManyTokens(limit: Int)
    case badChannel
    case tokenAndChannel
    case badPlatform(String)
    /// A job for a provider whose jobs carry its own `message` (FCM, Push Kit) has none.
    case missingMessage(Platform)
    case messageNotAnObject
    case missingSubscription
    case subscriptionNotAnObject

    /// A short stable code for machines (dead-letter entries, metrics).
    public var code: String {
        switch self {
        case .notJSON: "not_json"
        case .notAnObject: "not_object"
        case .missingToken: "missing_token"
        case .tokenNotHex: "bad_token"
        case .missingPayload: "missing_payload"
        case .payloadNotAnObject: "payload_not_object"
        case .badEnvironment: "bad_environment"
        case .unknownPushType: "unknown_push_type"
        case .wrongType: "wrong_type"
        case .outOfRange: "out_of_range"
        case .duplicateField: "duplicate_field"
        case .badDeliverAt: "bad_deliver_at"
        case .badTokens: "bad_tokens"
        case .tooManyTokens: "too_many_tokens"
        case .badChannel: "bad_channel"
        case .tokenAndChannel: "token_and_channel"
        case .badPlatform: "bad_platform"
        case .missingMessage: "missing_message"
        case .messageNotAnObject: "message_not_object"
        case .missingSubscription: "missing_subscription"
        case .subscriptionNotAnObject: "subscription_not_object"
        }
    }

    public var description: String {
        switch self {
        case .notJSON(let e): return "job is not valid JSON: \(e)"
        case .notAnObject: return "job is not a JSON object"
        case .missingToken: return "job has no \"token\" (nor \"tokens\", nor \"channel\" for a broadcast)"
        case .tokenNotHex: return "\"token\" is not a non-empty, even-length hexadecimal string"
        case .missingPayload: return "job has no \"payload\""
        case .payloadNotAnObject: return "\"payload\" is not a JSON object"
        case .badEnvironment(let v): return "\"environment\" is \"\(v.prefix(64))\"; expected production or sandbox"
        case .unknownPushType(let v):
            return "\"push_type\" \"\(v.prefix(64))\" is unknown; expected one of "
                + PushType.allCases.map(\.rawValue).joined(separator: ", ")
        case .wrongType(let f, let expected): return "\"\(f)\" must be \(expected)"
        case .outOfRange(let f): return "\"\(f)\" is out of range"
        case .duplicateField(let f): return "\"\(f)\" appears more than once"
        case .badTokens(let why): return why
        case .tooManyTokens(let limit): return "\"tokens\" lists more than \(limit) device tokens; split the job"
        case .badChannel:
            return "\"channel\" is not a channel ID as APNs sends it (base64, at most \(Broadcast.maxChannelIDBytes) characters)"
        case .tokenAndChannel: return "job names \"channel\" and a device token (\"token\" or \"tokens\"); a broadcast has none"
        case .badPlatform(let v): return "\"platform\" is \"\(v.prefix(64))\"; expected " + Platform.allCases.map(\.rawValue).joinedAsList("or")
        case .missingMessage(let platform):
            return "a \(platform.displayName) job needs a \"message\" (the provider's own message object)"
        case .messageNotAnObject: return "\"message\" is not a JSON object"
        case .missingSubscription: return "a Web Push job needs a \"subscription\" (the browser's PushSubscription.toJSON())"
        case .subscriptionNotAnObject: return "\"subscription\" is not a JSON object"
        case .badDeliverAt: return "\"deliver_at\" must be milliseconds since the epoch or an RFC 3339 time such as 2026-12-24T18:00:00Z"
        }
    }
}

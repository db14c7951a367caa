import Basics

/// A job's envelope as the producer wrote it, before the worker fills in defaults from configuration: what every
/// job has (its id, app, platform, device token or tokens, payload, times, trace), read by the parser, and the
/// slices of its provider's own members (`members`), which that provider reads (`PushProvider.readJob`).
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
    /// The job's topic: APNs' `apns-topic` (which also finds the app), Web Push's `Topic`.
    public var topic: String?
    public var app: String?
    /// Not worth delivering after this (UNIX seconds; 0 = try once): APNs' `apns-expiration`, every provider's give-up time.
    public var expiration: Int64?
    /// `deliver_at`: not before this time (ms since the epoch); nil sends at once.
    public var deliverAt: Int64?
    /// A W3C `traceparent` the producer gave (valid ones only): carried into the job's result entries and log lines.
    public var traceparent: String?
    /// `"validate_only": true`: every check, the provider's own dry run, and a `validated` outcome instead of a delivery.
    public var validateOnly = false
    public var payload: [UInt8] = []
    /// The `payload` value as scanned (its kind: a provider judges it), nil when absent.
    public var payloadValue: JSONToken?
    /// `platform` as the job gave it, else its shape (`JobMember.Shape`).
    public var platform: Platform = .apns
    /// True when the job said `platform` itself (then the app it names must be of that kind).
    public var platformGiven = false
    /// Its providers' members, sliced.
    public var members: JobMembers

    public init(members table: JobMemberTable = .none) { members = JobMembers(table: table) }

    /// A multicast job's tokens, each once (a device listed twice gets one notification; compared in lower case,
    /// as APNs reads them), in the producer's order.
    public var uniqueTokens: [String]? {
        guard let tokens else { return nil }
        var seen = Set<String>()
        seen.reserveCapacity(tokens.count)
        return tokens.filter { seen.insert($0.lowercased()).inserted }
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
        var (prefix, suffix) = Self.jobParts(of: job, replacing: member, with: #""token":""#)
        suffix.insert(UInt8(ascii: "\""), at: 0)
        return (prefix, suffix)
    }

    /// A job's bytes before and after one of its members (`member`, key to the end of its value), with `key` added
    /// to the prefix: each element's own job of a multicast is prefix + the element + suffix.
    public static func jobParts(of job: [UInt8], replacing member: Range<Int>, with key: String) -> (prefix: [UInt8], suffix: [UInt8]) {
        (Array(job[..<member.lowerBound]) + Array(key.utf8), Array(job[member.upperBound...]))
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
    case wrongType(field: String, expected: String)
    case outOfRange(field: String)
    case duplicateField(String)
    case badDeliverAt
    case badTokens(String)
    case tooManyTokens(limit: Int)
    case tokenAndChannel
    case badPlatform(String)
    /// A job for a provider whose jobs carry its own `message` (FCM, Push Kit) has none.
    case missingMessage(Platform)
    case messageNotAnObject
    case missingSubscription
    case subscriptionNotAnObject
    /// A provider's own refusal of its members (`PushProvider.readJob`): its code and its words, so a new provider
    /// adds no case here.
    case member(code: String, description: String)

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
        case .wrongType: "wrong_type"
        case .outOfRange: "out_of_range"
        case .duplicateField: "duplicate_field"
        case .badDeliverAt: "bad_deliver_at"
        case .badTokens: "bad_tokens"
        case .tooManyTokens: "too_many_tokens"
        case .tokenAndChannel: "token_and_channel"
        case .badPlatform: "bad_platform"
        case .missingMessage: "missing_message"
        case .messageNotAnObject: "message_not_object"
        case .missingSubscription: "missing_subscription"
        case .subscriptionNotAnObject: "subscription_not_object"
        case .member(let code, _): code
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
        case .wrongType(let f, let expected): return "\"\(f)\" must be \(expected)"
        case .outOfRange(let f): return "\"\(f)\" is out of range"
        case .duplicateField(let f): return "\"\(f)\" appears more than once"
        case .badTokens(let why): return why
        case .tooManyTokens(let limit): return "\"tokens\" lists more than \(limit) device tokens; split the job"
        case .tokenAndChannel: return "job names \"channel\" and a device token (\"token\" or \"tokens\"); a broadcast has none"
        case .badPlatform(let v): return "\"platform\" is \"\(v.prefix(64))\"; expected " + Platform.allCases.map(\.rawValue).joinedAsList("or")
        case .missingMessage(let platform):
            return "a \(platform.displayName) job needs a \"message\" (the provider's own message object)"
        case .messageNotAnObject: return "\"message\" is not a JSON object"
        case .missingSubscription: return "a Web Push job needs a \"subscription\" (the browser's PushSubscription.toJSON())"
        case .subscriptionNotAnObject: return "\"subscription\" is not a JSON object"
        case .member(_, let description): return description
        case .badDeliverAt: return "\"deliver_at\" must be milliseconds since the epoch or an RFC 3339 time such as 2026-12-24T18:00:00Z"
        }
    }
}

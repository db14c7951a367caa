import PushCore

/// A Web Push job, checked whole at intake (so a bad one is rejected with its reason, never sent): the
/// subscription, the payload's size after encryption, `ttl`, `urgency`, `topic`, and the app's allow-list.
public enum WebPushJob {
    /// The message the job asks for, or the reason it cannot be sent.
    public static func message(_ read: WebPushJobMembers, topic: String?, policy: PushServicePolicy) -> Result<WebPushMessage, WebPushJobError> {
        let subscription: PushSubscription
        do { subscription = try PushSubscription.parse(read.subscription) } catch { return .failure(.init("BadSubscription: \(error)")) }
        do { try policy.check(subscription.endpoint) } catch { return .failure(.init("EndpointRefused: \(error)")) }
        var urgency: WebPushMessage.Urgency?
        if let text = read.urgency {
            guard let value = WebPushMessage.Urgency(rawValue: text) else {
                return .failure(.init("BadUrgency: \"urgency\" is \"\(text.prefix(64))\"; expected very-low, low, normal or high"))
            }
            urgency = value
        }
        do {
            return .success(try WebPushMessage(subscription: subscription, payload: read.payload, ttl: read.ttl, urgency: urgency, topic: topic))
        } catch .payloadTooLarge(let n) {
            return .failure(.init("PayloadTooLarge: " + WebPushMessageError.payloadTooLarge(n).description))
        } catch {
            return .failure(.init("BadMessage: \(error)"))
        }
    }
}

/// A Web Push job's own members, read by `WebPushProvider.readJob` from the slices the parser kept: the
/// subscription's bytes as given (or a multicast's), RFC 8030's `TTL` and `Urgency` as given, and the payload to
/// encrypt (a string's text, any other value's bytes).
public struct WebPushJobMembers: Sendable, Equatable {
    public var subscription: [UInt8] = []
    /// `subscriptions`: a multicast, each object's bytes as given.
    public var subscriptions: [[UInt8]]?
    /// The bytes of the `"subscriptions": [...]` member, key to closing bracket: replaced by `"subscription":<s>` to
    /// make each subscription's own job.
    public var subscriptionsMember: Range<Int>?
    public var ttl: Int64?
    public var urgency: String?
    public var payload: [UInt8] = []

    public init() {}

    /// Its members, in the order `read` asks for them: either subscription member, without a token, makes a job
    /// that names no platform a Web Push job.
    static let members: [JobMember] = [
        JobMember("subscription", shape: .impliesPlatform(withoutPayload: false)),
        JobMember("subscriptions", shape: .impliesPlatform(withoutPayload: false)),
        JobMember("ttl"), JobMember("urgency"),
    ]

    static func read(_ job: [UInt8], spec: JobSpec) throws(JobError) -> WebPushJobMembers {
        try spec.readMembers(of: .webpush, in: job) { (m: JobMemberReader) throws(JobError) -> WebPushJobMembers in
            var read = WebPushJobMembers()
            let one = m.slice(0)?.value
            if let many = m.slice(1) {
                guard many.value.kind == .array else { throw JobError.badTokens("\"subscriptions\" must be a list of push subscriptions") }
                read.subscriptions = try JobParser.objects(many.value, m.scanner, name: "subscriptions")
                read.subscriptionsMember = many.range
                if one != nil { throw JobError.badTokens("give either \"subscription\" or \"subscriptions\", not both") }
            }
            // Its range is the provider's rule (`BadMessage`), as documented there.
            read.ttl = try m.integer(2, "ttl")
            read.urgency = try m.string(3, "urgency")
            guard one != nil || read.subscriptions != nil else { throw JobError.missingSubscription }
            if let one {
                guard one.kind == .object else { throw JobError.subscriptionNotAnObject }
                read.subscription = m.bytes(one)
            }
            guard let payload = spec.payloadValue else { throw JobError.missingPayload }
            // A string payload is sent as its text; any other value as its JSON bytes.
            read.payload = payload.kind == .string ? Array(m.scanner.stringValue(payload).utf8) : spec.payload
            return read
        }
    }

    /// A multicast's subscriptions, each once (byte for byte), in the producer's order.
    public var uniqueSubscriptions: [String]? {
        guard let subscriptions else { return nil }
        var seen = Set<[UInt8]>()
        return subscriptions.filter { seen.insert($0).inserted }.map { String(decoding: $0, as: UTF8.self) }
    }

    /// A multicast's bytes before and after its `"subscriptions":[...]` member, with `"subscription":` added: each
    /// subscription's own job is prefix + the subscription's bytes + suffix.
    public func subscriptionJobParts(of job: [UInt8]) -> (prefix: [UInt8], suffix: [UInt8])? {
        subscriptionsMember.map { JobSpec.jobParts(of: job, replacing: $0, with: #""subscription":"#) }
    }

    /// The notification the core carries for a Web Push job: its endpoint as the token (results and the
    /// dropped-tokens stream name it), its topic, payload and subscription.
    public func notification(_ message: WebPushMessage, expiration: Int64?) -> PushNotification {
        PushNotification(deviceToken: message.subscription.endpoint.url, topic: message.topic ?? "", environment: .production,
                         expiration: expiration, payload: payload, platform: .webpush,
                         provider: WebPushFields(subscription: subscription, ttl: ttl, urgency: urgency))
    }
}

public struct WebPushJobError: Error, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

extension PushNotification {
    /// The Web Push message back from a notification made by `webPushNotification` (the sender's side).
    func webPushMessage() throws -> WebPushMessage {
        guard let fields = provider as? WebPushFields else { throw WebPushJobError("not a Web Push notification") }
        let subscription: PushSubscription
        do { subscription = try PushSubscription.parse(fields.subscription) } catch { throw WebPushJobError("BadSubscription: \(error)") }
        return try WebPushMessage(subscription: subscription, payload: payload, ttl: fields.ttl,
                                  urgency: fields.urgency.flatMap(WebPushMessage.Urgency.init(rawValue:)), topic: topic.isEmpty ? nil : topic)
    }
}

/// What a Web Push notification carries besides its payload: the subscription object's bytes as the producer wrote
/// them (the sender parses and checks it again), and RFC 8030's `TTL` and `Urgency` (its `Topic` is the envelope's).
public struct WebPushFields: ProviderFields, Equatable {
    public var subscription: [UInt8]
    public var ttl: Int64?
    public var urgency: String?

    public init(subscription: [UInt8], ttl: Int64? = nil, urgency: String? = nil) {
        self.subscription = subscription
        self.ttl = ttl
        self.urgency = urgency
    }
}

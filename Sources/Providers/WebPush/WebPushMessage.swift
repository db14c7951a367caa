/// One push message (RFC 8030 section 5) for one subscription: its payload before encryption and the headers
/// that go with it, checked whole so that a bad one is the producer's error, never a request.
public struct WebPushMessage: Sendable, Equatable {
    public let subscription: PushSubscription
    /// The payload as the job gave it: a string's UTF-8 bytes, or the bytes of any other JSON value.
    public let payload: [UInt8]
    /// `TTL`: how long the push service keeps the message for an offline browser, in seconds.
    public let ttl: Int64
    public let urgency: Urgency?
    /// `Topic`: a newer message with the same topic replaces one still waiting.
    public let topic: String?

    /// Four weeks: what the largest push services keep at most (and web-push libraries send by default).
    public static let defaultTTL: Int64 = 2_419_200
    public static let maxTopicLength = 32

    public enum Urgency: String, Sendable, CaseIterable {
        case veryLow = "very-low", low, normal, high
    }

    public init(subscription: PushSubscription, payload: [UInt8], ttl: Int64? = nil, urgency: Urgency? = nil, topic: String? = nil)
        throws(WebPushMessageError)
    {
        guard payload.count <= MessageEncryption.maxPayloadLength else { throw .payloadTooLarge(payload.count) }
        let ttl = ttl ?? Self.defaultTTL
        guard ttl >= 0, ttl <= Self.defaultTTL else { throw .badTTL(ttl) }
        if let topic {
            // RFC 8030 section 5.4: at most 32 characters of the base64url alphabet.
            guard !topic.isEmpty, topic.utf8.count <= Self.maxTopicLength,
                  topic.utf8.allSatisfy({ isBase64URLCharacter($0) && $0 != UInt8(ascii: "=") })
            else { throw .badTopic(topic) }
        }
        self.subscription = subscription
        self.payload = payload
        self.ttl = ttl
        self.urgency = urgency
        self.topic = topic
    }

    /// The request: encrypted body (fresh key and salt; by `encryptor` when the caller keeps one) and the headers,
    /// the `Authorization` from the cache.
    public func request(vapid: VAPIDTokenCache, now: Int64, encryptor: MessageEncryptor? = nil) throws(WebPushMessageError) -> WebPushRequest {
        let body: [UInt8]
        do { body = try (encryptor ?? MessageEncryptor()).encrypt(payload, for: subscription) } catch { throw .encryption("\(error)") }
        let authorization: String
        do { authorization = try vapid.authorization(origin: subscription.endpoint.origin, now: now) } catch {
            throw .vapid(error.description)
        }
        var headers: [(String, String)] = [
            ("ttl", String(ttl)), ("content-encoding", "aes128gcm"), ("content-type", "application/octet-stream"),
            ("authorization", authorization),
        ]
        if let urgency { headers.append(("urgency", urgency.rawValue)) }
        if let topic { headers.append(("topic", topic)) }
        return WebPushRequest(endpoint: subscription.endpoint, headers: headers, body: body)
    }
}

/// What goes on the wire: `POST <endpoint path>` to the endpoint's origin.
public struct WebPushRequest: Sendable {
    public let endpoint: PushEndpoint
    /// Lowercase names, as HTTP/2 sends them; `authorization` is never to be indexed.
    public let headers: [(String, String)]
    public let body: [UInt8]
}

public enum WebPushMessageError: Error, Equatable, Sendable, CustomStringConvertible {
    case payloadTooLarge(Int)
    case badTTL(Int64)
    case badTopic(String)
    case encryption(String)
    case vapid(String)

    public var description: String {
        switch self {
        case .payloadTooLarge(let n):
            return "payload is \(n) bytes; Web Push carries at most \(MessageEncryption.maxPayloadLength) (4096 once encrypted)"
        case .badTTL(let t): return "\"ttl\" is \(t); expected 0 to \(WebPushMessage.defaultTTL) seconds"
        case .badTopic(let t):
            return "\"topic\" \"\(t.prefix(64))\" is not 1 to 32 characters of the base64url alphabet (RFC 8030 section 5.4)"
        case .encryption(let d): return d
        case .vapid(let d): return "VAPID signing failed: \(d)"
        }
    }
}

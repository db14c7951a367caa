import PushCore

/// A browser's push subscription as `PushSubscription.toJSON()` gives it: `endpoint`, `keys.p256dh`,
/// `keys.auth` (and `expirationTime`, read and ignored). Checked whole before anything is sent: a bad one is
/// the producer's error, never a request.
public struct PushSubscription: Sendable, Equatable {
    public let endpoint: PushEndpoint
    /// The subscriber's P-256 public key, uncompressed (0x04 || x || y).
    public let p256dh: [UInt8]
    /// The subscriber's 16-byte authentication secret (RFC 8291 section 3.2).
    public let auth: [UInt8]

    public static let publicKeyLength = 65
    public static let authSecretLength = 16

    public init(endpoint: PushEndpoint, p256dh: [UInt8], auth: [UInt8]) throws(SubscriptionError) {
        guard p256dh.count == Self.publicKeyLength, p256dh.first == 0x04 else {
            throw .badKey(field: "keys.p256dh", detail: "is \(p256dh.count) bytes, not a 65-byte uncompressed P-256 point")
        }
        guard isP256Point(p256dh) else {
            throw .badKey(field: "keys.p256dh", detail: "is not a point on P-256")
        }
        guard auth.count == Self.authSecretLength else {
            throw .badKey(field: "keys.auth", detail: "is \(auth.count) bytes, not 16")
        }
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
    }

    /// Parses the subscription object's bytes.
    public static func parse(_ bytes: [UInt8]) throws(SubscriptionError) -> PushSubscription {
        var endpoint: String?
        var p256dh: String?
        var auth: String?
        var notAString: String?
        do {
            try bytes.withUnsafeBufferPointer { (buffer) throws(JSONScanError) in
                var scanner = JSONScanner(buffer)
                try scanner.beginObject()
                var first = true
                while let (key, value) = try scanner.nextMember(first: &first) {
                    if scanner.stringEquals(key, "endpoint") {
                        if value.kind == .string { endpoint = scanner.stringValue(value) } else { notAString = "endpoint" }
                    } else if scanner.stringEquals(key, "keys"), value.kind == .object {
                        var inner = JSONScanner(UnsafeBufferPointer(rebasing: buffer[value.range]))
                        try inner.beginObject()
                        var innerFirst = true
                        while let (k, v) = try inner.nextMember(first: &innerFirst) {
                            let name = inner.stringEquals(k, "p256dh") ? "keys.p256dh" : inner.stringEquals(k, "auth") ? "keys.auth" : nil
                            guard let name else { continue }
                            guard v.kind == .string else { notAString = name; continue }
                            if name == "keys.p256dh" { p256dh = inner.stringValue(v) } else { auth = inner.stringValue(v) }
                        }
                    }
                }
                try scanner.expectEnd()
            }
        } catch {
            throw .notJSON(detail: "\(error)")
        }
        if let notAString { throw .notAString(notAString) }
        guard let endpoint else { throw .missing("endpoint") }
        guard let p256dh else { throw .missing("keys.p256dh") }
        guard let auth else { throw .missing("keys.auth") }
        let parsedEndpoint = try PushEndpoint(endpoint)
        guard let key = base64URLDecoded(p256dh), p256dh.utf8.allSatisfy(isBase64URLCharacter) else {
            throw .badKey(field: "keys.p256dh", detail: "is not base64url")
        }
        guard let secret = base64URLDecoded(auth), auth.utf8.allSatisfy(isBase64URLCharacter) else {
            throw .badKey(field: "keys.auth", detail: "is not base64url")
        }
        return try PushSubscription(endpoint: parsedEndpoint, p256dh: key, auth: secret)
    }

    /// The subscription as `toJSON()` would give it (tools, tests, the simulator's minted subscriptions).
    public var json: String {
        var writer = JSONWriter(capacity: 200)
        writer.beginObject()
        writer.field("endpoint", endpoint.url)
        writer.key("keys")
        writer.beginObject()
        writer.field("p256dh", base64URLEncoded(p256dh))
        writer.field("auth", base64URLEncoded(auth))
        writer.endObject()
        writer.endObject()
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

/// base64url's alphabet plus its optional padding (standard base64's `+` and `/` are refused).
func isBase64URLCharacter(_ b: UInt8) -> Bool {
    switch b {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
         UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "="):
        return true
    default: return false
    }
}

/// Why a subscription cannot be used; each names the field to fix.
public enum SubscriptionError: Error, Equatable, Sendable, CustomStringConvertible {
    case notJSON(detail: String)
    case missing(String)
    case notAString(String)
    case badEndpoint(String)
    case badKey(field: String, detail: String)

    public var description: String {
        switch self {
        case .notJSON(let d): return "subscription is not a JSON object: \(d)"
        case .missing(let f): return "subscription has no \(f)"
        case .notAString(let f): return "subscription \(f) is not a string"
        case .badEndpoint(let d): return "subscription endpoint \(d)"
        case .badKey(let f, let d): return "subscription \(f) \(d)"
        }
    }
}

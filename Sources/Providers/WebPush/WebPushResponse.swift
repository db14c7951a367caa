import Basics
import PushCore

/// One push service's answer to a message (RFC 8030 section 5), decoded. Never fails: the services answer in
/// their own shapes (Apple `{"reason":"BadJwtToken"}`, Mozilla `{"errno":109,"message":...}`, Google plain
/// text), so the status decides and the body only names the reason.
public struct WebPushResponse: Sendable, Equatable {
    public var status: Int
    /// The push message's resource (`Location` of a 201): its id, recorded with the result.
    public var location: String?
    /// The service's own reason: a JSON body's `reason`, `error` or `message` (with Mozilla's `errno`), else the
    /// first line of a text body; bounded like every stored reason.
    public var serviceReason: String?
    /// `Retry-After` in seconds, when the answer had one.
    public var retryAfterSeconds: Int64?

    public init(status: Int, location: String? = nil, serviceReason: String? = nil, retryAfterSeconds: Int64? = nil) {
        self.status = status
        self.location = location
        self.serviceReason = serviceReason
        self.retryAfterSeconds = retryAfterSeconds
    }

    static let maxTextBytes = 256

    public static func decode(status: Int, body: [UInt8], location: String?, retryAfter: String?) -> WebPushResponse {
        WebPushResponse(status: status, location: location.map { BoundedText.truncate($0, maxBytes: 512) },
                        serviceReason: reason(in: body), retryAfterSeconds: retryAfter.flatMap(parseRetryAfterSeconds))
    }

    /// The most specific name: the service's reason, else `HTTP <status>`.
    public var reasonName: String {
        if let serviceReason, !serviceReason.isEmpty { return serviceReason }
        return "HTTP \(status)"
    }

    /// The message id in `Location` (its last path segment), else the whole value.
    public var messageID: String? {
        guard let location, !location.isEmpty else { return nil }
        let last = location.split(separator: "/").last.map(String.init) ?? location
        return last.isEmpty ? location : last
    }

    static func reason(in body: [UInt8]) -> String? {
        guard !body.isEmpty else { return nil }
        let fromJSON: String?? = body.withUnsafeBufferPointer { buffer -> String?? in
            guard (try? JSONScanner.validate(buffer))?.kind == .object else { return .none }
            var scanner = JSONScanner(buffer)
            var found: [String: String] = [:]
            var errno: Int64?
            do {
                try scanner.beginObject()
                var first = true
                while let (key, value) = try scanner.nextMember(first: &first) {
                    let name = scanner.stringValue(key)
                    if value.kind == .string, ["reason", "error", "message"].contains(name) { found[name] = scanner.stringValue(value) }
                    if value.kind == .number, name == "errno" { errno = scanner.int64Value(value) }
                }
            } catch { return .some(nil) }
            let text = found["reason"] ?? found["message"] ?? found["error"]
            guard let text else { return .some(errno.map { "errno \($0)" }) }
            return .some(errno.map { "\(text) (errno \($0))" } ?? text)
        }
        if case .some(let reason) = fromJSON { return reason.map { BoundedText.truncate($0, maxBytes: maxTextBytes) } }
        let firstLine = body.prefix { $0 != 0x0A && $0 != 0x0D }
        guard !firstLine.isEmpty, firstLine.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else { return nil }
        return BoundedText.truncate(String(decoding: firstLine, as: UTF8.self), maxBytes: maxTextBytes)
    }

    /// The answer refuses the VAPID credential rather than this message: any 401, and a 400 or 403 whose reason
    /// names the JWT, VAPID or the key (Apple's `BadJwtToken`, FCM's `VapidPkHashMismatch`...).
    public var refusesVAPID: Bool {
        if status == 401 { return true }
        guard status == 400 || status == 403, let reason = serviceReason?.lowercased() else { return false }
        return ["jwt", "vapid", "crypto-key", "authorization", "public key", "the key"].contains { reason.contains($0) }
    }
}

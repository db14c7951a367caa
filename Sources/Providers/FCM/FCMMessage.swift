import PushCore

/// Where an FCM message goes: exactly one of the targets FCM HTTP v1 knows (`fid`, an installation ID, counts
/// as a token).
public enum FCMTarget: Sendable, Equatable {
    case token(String)
    case topic(String)
    case condition(String)
}

/// Why an FCM message would be refused, with the error name FCM itself answers (always `INVALID_ARGUMENT`
/// for a malformed message) and the field at fault in FCM's notation (`message.data.count`).
public struct FCMValidationFailure: Error, Equatable, Sendable, CustomStringConvertible {
    public var errorCode: String
    public var message: String

    public init(_ message: String, errorCode: String = "INVALID_ARGUMENT") {
        self.errorCode = errorCode
        self.message = message
    }

    public var description: String { "\(errorCode): \(message)" }
}

/// Refuses locally what FCM would refuse (each 400 costs a round trip): the `message` of an FCM job must be an
/// object with exactly one target, known members only, `data` a map of strings without reserved keys, and
/// `notification` + `data` within FCM's size limit. The bytes themselves are never changed. Pure.
///
/// Choices: the size counts the keys and string values of `data` and `notification` (what FCM calls the
/// payload), 4,096 bytes, 2,048 for a topic target; `name` (output only) is allowed, as FCM ignores it.
public enum FCMMessageValidator {
    public static let maxPayloadBytes = 4096
    public static let maxTopicPayloadBytes = 2048
    /// A message's members: FCM reads proto JSON, which accepts the lowerCamelCase spelling of every member as well.
    /// `android_v2` (`AndroidConfigV2`, a preview FCM accepts beside `android`) is passed on as written, like the others.
    enum Member: JSONMemberName {
        case token, fid, topic, condition, name, data, notification, android, androidV2Snake, androidV2, apns, webpush, fcmOptionsSnake, fcmOptions

        /// Its spelling in a message: the targets, `name`, then the objects.
        var spelling: StaticString {
            switch self {
            case .token: "token"
            case .fid: "fid"
            case .topic: "topic"
            case .condition: "condition"
            case .name: "name"
            case .data: "data"
            case .notification: "notification"
            case .android: "android"
            case .androidV2Snake: "android_v2"
            case .androidV2: "androidV2"
            case .apns: "apns"
            case .webpush: "webpush"
            case .fcmOptionsSnake: "fcm_options"
            case .fcmOptions: "fcmOptions"
            }
        }
    }

    /// The target, or the failure FCM would answer.
    public static func validate(_ message: [UInt8]) -> Result<FCMTarget, FCMValidationFailure> {
        message.withUnsafeBufferPointer { buffer in
            do throws(FCMValidationFailure) { return .success(try validate(buffer)) } catch { return .failure(error) }
        }
    }

    /// One pass over the message (`JSONScanner.scanObject`): it is validated and its members checked as they are
    /// scanned, a member's failure counting only once the whole message proved to be JSON.
    static func validate(_ buffer: UnsafeBufferPointer<UInt8>) throws(FCMValidationFailure) -> FCMTarget {
        var target: FCMTarget? = nil
        var targets = 0
        var payloadBytes = 0
        let isObject = try JSONScanner.scanObject(buffer) { (scanner, key, value) throws(FCMValidationFailure) in
            guard let member = Member(key, in: scanner) else {
                throw FCMValidationFailure("Invalid JSON payload received. Unknown name \"\(scanner.stringValue(key).prefix(64))\" at 'message'")
            }
            if value.kind == .null { return }
            let name = member.spelling
            switch member {
            case .token, .fid, .topic, .condition:
                guard value.kind == .string else { throw FCMValidationFailure("message.\(name) must be a string") }
                let text = scanner.stringValue(value)
                guard !text.isEmpty else { throw FCMValidationFailure("message.\(name) must not be empty") }
                let found: FCMTarget
                switch member {
                // A Firebase installation ID addresses one app instance, as a token does.
                case .token, .fid: found = .token(text)
                case .topic:
                    guard isTopicName(text.hasPrefix("/topics/") ? String(text.dropFirst(8)) : text) else {
                        throw FCMValidationFailure("message.topic \"\(text.prefix(64))\" does not match [a-zA-Z0-9-_.~%]+")
                    }
                    found = .topic(text)
                default: found = .condition(text)
                }
                targets += 1
                if target == nil { target = found }
            case .name:
                guard value.kind == .string else { throw FCMValidationFailure("message.name must be a string") }
            default:
                guard value.kind == .object else { throw FCMValidationFailure("message.\(name) must be an object") }
                if member == .data { payloadBytes += try dataBytes(scanner, value) }
                if member == .notification { payloadBytes += notificationBytes(scanner, value) }
            }
        }
        guard isObject else { throw FCMValidationFailure("message must be a JSON object") }
        guard targets == 1, let target else {
            throw FCMValidationFailure(targets == 0 ? "message needs one target: token, topic or condition"
                                                    : "message has \(targets) targets; exactly one of token, topic or condition")
        }
        let limit = if case .topic = target { maxTopicPayloadBytes } else { maxPayloadBytes }
        guard payloadBytes <= limit else {
            throw FCMValidationFailure("message is too big: \(payloadBytes) bytes of data and notification; at most \(limit)")
        }
        return target
    }

    /// The members of the (already validated) object starting at `offset`, keys decoded.
    static func members(_ outer: JSONScanner, at offset: Int) -> [(String, JSONToken)] { outer.members(at: offset) }

    /// `data`: every value a string, no reserved key; returns the bytes of its keys and values.
    private static func dataBytes(_ scanner: JSONScanner, _ object: JSONToken) throws(FCMValidationFailure) -> Int {
        var total = 0
        try scanner.forEachMember(at: object.range.lowerBound) { (key, value) throws(FCMValidationFailure) in
            guard value.kind == .string else {
                throw FCMValidationFailure("message.data.\(scanner.stringValue(key).prefix(64)) must be a string (FCM data values are strings)")
            }
            if isReservedDataKey(key, in: scanner) {
                throw FCMValidationFailure("message.data: \"\(scanner.stringValue(key).prefix(64))\" is a reserved key (from, message_type, google*, gcm*)")
            }
            total += decodedCount(scanner, key) + decodedCount(scanner, value)
        }
        return total
    }

    private static func notificationBytes(_ scanner: JSONScanner, _ object: JSONToken) -> Int {
        var total = 0
        scanner.forEachMember(at: object.range.lowerBound) { key, value in
            total += decodedCount(scanner, key) + (value.kind == .string ? decodedCount(scanner, value) : value.range.count)
        }
        return total
    }

    /// A string token's UTF-8 length once decoded: its raw content when it has no escapes (nothing to decode).
    private static func decodedCount(_ scanner: JSONScanner, _ string: JSONToken) -> Int {
        string.hasEscapes ? scanner.stringValue(string).utf8.count : string.contentRange.count
    }

    /// `isReservedDataKey` of a key token, read in place when it is plain ASCII (where `lowercased` and
    /// `hasPrefix` are byte by byte); any other key is decoded and given to the String version.
    static func isReservedDataKey(_ key: JSONToken, in scanner: JSONScanner) -> Bool {
        let bytes = UnsafeBufferPointer(rebasing: scanner.bytes[key.contentRange])
        guard !key.hasEscapes, bytes.allSatisfy({ $0 < 0x80 }) else { return isReservedDataKey(scanner.stringValue(key)) }
        func lowered(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b | 0x20 : b }
        func equals(_ name: StaticString, prefix: Bool) -> Bool {
            let n = name.utf8CodeUnitCount
            guard prefix ? bytes.count >= n : bytes.count == n else { return false }
            for i in 0..<n where lowered(bytes[i]) != name.utf8Start[i] { return false }
            return true
        }
        return equals("from", prefix: false) || equals("message_type", prefix: false) || equals("google", prefix: true) || equals("gcm", prefix: true)
    }

    /// FCM's reserved data keys: `from`, `message_type`, and anything starting with `google` or `gcm`.
    public static func isReservedDataKey(_ key: String) -> Bool {
        let lower = key.lowercased()
        return lower == "from" || lower == "message_type" || lower.hasPrefix("google") || lower.hasPrefix("gcm")
    }

    /// FCM topic names: `[a-zA-Z0-9-_.~%]+`.
    public static func isTopicName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") || b == UInt8(ascii: ".") || b == UInt8(ascii: "~") || b == UInt8(ascii: "%")
        }
    }
}

extension JobSpec {
    /// An FCM job's notification: the message bytes as the payload, its target as token or topic.
    public func fcmNotification(message: [UInt8], target: FCMTarget) -> PushNotification {
        var token = ""
        var topic = ""
        switch target {
        case .token(let t): token = t
        case .topic(let t): topic = t
        case .condition(let c): topic = c
        }
        return PushNotification(deviceToken: token, topic: topic, environment: .production, expiration: expiration,
                                payload: message, platform: .fcm)
    }
}

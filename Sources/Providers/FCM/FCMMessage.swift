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
    /// FCM reads proto JSON, which accepts the lowerCamelCase spelling of every member as well. `android_v2`
    /// (`AndroidConfigV2`, a preview FCM accepts beside `android`) is passed on as written, like the others.
    static let objectMembers: Set<String> = ["notification", "android", "android_v2", "androidV2", "apns", "webpush", "fcm_options", "fcmOptions", "data"]
    static let knownMembers: Set<String> = objectMembers.union(["token", "fid", "topic", "condition", "name"])

    /// The target, or the failure FCM would answer.
    public static func validate(_ message: [UInt8]) -> Result<FCMTarget, FCMValidationFailure> {
        message.withUnsafeBufferPointer { buffer in
            do throws(FCMValidationFailure) { return .success(try validate(buffer)) } catch { return .failure(error) }
        }
    }

    static func validate(_ buffer: UnsafeBufferPointer<UInt8>) throws(FCMValidationFailure) -> FCMTarget {
        guard (try? JSONScanner.validate(buffer))?.kind == .object else { throw FCMValidationFailure("message must be a JSON object") }
        let scanner = JSONScanner(buffer)
        var targets: [FCMTarget] = []
        var payloadBytes = 0
        for (name, value) in members(scanner, at: 0) {
            guard knownMembers.contains(name) else {
                throw FCMValidationFailure("Invalid JSON payload received. Unknown name \"\(name.prefix(64))\" at 'message'")
            }
            if value.kind == .null { continue }
            switch name {
            case "token", "fid", "topic", "condition":
                guard value.kind == .string else { throw FCMValidationFailure("message.\(name) must be a string") }
                let text = scanner.stringValue(value)
                guard !text.isEmpty else { throw FCMValidationFailure("message.\(name) must not be empty") }
                switch name {
                // A Firebase installation ID addresses one app instance, as a token does.
                case "token", "fid": targets.append(.token(text))
                case "topic":
                    guard isTopicName(text.hasPrefix("/topics/") ? String(text.dropFirst(8)) : text) else {
                        throw FCMValidationFailure("message.topic \"\(text.prefix(64))\" does not match [a-zA-Z0-9-_.~%]+")
                    }
                    targets.append(.topic(text))
                default: targets.append(.condition(text))
                }
            case "name":
                guard value.kind == .string else { throw FCMValidationFailure("message.name must be a string") }
            default:
                guard value.kind == .object else { throw FCMValidationFailure("message.\(name) must be an object") }
                if name == "data" { payloadBytes += try dataBytes(scanner, value) }
                if name == "notification" { payloadBytes += notificationBytes(scanner, value) }
            }
        }
        guard targets.count == 1, let target = targets.first else {
            throw FCMValidationFailure(targets.isEmpty ? "message needs one target: token, topic or condition"
                                                       : "message has \(targets.count) targets; exactly one of token, topic or condition")
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
        for (name, value) in members(scanner, at: object.range.lowerBound) {
            guard value.kind == .string else {
                throw FCMValidationFailure("message.data.\(name.prefix(64)) must be a string (FCM data values are strings)")
            }
            if isReservedDataKey(name) {
                throw FCMValidationFailure("message.data: \"\(name.prefix(64))\" is a reserved key (from, message_type, google*, gcm*)")
            }
            total += name.utf8.count + scanner.stringValue(value).utf8.count
        }
        return total
    }

    private static func notificationBytes(_ scanner: JSONScanner, _ object: JSONToken) -> Int {
        members(scanner, at: object.range.lowerBound).reduce(0) { total, member in
            let value = member.1
            return total + member.0.utf8.count + (value.kind == .string ? scanner.stringValue(value).utf8.count : value.range.count)
        }
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
    public func fcmNotification(target: FCMTarget) -> PushNotification {
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

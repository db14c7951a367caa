import Foundation

/// One `messages:send` body that passed FCM's checks: its target and the `message` bytes as the client sent them.
struct FCMSend {
    var validateOnly: Bool
    /// `token`, or `fid` (a Firebase installation ID, which FCM now recommends in its place).
    var token: String?
    var topic: String?
    var condition: String?
    /// The `message` member's bytes exactly as received.
    var message: [UInt8]
}

/// FCM's checks of a `messages:send` body, at the level of the FCM reference: the body shape (unknown fields and
/// wrong types answered like Google's JSON front end, with a BadRequest detail), exactly one target, a valid
/// token or topic, string-only `data` without reserved keys, the android/apns/webpush shapes, and the size limit.
/// Field names are accepted in proto JSON's two spellings (`fcm_options` and `fcmOptions`).
enum FCMMessageRules {
    /// Payload limit (data keys and values, notification text) for most messages, and for messages to topics.
    static let payloadLimit = 4096
    static let topicPayloadLimit = 2048

    static func parse(body: [UInt8]) -> Result<FCMSend, FCMError> {
        guard let ranges = JSONShape.memberValueRanges(body),
              let root = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return .failure(.badPayload("", "Invalid JSON payload received. Expected a JSON object."))
        }
        var validateOnly = false
        var messageObject: [String: Any]?
        var messageKey = "message"
        for (key, value) in root {
            switch snake(key) {
            case "message":
                guard let object = value as? [String: Any] else { return .failure(typeError("message", "type.googleapis.com/google.firebase.fcm.v1.Message", value)) }
                messageObject = object
                messageKey = key
            case "validate_only":
                guard let flag = value as? Bool else { return .failure(typeError("validate_only", "TYPE_BOOL", value)) }
                validateOnly = flag
            default:
                return .failure(unknownField(key, at: nil))
            }
        }
        guard let message = messageObject, let range = ranges[messageKey] else {
            return .failure(.invalid("message", "Request contains an invalid argument."))
        }
        var send = FCMSend(validateOnly: validateOnly, message: Array(body[range]))
        if let error = check(message, into: &send) { return .failure(error) }
        return .success(send)
    }

    /// proto JSON accepts lowerCamelCase for every field: `fcmOptions` is `fcm_options`.
    static func snake(_ key: String) -> String {
        guard key.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5a }) else { return key }
        var out = ""
        for character in key {
            if character.isUppercase { out += "_" + character.lowercased() } else { out.append(character) }
        }
        return out
    }

    private static func describe(_ value: Any) -> String {
        if let text = value as? String { return "\"\(text)\"" }
        if value is [String: Any] { return "{...}" }
        if value is [Any] { return "[...]" }
        if value is NSNull { return "null" }
        return "\(value)"
    }

    private static func typeError(_ field: String, _ type: String, _ value: Any) -> FCMError {
        .badPayload(field, "Invalid value at '\(field)' (\(type)), \(describe(value))")
    }

    private static func unknownField(_ key: String, at parent: String?) -> FCMError {
        let place = parent.map { " at '\($0)'" } ?? ""
        return .badPayload(parent ?? "", "Invalid JSON payload received. Unknown name \"\(key)\"\(place): Cannot find field.")
    }

    private static func isTokenCharacter(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c == 0x2d || c == 0x5f || c == 0x3a || c == 0x2e
    }

    private static func isTopicCharacter(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || "-_.~%".utf8.contains(c)
    }

    /// A field's kind, for the table-driven shape checks below.
    private enum Kind {
        case string, bool, stringMap, anyObject, priority, duration
        case fields([String: Kind])
    }

    private static let fcmOptions: Kind = .fields(["analytics_label": .string])
    private static let androidShape: [String: Kind] = [
        "collapse_key": .string, "priority": .priority, "ttl": .duration, "restricted_package_name": .string,
        "data": .stringMap, "notification": .anyObject, "fcm_options": fcmOptions, "direct_boot_ok": .bool,
        "bandwidth_constrained_ok": .bool, "restricted_satellite_ok": .bool,
    ]
    /// `AndroidConfigV2` (preview): `android`'s options without `priority` and `notification`, which its two message
    /// kinds (`remote_notification`, `background_sync`) replace.
    private static let androidV2Shape: [String: Kind] = androidShape
        .filter { $0.key != "priority" && $0.key != "notification" }
        .merging(["remote_notification": .anyObject, "background_sync": .anyObject]) { old, _ in old }
    private static let apnsShape: [String: Kind] = [
        "headers": .stringMap, "payload": .anyObject, "live_activity_token": .string,
        "fcm_options": .fields(["analytics_label": .string, "image": .string]),
    ]
    private static let webpushShape: [String: Kind] = [
        "headers": .stringMap, "data": .stringMap, "notification": .anyObject,
        "fcm_options": .fields(["link": .string, "analytics_label": .string]),
    ]
    private static let messageShape: [String: Kind] = [
        "name": .string, "data": .stringMap, "notification": .fields(["title": .string, "body": .string, "image": .string]),
        "android": .fields(androidShape), "android_v2": .fields(androidV2Shape), "apns": .fields(apnsShape), "webpush": .fields(webpushShape),
        "fcm_options": fcmOptions, "token": .string, "topic": .string, "condition": .string, "fid": .string,
    ]

    /// Checks `value` against `kind`; the first problem wins.
    private static func check(_ value: Any, _ kind: Kind, at field: String) -> FCMError? {
        switch kind {
        case .string:
            return value is String ? nil : typeError(field, "TYPE_STRING", value)
        case .bool:
            return value is Bool ? nil : typeError(field, "TYPE_BOOL", value)
        case .anyObject:
            return value is [String: Any] ? nil : typeError(field, "TYPE_MESSAGE", value)
        case .stringMap:
            guard let map = value as? [String: Any] else { return typeError(field, "TYPE_MESSAGE", value) }
            for key in map.keys.sorted() where !(map[key] is String) {
                return typeError("\(field)[\(key)].value", "TYPE_STRING", map[key]!)
            }
            return nil
        case .priority:
            guard let text = value as? String, text == "NORMAL" || text == "HIGH" else {
                return typeError(field, "type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority", value)
            }
            return nil
        case .duration:
            guard let text = value as? String, let seconds = durationSeconds(text) else {
                return typeError(field, "type.googleapis.com/google.protobuf.Duration", value)
            }
            if seconds > 2_419_200 { return .invalid(field, "The TTL must not exceed 28 days (2419200s).") }
            return nil
        case .fields(let shape):
            guard let object = value as? [String: Any] else { return typeError(field, "TYPE_MESSAGE", value) }
            for key in object.keys.sorted() {
                guard let inner = shape[snake(key)] else { return unknownField(key, at: field) }
                if let error = check(object[key]!, inner, at: "\(field).\(snake(key))") { return error }
            }
            return nil
        }
    }

    /// `"3600s"`, `"3.5s"`: protobuf's Duration in JSON. nil when malformed.
    static func durationSeconds(_ text: String) -> Double? {
        guard text.hasSuffix("s") else { return nil }
        let number = text.dropLast()
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), !parts[0].isEmpty, parts[0].allSatisfy(\.isASCII), parts[0].allSatisfy(\.isNumber) else { return nil }
        if parts.count == 2 { guard (1...9).contains(parts[1].count), parts[1].allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil } }
        return Double(number)
    }

    private static func check(_ message: [String: Any], into send: inout FCMSend) -> FCMError? {
        if let error = check(message, .fields(messageShape), at: "message") { return error }
        let targets = ["token", "fid", "topic", "condition"].filter { name in message.keys.contains { snake($0) == name } }
        func string(_ name: String) -> String? { message.first { snake($0.key) == name }?.value as? String }
        if targets.isEmpty { return .invalid("message", "Recipient of the message is not set.") }
        if targets.count > 1 {
            return .badPayload("message", "Invalid value at 'message' (oneof), oneof field 'target' is already set. Cannot set '\(targets[1])'")
        }
        // A Firebase installation ID addresses one app instance as a token does; device fates match either.
        send.token = string("token") ?? string("fid")
        send.topic = string("topic")
        send.condition = string("condition")
        if let token = send.token, token.isEmpty || token.utf8.count > 4096 || !token.utf8.allSatisfy(isTokenCharacter) {
            return .invalidToken
        }
        if var topic = send.topic {
            if topic.hasPrefix("/topics/") { topic.removeFirst(8) }
            guard !topic.isEmpty, topic.utf8.count <= 900, topic.utf8.allSatisfy(isTopicCharacter) else {
                return .invalid("message.topic", "Invalid topic name")
            }
            send.topic = topic
        }
        if let condition = send.condition, condition.trimmingCharacters(in: .whitespaces).isEmpty {
            return .invalid("message.condition", "Invalid condition expression")
        }
        var payloadBytes = 0
        if let data = message.first(where: { snake($0.key) == "data" })?.value as? [String: String] {
            for (key, value) in data {
                let lower = key.lowercased()
                if lower == "from" || lower == "gcm" || lower.hasPrefix("google") {
                    return .invalid("message.data", "Invalid data payload key: \(key)")
                }
                payloadBytes += key.utf8.count + value.utf8.count
            }
        }
        if let notification = message.first(where: { snake($0.key) == "notification" })?.value as? [String: Any] {
            for (key, value) in notification { payloadBytes += key.utf8.count + ((value as? String)?.utf8.count ?? 0) }
        }
        let limit = send.topic != nil ? topicPayloadLimit : payloadLimit
        if payloadBytes > limit {
            return .invalid("message", "Message is too big: \(payloadBytes) bytes of payload, the limit is \(limit).")
        }
        return nil
    }
}

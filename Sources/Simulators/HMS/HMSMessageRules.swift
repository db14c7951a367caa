import Foundation

/// One `messages:send` body that passed Push Kit's checks: its target and the `message` bytes as sent.
struct HMSSend {
    var validateOnly: Bool
    /// `token`: up to 1000, in order.
    var tokens: [String]?
    var topic: String?
    var condition: String?
    /// The `message` member's bytes exactly as received.
    var message: [UInt8]
}

/// Push Kit's checks of a v1 `messages:send` body, at the level of Huawei's "Sending Downlink Messages"
/// reference: a JSON object with `message`; exactly one of `token` (an array of 1 to 1000 strings), `topic`,
/// `condition`; the message body at most 4096 bytes not counting the tokens; `data` a string; the `android`
/// fields' types and ranges (`ttl` "\d+(.\d{1,9})?s" up to 15 days, `urgency`, `collapse_key` -1...100).
/// Huawei's support FAQ: a misspelt `message` (so no token seen) and an empty token list answer 80300010.
enum HMSMessageRules {
    static let tokenLimit = 1000
    /// The message body without its tokens.
    static let messageLimit = 4096
    /// 15 days: the longest `android.ttl`.
    static let ttlLimitSeconds = 1_296_000.0

    static func parse(body: [UInt8]) -> Result<HMSSend, HMSResult> {
        guard let ranges = JSONShape.memberValueRanges(body),
              let root = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return .failure(.structureError("the request body is not a JSON object"))
        }
        var validateOnly = false
        if let flag = root["validate_only"] {
            guard isBool(flag), let value = flag as? Bool else {
                return .failure(.structureError("validate_only must be a boolean"))
            }
            validateOnly = value
        }
        guard let value = root["message"], let range = ranges["message"] else { return .failure(.tokenCount) }
        guard let message = value as? [String: Any] else { return .failure(.structureError("message must be an object")) }
        let messageBytes = Array(body[range])
        var send = HMSSend(validateOnly: validateOnly, message: messageBytes)
        if let error = target(message, into: &send) { return .failure(error) }
        if let error = size(messageBytes) { return .failure(error) }
        if let error = fields(message) { return .failure(error) }
        return .success(send)
    }

    private static func target(_ message: [String: Any], into send: inout HMSSend) -> HMSResult? {
        let named = ["token", "topic", "condition"].filter { message[$0] != nil && !(message[$0] is NSNull) }
        if named.isEmpty { return .tokenCount }
        if named.count > 1 { return .parameterError("exactly one of token, topic or condition may be set") }
        if let value = message["token"] {
            guard let list = value as? [Any], let tokens = list as? [String], tokens.count == list.count else {
                return .structureError("token must be an array of strings")
            }
            if tokens.isEmpty || tokens.count > tokenLimit { return .tokenCount }
            send.tokens = tokens
        }
        if let value = message["topic"] {
            guard let topic = value as? String else { return .structureError("topic must be a string") }
            guard !topic.isEmpty, topic.utf8.count <= 900, topic.utf8.allSatisfy(isTopicCharacter) else { return .parameterError("invalid topic") }
            send.topic = topic
        }
        if let value = message["condition"] {
            guard let condition = value as? String else { return .structureError("condition must be a string") }
            guard !condition.trimmingCharacters(in: .whitespaces).isEmpty else { return .parameterError("invalid condition") }
            send.condition = condition
        }
        return nil
    }

    /// The message body's size without its `token` member's value, as Huawei counts it.
    private static func size(_ message: [UInt8]) -> HMSResult? {
        let tokenBytes = JSONShape.memberValueRanges(message)?["token"]?.count ?? 0
        return message.count - tokenBytes > messageLimit ? .bodyTooLarge : nil
    }

    private static func isTopicCharacter(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || "-_.~%".utf8.contains(c)
    }

    /// JSONSerialization gives `true` and `1` both as NSNumber (and `1 as? Bool` succeeds): the class tells them apart.
    private static let booleanClass: AnyClass = type(of: NSNumber(value: true))
    static func isBool(_ value: Any) -> Bool {
        (value as? NSNumber).map { type(of: $0) == booleanClass } ?? false
    }

    /// `"86400"`, `"86400s"`, `"3.5s"`: Push Kit's TTL string. nil when malformed.
    static func ttlSeconds(_ text: String) -> Double? {
        var number = Substring(text)
        if number.hasSuffix("s") || number.hasSuffix("S") { number = number.dropLast() }
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), !parts[0].isEmpty, parts[0].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        if parts.count == 2 { guard (1...9).contains(parts[1].count), parts[1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil } }
        return Double(number)
    }

    /// A member's value, a JSON null counted as absent (SDKs send nulls for unset fields).
    private static func field(_ object: [String: Any], _ key: String) -> Any? {
        guard let value = object[key], !(value is NSNull) else { return nil }
        return value
    }

    /// The types and ranges of the fields Push Kit reads; the first problem wins.
    private static func fields(_ message: [String: Any]) -> HMSResult? {
        if let data = field(message, "data"), !(data is String) { return .structureError("data must be a string") }
        if let notification = field(message, "notification") {
            guard let object = notification as? [String: Any] else { return .structureError("notification must be an object") }
            for key in ["title", "body", "image"] where field(object, key) != nil && !(object[key] is String) {
                return .structureError("notification.\(key) must be a string")
            }
        }
        guard let value = field(message, "android") else { return nil }
        guard let android = value as? [String: Any] else { return .structureError("android must be an object") }
        if let ttl = field(android, "ttl") {
            guard let text = ttl as? String, let seconds = ttlSeconds(text) else { return .parameterError("android.ttl format is wrong") }
            if seconds > ttlLimitSeconds { return .parameterError("android.ttl must not exceed 15 days") }
        }
        if let urgency = field(android, "urgency") {
            guard let text = urgency as? String, text == "HIGH" || text == "NORMAL" else { return .parameterError("android.urgency must be HIGH or NORMAL") }
        }
        if let key = field(android, "collapse_key") {
            guard !isBool(key), let number = key as? NSNumber, number.doubleValue == Double(number.intValue), (-1...100).contains(number.intValue) else {
                return .collapseKeyInvalid
            }
        }
        for key in ["category", "bi_tag", "data"] where field(android, key) != nil && !(android[key] is String) {
            return .structureError("android.\(key) must be a string")
        }
        if let notification = field(android, "notification"), !(notification is [String: Any]) {
            return .structureError("android.notification must be an object")
        }
        return nil
    }
}

import PushCore

/// Where a Push Kit message goes: its device tokens (decoded, each once, in the producer's order), or a topic or
/// condition.
public enum HMSTarget: Sendable, Equatable {
    case tokens([String])
    case topic(String)
    case condition(String)
}

/// Why a Push Kit message would be refused, as Push Kit's own result code and text (`80100003 ...`), which is
/// also the job's dead-letter reason.
public struct HMSValidationFailure: Error, Equatable, Sendable, CustomStringConvertible {
    public let code: String, message: String
    public var description: String { "\(code) \(message)" }
}

/// Refuses locally what Push Kit would refuse (each refusal costs a round trip): the `message` of an hms job must
/// be an object with exactly one target (`token`, a list; `topic`; `condition`), known members only, `data` a
/// string, `notification`/`android`/`apns`/`webpush` objects, Android's `urgency`, `ttl`, `collapse_key` and
/// `fast_app_target` in their documented forms, and the message without its token list within 4,096 bytes. The bytes
/// themselves are never changed. Pure.
///
/// Choices: the size counts the message's bytes but its token list's (which 80300010 bounds); a list of several
/// tokens goes as it is, one request (Push Kit's many-token send), and each token gets its own outcome.
public enum HMSMessageValidator {
    public static let maxPayloadBytes = 4096
    /// Push Kit's most tokens in one request.
    public static let maxTokens = 1000
    /// A message's members.
    enum Member: JSONMemberName {
        case notification, android, apns, webpush, data, token, topic, condition

        /// Its spelling in a message.
        var spelling: StaticString {
            switch self {
            case .notification: "notification"
            case .android: "android"
            case .apns: "apns"
            case .webpush: "webpush"
            case .data: "data"
            case .token: "token"
            case .topic: "topic"
            case .condition: "condition"
            }
        }
    }

    /// Push Kit's codes for a refused message: its structure, a parameter's value, its size, its token count.
    public static let structureCode = "80100003"
    public static let parameterCode = "80100001"
    public static let tooLargeCode = "80300008"
    /// Push Kit answers it for no target at all as well as for too many tokens.
    public static let tooManyTokensCode = "80300010"
    public static let collapseKeyCode = "80100013"
    /// Push Kit's longest `android.ttl`: 15 days.
    public static let maxTTLSeconds = 1_296_000

    public static func validate(_ message: [UInt8]) -> Result<HMSTarget, HMSValidationFailure> {
        message.withUnsafeBufferPointer { buffer in
            do throws(HMSValidationFailure) { return .success(try validate(buffer)) } catch { return .failure(error) }
        }
    }

    /// One pass over the message (`JSONScanner.scanObject`): it is validated and its members checked as they are
    /// scanned, a member's failure counting only once the whole message proved to be JSON.
    static func validate(_ buffer: UnsafeBufferPointer<UInt8>) throws(HMSValidationFailure) -> HMSTarget {
        var target: HMSTarget? = nil
        var targets = 0
        var tokenBytes = 0
        let isObject = try JSONScanner.scanObject(buffer) { (scanner, key, value) throws(HMSValidationFailure) in
            guard let member = Member(key, in: scanner) else { throw structure("unknown member \"\(scanner.stringValue(key).prefix(64))\" in message") }
            if value.kind == .null { return }
            let name = member.spelling
            let found: HMSTarget
            switch member {
            case .token:
                found = try token(scanner, value)
                tokenBytes = value.range.count
            case .topic, .condition:
                guard value.kind == .string, case let text = scanner.stringValue(value), !text.isEmpty else {
                    throw structure("message.\(name) must be a non-empty string")
                }
                found = member == .topic ? .topic(text) : .condition(text)
            case .data:
                // Push Kit's data is a string (often JSON text), not FCM's map.
                guard value.kind == .string else { throw structure("message.data must be a string") }
                return
            default:
                guard value.kind == .object else { throw structure("message.\(name) must be an object") }
                if member == .android { try android(scanner, value) }
                return
            }
            targets += 1
            if target == nil { target = found }
        }
        guard isObject else { throw structure("message must be a JSON object") }
        guard let target else { throw HMSValidationFailure(code: tooManyTokensCode, message: "message needs one target: token, topic or condition") }
        guard targets == 1 else {
            throw parameter("message has \(targets) targets; exactly one of token, topic or condition")
        }
        let payloadBytes = buffer.count - tokenBytes
        guard payloadBytes <= maxPayloadBytes else {
            throw HMSValidationFailure(code: tooLargeCode, message: "message is \(payloadBytes) bytes besides its token list; at most \(maxPayloadBytes)")
        }
        return target
    }

    /// `token`: a list of 1...1000 non-empty strings; the target is all of them, each once.
    private static func token(_ scanner: JSONScanner, _ value: JSONToken) throws(HMSValidationFailure) -> HMSTarget {
        guard value.kind == .array else { throw structure("message.token must be a list of device tokens") }
        let tokens = scanner.elements(of: value)
        guard !tokens.isEmpty else { throw HMSValidationFailure(code: tooManyTokensCode, message: "message.token is empty") }
        guard tokens.count <= maxTokens else {
            throw HMSValidationFailure(code: tooManyTokensCode, message: "message.token lists \(tokens.count) tokens; at most \(maxTokens)")
        }
        for (index, element) in tokens.enumerated() where element.kind != .string || element.contentRange.isEmpty {
            throw parameter("message.token[\(index)] is not a non-empty string")
        }
        // One token (the common job) has nothing to deduplicate.
        if tokens.count == 1 { return .tokens([scanner.stringValue(tokens[0])]) }
        var seen = Set<String>()
        return .tokens(tokens.map { scanner.stringValue($0) }.filter { seen.insert($0).inserted })
    }

    /// Android's members that must be strings, if given.
    static let androidStrings: [StaticString] = ["data", "category", "bi_tag", "receipt_id"]

    /// Android's members whose forms Push Kit checks before sending.
    private static func android(_ scanner: JSONScanner, _ object: JSONToken) throws(HMSValidationFailure) {
        try scanner.forEachMember(at: object.range.lowerBound) { (key, value) throws(HMSValidationFailure) in
            guard value.kind != .null else { return }
            if scanner.stringEquals(key, "urgency") {
                guard value.kind == .string, scanner.stringEquals(value, "HIGH") || scanner.stringEquals(value, "NORMAL") else {
                    throw parameter("message.android.urgency must be \"HIGH\" or \"NORMAL\"")
                }
            } else if scanner.stringEquals(key, "ttl") {
                guard value.kind == .string, let seconds = durationSeconds(scanner.stringValue(value)), seconds <= maxTTLSeconds else {
                    throw parameter("message.android.ttl must be seconds up to 15 days, such as \"86400s\" or \"1.5\"")
                }
            } else if scanner.stringEquals(key, "collapse_key") {
                guard value.isInteger, let key = scanner.int64Value(value), (-1...100).contains(key) else {
                    throw HMSValidationFailure(code: collapseKeyCode, message: "message.android.collapse_key must be an integer from -1 to 100")
                }
            } else if scanner.stringEquals(key, "fast_app_target") {
                guard value.isInteger, let target = scanner.int64Value(value), target == 1 || target == 2 else {
                    throw parameter("message.android.fast_app_target must be 1 (development) or 2 (production)")
                }
            } else if let name = Self.androidStrings.first(where: { scanner.stringEquals(key, $0) }) {
                guard value.kind == .string else { throw structure("message.android.\(name) must be a string") }
            } else if scanner.stringEquals(key, "notification") {
                guard value.kind == .object else { throw structure("message.android.notification must be an object") }
            }
        }
    }

    /// A duration as Push Kit reads it (`\d+(.\d{1,9})?s?`): its whole seconds, nil for another form.
    static func durationSeconds(_ text: String) -> Int64? {
        let parts = (text.hasSuffix("s") ? text.dropLast() : Substring(text)).split(separator: ".", omittingEmptySubsequences: false)
        func digits(_ part: Substring, most: Int) -> Bool { !part.isEmpty && part.count <= most && part.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        guard parts.count <= 2, let whole = parts.first, digits(whole, most: 18), parts.count == 1 || digits(parts[1], most: 9) else { return nil }
        return Int64(whole)
    }

    private static func structure(_ text: String) -> HMSValidationFailure { HMSValidationFailure(code: structureCode, message: text) }
    private static func parameter(_ text: String) -> HMSValidationFailure { HMSValidationFailure(code: parameterCode, message: text) }
}

extension JobSpec {
    /// An hms job's notification: the message bytes as the payload, its (first) token or topic (a condition counts
    /// as one). A many-token job's other tokens travel in its bytes; `JobAttempt.batchTokens` names them all.
    public func hmsNotification(message: [UInt8], target: HMSTarget) -> PushNotification {
        let (token, topic): (String, String) = switch target {
        case .tokens(let t): (t.first ?? "", "")
        case .topic(let t), .condition(let t): ("", t)
        }
        return PushNotification(deviceToken: token, topic: topic, environment: .production, expiration: expiration, payload: message, platform: .hms)
    }
}

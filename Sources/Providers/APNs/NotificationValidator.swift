import PushCore

/// Why a notification would be refused, with the reason string APNs itself would answer.
public struct ValidationFailure: Error, Equatable, Sendable, CustomStringConvertible {
    public var reason: APNsReason
    public var message: String

    public init(_ reason: APNsReason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason): \(message)" }
}

/// Refuses locally what APNs would refuse: each 4xx costs a round trip, and a connection with many errors
/// (BadDeviceToken soonest) gets closed by Apple.
///
/// Choices: a topic that does not fit the push type is `BadTopic` (the header value is wrong for the
/// request; `TopicDisallowed` is Apple's answer for a topic the credentials may not use, which only Apple
/// knows); an empty topic is `MissingTopic`; an empty token is `BadDeviceToken`. `apns-id` may be upper or
/// lower case hex (RFC 4122 says UUIDs compare case-insensitively and Foundation prints upper case):
/// `PushNotification.headerAPNsID` sends the canonical lower-case form.
public enum NotificationValidator {
    public static func validate(_ n: PushNotification, bundleID: String? = nil) -> ValidationFailure? {
        validate(n, bundleID: bundleID, fromParsedJob: false)
    }

    /// `fromParsedJob`: `n` was made from a job `JobParser.parse` accepted, with its token (or a multicast's first
    /// token) and payload as parsed. The parser checked every token as hex and scanned the payload as a JSON
    /// object under a stricter depth limit (it sits one level inside the job), so neither is done again: they
    /// were half of this check's instructions on the worker's path. An empty token is still refused here.
    public static func validate(_ n: PushNotification, bundleID: String?, fromParsedJob: Bool) -> ValidationFailure? {
        let apns = n.apns
        switch n.target {
        case .device(let token):
            if fromParsedJob ? token.isEmpty : !isHexToken(token) {
                return ValidationFailure(
                    .badDeviceToken, token.isEmpty ? "device token is empty" : "device token is not an even-length hexadecimal string")
            }
            if let failure = checkTopic(n.topic, pushType: apns.pushType, bundleID: bundleID) { return failure }
        case .channel(let id, let bundle):
            if let failure = checkBroadcast(channelID: id, bundleID: bundle, pushType: apns.pushType) { return failure }
        }
        if let p = apns.priority {
            guard p == 1 || p == 5 || p == 10 else {
                return ValidationFailure(.badPriority, "priority \(p) is not 1, 5 or 10")
            }
        }
        if apns.pushType == .background && (apns.priority ?? apns.pushType.defaultPriority) == 10 {
            return ValidationFailure(.badPriority, "background notifications must not use priority 10")
        }
        if let c = apns.collapseID, c.utf8.count > 64 {
            return ValidationFailure(.badCollapseId, "collapse id is \(c.utf8.count) bytes; at most 64")
        }
        if let id = apns.apnsID, !isUUID(id) {
            return ValidationFailure(.badMessageId, "apns-id is not a UUID of the form 8-4-4-4-12 hex digits")
        }
        if let e = n.expiration, e < 0 {
            return ValidationFailure(.badExpirationDate, "expiration \(e) is negative")
        }
        if n.payload.isEmpty { return ValidationFailure(.payloadEmpty, "payload is empty") }
        let limit = n.isBroadcast ? Broadcast.maxPayloadBytes : apns.pushType.maxPayloadBytes
        if n.payload.count > limit {
            return ValidationFailure(
                .payloadTooLarge, "payload is \(n.payload.count) bytes; \(n.isBroadcast ? "a broadcast" : apns.pushType.rawValue) allows \(limit)")
        }
        if fromParsedJob { return nil }
        let kind: Result<JSONKind, JSONScanError> = n.payload.withUnsafeBufferPointer { buffer in
            do throws(JSONScanError) { return .success(try JSONScanner.validate(buffer).kind) } catch { return .failure(error) }
        }
        switch kind {
        case .success(.object): return nil
        case .success: return ValidationFailure(.badRequestPayload, "payload is not a JSON object")
        case .failure(let e): return ValidationFailure(.badRequestPayload, "payload is not valid JSON: \(e)")
        }
    }

    /// A broadcast names a valid channel ID and the bare bundle ID, and is a Live Activity update (Apple's only
    /// allowed push type for channels). It carries no `apns-topic`: the bundle ID is in the path.
    static func checkBroadcast(channelID: String, bundleID: String, pushType: PushType) -> ValidationFailure? {
        do throws(ValidationFailure) { try ChannelManagement.checkChannelID(channelID) } catch { return error }
        if bundleID.isEmpty { return ValidationFailure(.badPath, "broadcast has no bundle ID") }
        if Broadcast.hasPushTypeSuffix(bundleID) || bundleID.contains("/") {
            return ValidationFailure(.topicDisallowed, "broadcasts go to the bare bundle ID, not \(bundleID)")
        }
        if pushType != .liveactivity {
            return ValidationFailure(.invalidPushType, "broadcasts must be liveactivity, not \(pushType.rawValue)")
        }
        return nil
    }

    static func checkTopic(_ topic: String, pushType: PushType, bundleID: String?) -> ValidationFailure? {
        if topic.isEmpty { return ValidationFailure(.missingTopic, "topic is empty") }
        guard let suffix = pushType.topicSuffix else { return nil }  // mdm: any topic
        if let bundleID {
            let expected = bundleID + suffix
            guard topic == expected else {
                return ValidationFailure(
                    .badTopic, "\(pushType.rawValue) notifications for \(bundleID) need topic \(expected), not \(topic)")
            }
            return nil
        }
        guard !suffix.isEmpty else { return nil }
        guard topic.utf8.count > suffix.utf8.count, topic.hasSuffix(suffix) else {
            return ValidationFailure(.badTopic, "\(pushType.rawValue) notifications need a topic ending in \(suffix)")
        }
        return nil
    }

    /// 8-4-4-4-12 hexadecimal digits (either case).
    public static func isUUID(_ s: String) -> Bool {
        var i = 0
        for b in s.utf8 {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard b == UInt8(ascii: "-") else { return false }
            } else {
                guard hexValue(b) != nil else { return false }
            }
            i += 1
        }
        return i == 36
    }
}

/// One APNs request as the simulator collects it from HEADERS and DATA frames.
/// Lives on the loop thread inside its connection.
final class IncomingRequest: MockRequest {
    var method: String?
    var path: String?
    var authorization: String?
    var pushType: String?
    var topic: String?
    var apnsID: String?
    var expiration: String?
    var priority: String?
    var collapseID: String?
    /// Broadcast and channel management: `apns-channel-id` and `apns-request-id`.
    var channelID: String?
    var requestID: String?
    /// Every non-pseudo header in arrival order, kept only when the simulator records requests.
    var headerLog: [[String]]?
    /// A broadcast or channel-management request: answers carry `apns-request-id` instead of `apns-id`.
    var usesRequestID = false
    var duplicateHeader = false
    var body: [UInt8] = []
    var bodyTruncated = false
    /// `/_mock/...`: a control request, not an APNs one.
    var isControl = false

    /// Largest body kept: anything above APNs' largest limit is PayloadTooLarge either way.
    static let bodyLimit = 8192

    override func append(body chunk: UnsafeBufferPointer<UInt8>) {
        if isControl {
            // A fault script sent to `/_mock/config` may be long.
            if body.count + chunk.count <= 4 << 20 { body.append(contentsOf: chunk) }
            return
        }
        if body.count + chunk.count > Self.bodyLimit {
            bodyTruncated = true
            return
        }
        body.append(contentsOf: chunk)
    }

    override func setHeader(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        if headerLog != nil, name.first != UInt8(ascii: ":") {
            headerLog?.append([String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)])
        }
        func store(_ slot: inout String?) {
            if slot != nil { duplicateHeader = true }
            slot = String(decoding: value, as: UTF8.self)
        }
        switch name.count {
        case 5 where UTF8Matching.equal(name, ":path"):
            store(&path)
            isControl = value.count >= 7 && UTF8Matching.equal(UnsafeBufferPointer(rebasing: value[0..<7]), "/_mock/")
        case 7 where UTF8Matching.equal(name, ":method"): store(&method)
        case 13 where UTF8Matching.equal(name, "authorization"): store(&authorization)
        case 14 where UTF8Matching.equal(name, "apns-push-type"): store(&pushType)
        case 10 where UTF8Matching.equal(name, "apns-topic"): store(&topic)
        case 7 where UTF8Matching.equal(name, "apns-id"): store(&apnsID)
        case 15 where UTF8Matching.equal(name, "apns-expiration"): store(&expiration)
        case 13 where UTF8Matching.equal(name, "apns-priority"): store(&priority)
        case 16 where UTF8Matching.equal(name, "apns-collapse-id"): store(&collapseID)
        case 15 where UTF8Matching.equal(name, "apns-channel-id"): store(&channelID)
        case 15 where UTF8Matching.equal(name, "apns-request-id"): store(&requestID)
        default: break
        }
    }
}

/// A rejection as APNs words it: status plus reason string.
struct Rejection: Error, Equatable {
    let status: Int
    let reason: String
}

/// Apple's header and payload rules (see the reference's request tables), independent of Herald's own validator.
enum RequestRules {
    /// Push type to required topic suffix (nil = no suffix; mdm accepts any topic).
    static let topicSuffixes: [String: String?] = [
        "alert": nil, "background": nil, "location": ".location-query", "voip": ".voip",
        "complication": ".complication", "fileprovider": ".pushkit.fileprovider", "mdm": nil,
        "liveactivity": ".push-type.liveactivity", "pushtotalk": ".voip-ptt", "widgets": ".push-type.widgets",
        "controls": ".push-type.controls",
    ]
    static let allSuffixes: [String] = topicSuffixes.values.compactMap { $0 }

    /// The device token from `:path`, or the rejection for method and path.
    static func deviceToken(method: String?, path: String?) -> Result<String, Rejection> {
        guard method == "POST" else { return .failure(Rejection(status: 405, reason: "MethodNotAllowed")) }
        guard let path, UTF8Matching.hasPrefix(path, "/3/device/") else { return .failure(Rejection(status: 404, reason: "BadPath")) }
        let bytes = path.utf8.dropFirst(10)
        var end = bytes.endIndex
        if let query = bytes.firstIndex(of: UInt8(ascii: "?")) { end = query }
        let token = bytes[bytes.startIndex..<end]
        if token.isEmpty { return .failure(Rejection(status: 400, reason: "MissingDeviceToken")) }
        if token.contains(UInt8(ascii: "/")) { return .failure(Rejection(status: 404, reason: "BadPath")) }
        guard token.count % 2 == 0, token.allSatisfy(isHex) else { return .failure(Rejection(status: 400, reason: "BadDeviceToken")) }
        return .success(String(decoding: token, as: UTF8.self))
    }

    static func isHex(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
    }

    /// Checks push type, topic shape, apns-id, priority, expiration, collapse id and the payload.
    /// `topic` is the effective topic (for certificate auth it may have been defaulted).
    static func validate(_ request: IncomingRequest, topic: String?, requirePushType: Bool) -> Rejection? {
        if request.duplicateHeader { return Rejection(status: 400, reason: "DuplicateHeaders") }
        let pushType: String
        if let given = request.pushType {
            guard topicSuffixes[given] != nil else { return Rejection(status: 400, reason: "InvalidPushType") }
            pushType = given
        } else if requirePushType {
            return Rejection(status: 400, reason: "MissingPushType")
        } else {
            pushType = "alert"
        }
        guard let topic, !topic.isEmpty else { return Rejection(status: 400, reason: "MissingTopic") }
        if pushType != "mdm" {
            if let suffix = topicSuffixes[pushType] ?? nil {
                if !UTF8Matching.hasSuffix(topic, suffix) || topic.utf8.count == suffix.utf8.count { return Rejection(status: 400, reason: "BadTopic") }
            } else if topic.utf8.contains(UInt8(ascii: "-")) || UTF8Matching.hasSuffix(topic, ".voip") || UTF8Matching.hasSuffix(topic, ".complication"),
                      allSuffixes.contains(where: { UTF8Matching.hasSuffix(topic, $0) }) {
                return Rejection(status: 400, reason: "BadTopic")
            }
        }
        if let id = request.apnsID, !isUUID(id) { return Rejection(status: 400, reason: "BadMessageId") }
        if let priority = request.priority {
            guard priority == "10" || priority == "5" || priority == "1" else { return Rejection(status: 400, reason: "BadPriority") }
            if pushType == "background" && priority == "10" { return Rejection(status: 400, reason: "BadPriority") }
        }
        if let expiration = request.expiration {
            guard !expiration.isEmpty, expiration.utf8.count <= 12, expiration.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                return Rejection(status: 400, reason: "BadExpirationDate")
            }
        }
        if let collapse = request.collapseID, collapse.utf8.count > 64 { return Rejection(status: 400, reason: "BadCollapseId") }
        if request.body.isEmpty && !request.bodyTruncated { return Rejection(status: 400, reason: "PayloadEmpty") }
        let limit = pushType == "voip" ? 5120 : 4096
        if request.bodyTruncated || request.body.count > limit { return Rejection(status: 413, reason: "PayloadTooLarge") }
        if !JSONShape.isObject(request.body) { return Rejection(status: 400, reason: "BadRequestPayload") }
        return nil
    }

    /// Canonical 8-4-4-4-12 hexadecimal UUID (either case).
    static func isUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, c) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                if c != UInt8(ascii: "-") { return false }
            } else if !isHex(c) {
                return false
            }
        }
        return true
    }
}

import PushCore

/// The channel-management API (create, read, delete, list broadcast channels) as pure request building and answer
/// decoding; `APNsChannelClient` (in this module) carries it over HTTP/2. Requests are exactly Apple's:
/// `POST /1/apps/<bundle>/channels` with `{"message-storage-policy":N,"push-type":"LiveActivity"}`,
/// `GET`/`DELETE /1/apps/<bundle>/channels` with `apns-channel-id`, `GET /1/apps/<bundle>/all-channels`.
public enum ChannelManagement {
    /// Production `api-manage-broadcast.push.apple.com:2196`, sandbox `api-manage-broadcast.sandbox.push.apple.com:2195`.
    public static func defaultURL(_ environment: APNsEnvironment) -> String {
        environment == .production
            ? "https://api-manage-broadcast.push.apple.com:2196" : "https://api-manage-broadcast.sandbox.push.apple.com:2195"
    }

    public enum Operation: Sendable, Equatable {
        case create(MessageStoragePolicy)
        case read(channelID: String)
        case delete(channelID: String)
        case list
    }

    /// One management request, independent of the transport (`authorization` is added by the client).
    public struct Request: Sendable, Equatable {
        public var method: String
        public var path: String
        /// In the order they go on the wire.
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]?

        public static func == (a: Request, b: Request) -> Bool {
            a.method == b.method && a.path == b.path && a.body == b.body
                && a.headers.elementsEqual(b.headers) { $0.name == $1.name && $0.value == $1.value }
        }
    }

    /// Why a request is not built: the channel ID or bundle ID would be refused by Apple.
    public static func request(_ operation: Operation, bundleID: String, requestID: String? = nil) throws(ValidationFailure) -> Request {
        if bundleID.isEmpty { throw ValidationFailure(.badPath, "bundle ID is empty") }
        if Broadcast.hasPushTypeSuffix(bundleID) || bundleID.contains("/") {
            throw ValidationFailure(.topicDisallowed, "channels belong to the bare bundle ID, not \(bundleID)")
        }
        if let requestID, !NotificationValidator.isUUID(requestID) {
            throw ValidationFailure(.badMessageId, "apns-request-id is not a UUID of the form 8-4-4-4-12 hex digits")
        }
        var headers: [(name: String, value: String)] = []
        if let requestID { headers.append(("apns-request-id", requestID.lowercased())) }
        let base = "/1/apps/" + bundleID
        switch operation {
        case .create(let policy):
            var body = JSONWriter(capacity: 64)
            body.beginObject()
            body.field("message-storage-policy", Int64(policy.rawValue))
            body.field("push-type", "LiveActivity")
            body.endObject()
            return Request(method: "POST", path: base + "/channels", headers: headers, body: body.bytes)
        case .read(let id), .delete(let id):
            try checkChannelID(id)
            headers.insert(("apns-channel-id", id), at: 0)
            let method = if case .read = operation { "GET" } else { "DELETE" }
            return Request(method: method, path: base + "/channels", headers: headers, body: nil)
        case .list:
            return Request(method: "GET", path: base + "/all-channels", headers: headers, body: nil)
        }
    }

    public static func checkChannelID(_ id: String) throws(ValidationFailure) {
        if id.isEmpty { throw ValidationFailure(.missingChannelId, "channel ID is empty") }
        guard Broadcast.isValidChannelID(id) else {
            throw ValidationFailure(
                .badChannelId, "channel ID is not base64 of at most \(Broadcast.maxChannelIDBytes) characters")
        }
    }

    /// A decoded answer.
    public enum Answer: Sendable, Equatable {
        case created(channelID: String)
        case channel(MessageStoragePolicy)
        case deleted
        case channels([String])
        /// Apple refused (or answered something undocumented): status, reason when the body had one, request id.
        case failed(status: Int, reason: APNsReason?)
    }

    /// What `operation` got back. Success is 201 with `apns-channel-id` (create), 200 with the channel's JSON
    /// (read), 204 or 200 (delete), 200 with `{"channels":[...]}` (list); anything else is `.failed`.
    public static func decode(_ operation: Operation, status: Int, channelIDHeader: String?, body: [UInt8]) -> Answer {
        func failed() -> Answer { .failed(status: status, reason: APNsResponse.decodeBody(body)?.reason ?? nil) }
        switch operation {
        case .create:
            guard status == 201 || status == 200, let id = channelIDHeader, !id.isEmpty else { return failed() }
            return .created(channelID: id)
        case .read:
            guard status == 200, let policy = storagePolicy(body) else { return failed() }
            return .channel(policy)
        case .delete:
            return status == 204 || status == 200 ? .deleted : failed()
        case .list:
            guard status == 200, let ids = channelList(body) else { return failed() }
            return .channels(ids)
        }
    }

    /// `message-storage-policy` of a read answer.
    static func storagePolicy(_ body: [UInt8]) -> MessageStoragePolicy? {
        member(of: body) { key, value, scanner in
            guard scanner.stringEquals(key, "message-storage-policy"), let v = scanner.int64Value(value) else { return nil }
            return MessageStoragePolicy(rawValue: Int(v))
        }
    }

    /// The strings of `channels` in a list answer; nil when it is missing or not an array of strings.
    static func channelList(_ body: [UInt8]) -> [String]? {
        member(of: body) { key, value, scanner throws(JSONScanError) -> [String]? in
            guard scanner.stringEquals(key, "channels"), value.kind == .array else { return nil }
            // The array is already validated: walk its elements with a scanner over its bytes.
            var inner = JSONScanner(UnsafeBufferPointer(rebasing: scanner.bytes[value.range]))
            inner.position = 1
            var ids: [String] = []
            while true {
                inner.skipWhitespace()
                if inner.bytes[inner.position] == UInt8(ascii: "]") { return ids }
                if inner.bytes[inner.position] == UInt8(ascii: ",") { inner.position += 1; inner.skipWhitespace() }
                let element = try inner.scanValue(depth: 1)
                guard element.kind == .string else { return nil }
                ids.append(inner.stringValue(element))
            }
        }
    }

    /// The first non-nil `pick` over the top-level members of a JSON object body; nil for anything else.
    private static func member<T>(of body: [UInt8], _ pick: (JSONToken, JSONToken, JSONScanner) throws(JSONScanError) -> T?) -> T? {
        body.withUnsafeBufferPointer { buffer -> T? in
            var scanner = JSONScanner(buffer)
            do throws(JSONScanError) {
                guard try JSONScanner.validate(buffer).kind == .object else { return nil }
                try scanner.beginObject()
                var first = true
                while let (key, value) = try scanner.nextMember(first: &first) {
                    if let found = try pick(key, value, scanner) { return found }
                }
            } catch {
                return nil
            }
            return nil
        }
    }
}

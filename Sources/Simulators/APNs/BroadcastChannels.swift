import Foundation
import Reactor

/// One broadcast channel the simulator holds, as `GET /_mock/channels` and `channels()` report it.
public struct MockChannel: Sendable, Codable, Equatable {
    public var id: String
    public var bundleID: String
    /// 0 = No Messages Stored, 1 = Most Recent Message Stored.
    public var storagePolicy: Int
    /// Broadcasts accepted on it so far.
    public var broadcasts: Int
    public var createdMillis: Int64

    enum CodingKeys: String, CodingKey {
        case id, bundleID = "bundle_id", storagePolicy = "message_storage_policy", broadcasts, createdMillis = "created_ms"
    }
}

/// One broadcast the simulator accepted (the observation log, like `MockAcceptedNotification` for device pushes).
public struct MockBroadcast: Sendable, Codable, Equatable {
    public var channel: String
    public var bundleID: String
    public var requestID: String
    public var priority: Int
    public var expiration: Int64
    public var payloadBytes: Int
    /// The payload text, when payload logging is on.
    public var payload: String?
    public var connection: Int
    public var stream: Int32
    public var timeMillis: Int64

    enum CodingKeys: String, CodingKey {
        case channel, bundleID = "bundle_id", requestID = "apns_request_id", priority, expiration, payloadBytes = "payload_bytes"
        case payload, connection, stream, timeMillis = "time_ms"
    }
}

/// A request exactly as it arrived (header order and values, body bytes as text), kept when `recordRequests` is on:
/// lets a test compare what two clients sent, byte for byte.
public struct MockRecordedRequest: Sendable, Codable, Equatable {
    public var method: String
    public var path: String
    /// Every header but the pseudo-headers, in arrival order, as [name, value].
    public var headers: [[String]]
    public var body: String

    /// The value of the first header `name`.
    public func header(_ name: String) -> String? { headers.first { $0.first == name }?.last }
}

/// The channels of one simulated environment: per bundle ID at most `limit`, IDs made like Apple's (base64 of 16
/// random bytes). Loop-confined inside `APNsCore`.
final class ChannelRegistry {
    private(set) var channels: [String: MockChannel] = [:]
    /// Creation order, so listings are stable.
    private var order: [String] = []
    /// Channels per bundle ID, so a create is not a scan of all of them.
    private var counts: [String: Int] = [:]
    let limit: Int

    init(limit: Int) { self.limit = limit }

    func count(bundleID: String) -> Int { counts[bundleID] ?? 0 }

    /// A new channel, or nil when the bundle ID has `limit` already (CannotCreateChannelConfig).
    func create(bundleID: String, policy: Int, random: inout SeededRandom) -> MockChannel? {
        guard count(bundleID: bundleID) < limit else { return nil }
        var id = ""
        repeat {
            var bytes: [UInt8] = []
            for _ in 0..<2 { withUnsafeBytes(of: random.next()) { bytes += $0 } }
            id = Data(bytes).base64EncodedString()
        } while channels[id] != nil
        let channel = MockChannel(id: id, bundleID: bundleID, storagePolicy: policy, broadcasts: 0, createdMillis: wallClockMillis())
        channels[id] = channel
        order.append(id)
        counts[bundleID, default: 0] += 1
        return channel
    }

    /// The channel when it exists for this bundle ID (another app's channel is not registered for this one).
    func find(_ id: String, bundleID: String) -> MockChannel? {
        guard let channel = channels[id], channel.bundleID == bundleID else { return nil }
        return channel
    }

    @discardableResult
    func delete(_ id: String, bundleID: String) -> Bool {
        guard find(id, bundleID: bundleID) != nil else { return false }
        channels[id] = nil
        order.removeAll { $0 == id }
        counts[bundleID, default: 1] -= 1
        return true
    }

    func countBroadcast(_ id: String) { channels[id]?.broadcasts += 1 }

    func list(bundleID: String) -> [String] { order.filter { channels[$0]?.bundleID == bundleID } }

    var all: [MockChannel] { order.compactMap { channels[$0] } }
}

/// Apple's broadcast and channel-management rules (the seed's error table), independent of Herald's own code.
enum BroadcastRules {
    static let managementPrefix = "/1/apps/"
    static let broadcastPrefix = "/4/broadcasts/apps/"
    static let maxPayloadBytes = 5120
    static let maxChannelIDBytes = 128

    enum ManagementCall: Equatable {
        case create, read, delete, list
    }

    /// The bundle ID and call of a management path and method, or the BadPath / MethodNotAllowed rejection.
    static func managementCall(method: String?, path: String) -> Result<(bundleID: String, call: ManagementCall), Rejection> {
        let rest = path.utf8.dropFirst(managementPrefix.utf8.count)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { return .failure(Rejection(status: 404, reason: "BadPath")) }
        let bundleID = String(decoding: rest[rest.startIndex..<slash], as: UTF8.self)
        let tail = String(decoding: rest[slash...], as: UTF8.self)
        guard !bundleID.isEmpty else { return .failure(Rejection(status: 404, reason: "BadPath")) }
        switch (tail, method ?? "") {
        case ("/channels", "POST"): return .success((bundleID, .create))
        case ("/channels", "GET"): return .success((bundleID, .read))
        case ("/channels", "DELETE"): return .success((bundleID, .delete))
        case ("/all-channels", "GET"): return .success((bundleID, .list))
        case ("/channels", _), ("/all-channels", _): return .failure(Rejection(status: 405, reason: "MethodNotAllowed"))
        default: return .failure(Rejection(status: 404, reason: "BadPath"))
        }
    }

    /// The bundle ID of a broadcast path, or the rejection for method and path.
    static func broadcastBundleID(method: String?, path: String) -> Result<String, Rejection> {
        guard method == "POST" else { return .failure(Rejection(status: 405, reason: "MethodNotAllowed")) }
        let bundleID = String(decoding: path.utf8.dropFirst(broadcastPrefix.utf8.count), as: UTF8.self)
        guard !bundleID.isEmpty, !bundleID.utf8.contains(UInt8(ascii: "/")), !bundleID.utf8.contains(UInt8(ascii: "?")) else {
            return .failure(Rejection(status: 404, reason: "BadPath"))
        }
        return .success(bundleID)
    }

    /// TopicDisallowed: "ensure that no push type suffix is added to the bundle ID".
    static func hasPushTypeSuffix(_ bundleID: String) -> Bool {
        RequestRules.allSuffixes.contains { UTF8Matching.hasSuffix(bundleID, $0) }
    }

    /// MissingChannelId / BadChannelId for the `apns-channel-id` header: base64, at most 128 characters.
    static func checkChannelID(_ id: String?) -> Rejection? {
        guard let id, !id.isEmpty else { return Rejection(status: 400, reason: "MissingChannelId") }
        let bytes = Array(id.utf8)
        // Foundation's decoder, not Herald's: the simulator checks independently. Unpadded IDs are padded first.
        guard bytes.count <= maxChannelIDBytes, Data(base64Encoded: bytes.contains(UInt8(ascii: "=")) ? id : padded(id)) != nil else {
            return Rejection(status: 400, reason: "BadChannelId")
        }
        return nil
    }

    private static func padded(_ id: String) -> String {
        let missing = (4 - id.utf8.count % 4) % 4
        return id + String(repeating: "=", count: missing)
    }

    /// The create body: `{"message-storage-policy":0|1,"push-type":"LiveActivity"}`; the storage policy, or
    /// PayloadEmpty, BadRequestPayload, BadRequestParams (unknown or bad attribute), MissingPushType, InvalidPushType.
    static func storagePolicy(createBody body: [UInt8]) -> Result<Int, Rejection> {
        if body.isEmpty { return .failure(Rejection(status: 400, reason: "PayloadEmpty")) }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            return .failure(Rejection(status: 400, reason: "BadRequestPayload"))
        }
        for key in object.keys where key != "message-storage-policy" && key != "push-type" {
            return .failure(Rejection(status: 400, reason: "BadRequestParams"))
        }
        guard let pushType = object["push-type"] else { return .failure(Rejection(status: 400, reason: "MissingPushType")) }
        guard let text = pushType as? String, text.lowercased() == "liveactivity" else {
            return .failure(Rejection(status: 400, reason: "InvalidPushType"))
        }
        guard let policy = object["message-storage-policy"] as? Int, policy == 0 || policy == 1 else {
            return .failure(Rejection(status: 400, reason: "BadRequestParams"))
        }
        return .success(policy)
    }
}

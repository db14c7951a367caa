import Foundation
import ProviderKit
import PushCore
import RedisQueue

/// One device: an app's token on one platform. The registry keys it by all three (a token means nothing to another
/// app's credential).
public struct DeviceID: Sendable, Hashable, CustomStringConvertible {
    public let app: String
    public let platform: Platform
    public let token: String

    public init(app: String, platform: Platform, token: String) {
        self.app = app
        self.platform = platform
        self.token = token
    }

    public var description: String { "\(app)/\(platform.rawValue)/\(token)" }
}

/// What a producer says of a device when it registers it; a registration replaces all of it (PUT), so a member
/// left out is cleared. Bounded so one device's record stays small (docs/devices.md, "Limits").
public struct DeviceAttributes: Sendable, Equatable {
    /// The team's user id: `GET /v1/devices/<app>?owner=`, and issue 50's user audiences.
    public var owner: String?
    public var topics: [String] = []
    /// BCP 47 (`de`, `pt-BR`): which localized variant an audience send picks.
    public var locale: String?
    /// IANA time zone (`Europe/Berlin`): local-time delivery.
    public var timeZone: String?
    /// APNs: which environment issued the token.
    public var environment: String?
    /// Web Push: the subscription's JSON (`{"endpoint", "keys": {"p256dh", "auth"}}`), exactly as the browser gave it.
    public var subscription: String?

    public init(owner: String? = nil, topics: [String] = [], locale: String? = nil, timeZone: String? = nil,
                environment: String? = nil, subscription: String? = nil) {
        self.owner = owner
        self.topics = topics
        self.locale = locale
        self.timeZone = timeZone
        self.environment = environment
        self.subscription = subscription
    }

    public static let maxOwnerBytes = 256
    public static let maxTopics = 64
    public static let maxTopicBytes = 128
    public static let maxTokenBytes = 4096
    public static let maxSubscriptionBytes = 4096
    /// The members a registration may carry (anything else is refused, never dropped silently).
    public static let members: Set<String> = ["owner", "topics", "locale", "time_zone", "environment", "subscription"]
}

/// Why a registration was refused: a code for the API's answer and a sentence naming the member.
public struct DeviceError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: String
    public let description: String
    public init(_ code: String, _ description: String) {
        self.code = code
        self.description = description
    }
}

public enum DeviceState: String, Sendable, Equatable, CaseIterable {
    case active, stale, removed
}

/// What an import carries of a device's past (`herald devices import`, a bulk `POST`: a migration, or an export read
/// back): when it was first and last registered, and whether it is stale. Without it an import would make every
/// device fresh: stale ones active again, and every APNs 410 older than the import ignored.
public struct DeviceHistory: Sendable, Equatable {
    /// Milliseconds since the epoch; later than now counts as now.
    public var created: Int64?
    public var seen: Int64?
    public var stale = false

    public init(created: Int64? = nil, seen: Int64? = nil, stale: Bool = false) {
        self.created = created
        self.seen = seen
        self.stale = stale
    }

    /// The register script's last three arguments.
    var arguments: [String] { [seen.map(String.init) ?? "", created.map(String.init) ?? "", stale ? "stale" : ""] }
}

/// A device as the registry holds it: what was registered, and what Herald learnt since.
public struct Device: Sendable, Equatable {
    public let id: DeviceID
    public var attributes: DeviceAttributes
    public var state: DeviceState
    /// Milliseconds since the epoch: first registered, last registered or refreshed, last delivered to.
    public var created: Int64
    public var seen: Int64
    public var delivered: Int64?
    /// Removed: why (`unregistered`, `unseen`, or the provider's reason such as `Unregistered`) and when.
    public var reason: String?
    public var answer: String?
    public var removedAt: Int64?
}

extension DeviceID {
    /// Checks the parts of a device's address (from a URL path or a line of an import).
    public static func parse(app: String, platform: String, token: String, platforms: [Platform]) throws(DeviceError) -> DeviceID {
        guard !app.isEmpty, app.utf8.count <= 128, Self.plain(app), !app.contains(":") else {
            throw DeviceError("bad_app", "app must be 1 to 128 bytes without quotes, backslashes, colons or control characters")
        }
        guard let platform = Platform(rawValue: platform), platforms.contains(platform) else {
            throw DeviceError("bad_platform", "platform must be one of \(platforms.map(\.rawValue).joined(separator: ", "))")
        }
        guard !token.isEmpty, token.utf8.count <= DeviceAttributes.maxTokenBytes,
              !token.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            throw DeviceError("bad_token", "token must be 1 to \(DeviceAttributes.maxTokenBytes) bytes without spaces or control characters")
        }
        return DeviceID(app: app, platform: platform, token: token)
    }

    /// No quote, backslash or control character: safe inside key names and JSON headers.
    static func plain(_ text: String) -> Bool { QueueKeys.isValid(text) }
}

extension DeviceAttributes {
    /// Reads a registration's JSON object for `id`: every member checked, an unknown one refused.
    public static func parse(_ object: [String: Any], for id: DeviceID) throws(DeviceError) -> DeviceAttributes {
        for key in object.keys.sorted() where !members.contains(key) {
            throw DeviceError("unknown_member", "\(key) is not a device member (\(members.sorted().joined(separator: ", ")))")
        }
        var out = DeviceAttributes()
        out.owner = try text(object["owner"], "owner", max: maxOwnerBytes)
        if let value = object["topics"], !(value is NSNull) {
            guard let list = value as? [Any] else { throw DeviceError("bad_topics", "topics must be a list of strings") }
            guard list.count <= maxTopics else { throw DeviceError("bad_topics", "at most \(maxTopics) topics") }
            var seen = Set<String>()
            for item in list {
                guard let topic = try text(item, "topics[]", max: maxTopicBytes) else { throw DeviceError("bad_topics", "topics must be strings") }
                if seen.insert(topic).inserted { out.topics.append(topic) }
            }
        }
        if let locale = try text(object["locale"], "locale", max: 35) {
            guard locale.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) && $0.isASCII || $0 == "-" || $0 == "_" }) else {
                throw DeviceError("bad_locale", "locale must be a BCP 47 tag such as de or pt-BR")
            }
            out.locale = locale
        }
        if let zone = try text(object["time_zone"], "time_zone", max: 64) {
            guard LocalTime.zone(zone) != nil else {
                throw DeviceError("bad_time_zone", "time_zone must be an IANA time zone such as Europe/Berlin")
            }
            out.timeZone = zone
        }
        if let environment = try text(object["environment"], "environment", max: 16) {
            guard id.platform.hasEnvironments else {
                throw DeviceError("bad_environment", "environment applies to \(Platform.allCases.filter(\.hasEnvironments).map(\.rawValue).joined(separator: ", ")) devices only")
            }
            guard ServiceEnvironment(rawValue: environment) != nil else {
                throw DeviceError("bad_environment", "environment must be production or sandbox")
            }
            out.environment = environment
        }
        if let value = object["subscription"], !(value is NSNull) {
            guard id.platform.traits.carriesSubscription else {
                throw DeviceError("bad_subscription", "subscription applies to \(Platform.allCases.filter(\.traits.carriesSubscription).map(\.rawValue).joined(separator: ", ")) devices only")
            }
            guard let sub = value as? [String: Any], let keys = sub["keys"] as? [String: Any],
                  keys["p256dh"] is String, keys["auth"] is String else {
                throw DeviceError("bad_subscription", "subscription must be {\"endpoint\", \"keys\": {\"p256dh\", \"auth\"}}")
            }
            if let endpoint = sub["endpoint"] {
                guard endpoint as? String == id.token else {
                    throw DeviceError("bad_subscription", "subscription.endpoint must be the device's token")
                }
            }
            guard let data = try? JSONSerialization.data(withJSONObject: sub, options: [.sortedKeys, .withoutEscapingSlashes]),
                  data.count <= maxSubscriptionBytes else {
                throw DeviceError("bad_subscription", "subscription must be at most \(maxSubscriptionBytes) bytes of JSON")
            }
            out.subscription = String(decoding: data, as: UTF8.self)
        }
        return out
    }

    private static func text(_ value: Any?, _ name: String, max: Int) throws(DeviceError) -> String? {
        guard let value, !(value is NSNull) else { return nil }
        guard let string = value as? String, !string.isEmpty, string.utf8.count <= max,
              !string.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw DeviceError("bad_\(name.hasSuffix("[]") ? "topics" : name)", "\(name) must be a string of 1 to \(max) bytes without control characters")
        }
        return string
    }

    /// The record's JSON as the register script takes it (the script adds `created`, `seen` and `state`).
    var recordJSON: String {
        var object: [String: Any] = [:]
        if let owner { object["owner"] = owner }
        if !topics.isEmpty { object["topics"] = topics }
        if let locale { object["locale"] = locale }
        if let timeZone { object["tz"] = timeZone }
        if let environment { object["env"] = environment }
        // As text: the scripts re-encode records with cjson, which would turn an empty list into {} and round numbers.
        if let subscription { object["sub"] = subscription }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The members as a registration names them, for answers and exports.
    public var json: [String: Any] {
        var object: [String: Any] = [:]
        if let owner { object["owner"] = owner }
        if !topics.isEmpty { object["topics"] = topics }
        if let locale { object["locale"] = locale }
        if let timeZone { object["time_zone"] = timeZone }
        if let environment { object["environment"] = environment }
        if let subscription, let data = subscription.data(using: .utf8), let sub = try? JSONSerialization.jsonObject(with: data) {
            object["subscription"] = sub
        }
        return object
    }
}

extension Device {
    /// Reads a record as the scripts write it (nil for one that is not).
    init?(id: DeviceID, record: [UInt8], delivered: Int64?) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(record)) as? [String: Any],
              let state = (object["state"] as? String).flatMap(DeviceState.init(rawValue:)) else { return nil }
        var attributes = DeviceAttributes(owner: object["owner"] as? String, topics: object["topics"] as? [String] ?? [],
                                          locale: object["locale"] as? String, timeZone: object["tz"] as? String,
                                          environment: object["env"] as? String)
        attributes.subscription = object["sub"] as? String
        self.init(id: id, attributes: attributes, state: state, created: Self.ms(object["created"]) ?? 0, seen: Self.ms(object["seen"]) ?? 0,
                  delivered: delivered, reason: object["reason"] as? String, answer: object["answer"] as? String,
                  removedAt: Self.ms(object["removed"]))
    }

    private static func ms(_ value: Any?) -> Int64? { (value as? NSNumber).map { Int64($0.doubleValue) } }

    /// The device as `GET /v1/devices/...` and `herald devices export` write it (an export line imports again).
    public var json: [String: Any] {
        var object = attributes.json
        object["app"] = id.app
        object["platform"] = id.platform.rawValue
        object["token"] = id.token
        object["state"] = state.rawValue
        object["created_at"] = created
        object["last_seen_at"] = seen
        if let delivered { object["last_delivered_at"] = delivered }
        if let reason { object["reason"] = reason }
        if let answer { object["answer"] = answer }
        if let removedAt { object["removed_at"] = removedAt }
        return object
    }
}

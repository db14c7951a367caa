import Foundation
import ProviderKit
import PushCore
import RedisQueue

/// An audience send (docs/campaigns.md): one neutral notification for every active device of an app that an
/// index names, fanned out by `CampaignDriver`. Its document is what a producer posts or LPUSHes on
/// `<p>:campaigns:new`; Redis keeps it as written so every shard's driver renders the same notification.
public struct Campaign: Sendable, Equatable {
    public enum Audience: Sendable, Equatable {
        /// Every device of one owner, on every platform.
        case user(String)
        /// Every device subscribed to one topic.
        case topic(String)
        /// Every active device of the app (its name), on every platform.
        case app(String)
        /// Every device subscribed to any of several topics, each once.
        case topics([String])

        public var kind: String {
            switch self {
            case .user: "user"
            case .topic: "topic"
            case .app: "app"
            case .topics: "topics"
            }
        }

        /// The owner, topic or app it names; the topics of `topics`.
        public var names: [String] {
            switch self {
            case .user(let name), .topic(let name), .app(let name): [name]
            case .topics(let names): names
            }
        }
    }

    public let id: String
    public let app: String
    public let audience: Audience
    /// The queue `<name>` (of `<prefix>:queue:<name>` in `redis.queues`) the jobs go on; nil for the first configured queue.
    public let queue: String?
    /// Pacing (docs/campaigns.md, "Pacing"): at most this many jobs a second over every shard.
    public let ratePerSecond: Double?
    /// Pacing: the rate that sends the audience (as counted at creation) in this many seconds from creation...
    public let finishWithin: Double?
    /// ...or by this time (UNIX seconds).
    public let finishBy: Double?
    /// `deliver_at_local`: when each device gets it, in its own time zone (docs/campaigns.md, "Local time and quiet hours").
    public let deliverAtLocal: LocalDelivery?
    /// `quiet_hours`: the app's window, none (`false`), or the campaign's own.
    public let quietHours: QuietHoursChoice
    /// `expiration`: every job's `expiration` (UNIX seconds), past which the worker ends it `failed` `Expired` unsent.
    public let expiration: Int64?
    /// The `notification` member's bytes, checked by `NeutralNotificationReader`.
    public let notification: [UInt8]
    /// The document as given, which Redis keeps.
    public let document: [UInt8]

    public static let maxIDBytes = 128
    /// The most topics one `topics` audience names.
    public static let maxTopics = 16
    /// The lowest `rate_per_second` taken (jobs a second over every shard): lower rates make pacing intervals no
    /// integer holds.
    public static let minRate = 0.001
    /// The lowest `finish_within` taken (seconds).
    public static let minFinishWithin = 1.0
    /// The lowest rate one shard is paced at (a job every ~11.6 days), whatever `finish_by` or the shard count derive:
    /// it bounds every interval and estimate made from a rate.
    public static let minShardRate = 0.000_001
    /// The members a campaign document may carry (anything else is refused, never dropped silently).
    public static let members: Set<String> = ["id", "app", "audience", "notification", "queue", "rate_per_second", "finish_within", "finish_by",
                                                 "deliver_at_local", "quiet_hours", "expiration"]

    /// What every campaign job id starts with, reserved (docs/campaigns.md): a producer's own id shaped
    /// `x/<platform>/<token>` is not credited to a campaign x by the tally.
    public static let jobIDMarker = "campaign:"

    /// The rendered job id of one device: the marker and the campaign id first, so every result entry of the
    /// campaign carries it.
    public static func jobID(campaign: String, platform: Platform, token: String) -> String {
        "\(jobIDMarker)\(campaign)/\(platform.rawValue)/\(token)"
    }

    /// The campaign id of a rendered job id: nil for an id not of the shape `campaign:<campaign>/<platform>/<token>`.
    public static func campaignID(ofJob id: String) -> String? {
        guard id.hasPrefix(jobIDMarker) else { return nil }
        let parts = id.dropFirst(jobIDMarker.count).split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, Platform(rawValue: String(parts[1])) != nil else { return nil }
        return String(parts[0])
    }
}

extension Campaign {
    /// `bad_app` unless the campaign's app is one of `apps` (the configuration's): a typo would otherwise make every
    /// job of it fail at the worker. With the workers' `worker.max_schedule_days`, `bad_deliver_at_local` for a dated
    /// `deliver_at_local` whose latest `deliver_at` lies further ahead of `now` (ms), whose jobs the workers would
    /// refuse: the wall time in the last zone to reach it (UTC-12), and a day later when quiet hours may move it to
    /// their end (its own window, or its app's, which the configuration gives and may change: any but
    /// `quiet_hours: false` or a time-sensitive notification).
    public func check(apps: Set<String>, maxScheduleDays: Int? = nil, now: Int64 = 0) throws(DeviceError) {
        guard apps.contains(app) else {
            throw DeviceError("bad_app", "app \(app) is not a configured app (\(apps.sorted().joined(separator: ", ")))")
        }
        if let maxScheduleDays, case .on(let day, let time)? = deliverAtLocal,
           let utc = LocalTime.instant(day, time, in: LocalTime.calendar(.gmt)),
           utc + Self.latestZoneMs + (quietHoursMayApply ? Self.quietHoursMarginMs : 0) - now > Int64(maxScheduleDays) * 86_400_000 {
            throw DeviceError("bad_deliver_at_local", "deliver_at_local lies more than worker.max_schedule_days (\(maxScheduleDays)) ahead"
                              + (quietHoursMayApply ? " (with a day for quiet hours)" : ""))
        }
    }

    /// How much later than UTC a wall time comes in the last zone to reach it (UTC-12).
    static let latestZoneMs: Int64 = 12 * 3_600_000
    /// How much later quiet hours may move a delivery: to a window's end, less than a day after.
    static let quietHoursMarginMs: Int64 = 86_400_000

    /// Whether quiet hours may hold its jobs: unless it ignores them or its notification is time-sensitive.
    var quietHoursMayApply: Bool {
        guard quietHours != .ignored else { return false }
        return (try? NeutralNotification.read(notification))?.timeSensitive != true
    }

    /// One shard's rate (jobs a second; nil when unpaced) at `now` (ms): what it has `left` to read over the time
    /// left to the deadline `finish_within` (from `created`) or `finish_by` sets, capped by its share of
    /// `rate_per_second` (devices spread evenly over the shards by their tokens' hashes). Derived again at every
    /// chunk, so a shard held back (Redis restarting, a pause, a slow pass) speeds up evenly to finish on time
    /// instead of finishing late by the delay; past the deadline, or with nothing left of the audience counted at
    /// creation (devices indexed since), only the cap paces it.
    public func shardRate(left: Int, created: Int64, now: Int64, shards: Int) -> Double? {
        var seconds: Double?
        if let finishWithin { seconds = Double(created) / 1000 + finishWithin - Double(now) / 1000 }
        if let finishBy { seconds = finishBy - Double(now) / 1000 }
        let derived = seconds.flatMap { seconds in left > 0 && seconds > 0 ? Double(left) / max(seconds, 1) : nil }
        let cap = ratePerSecond.map { $0 / Double(max(shards, 1)) }
        let rate: Double
        switch (derived, cap) {
        case (let derived?, let cap?): rate = min(derived, cap)
        case (let one?, nil), (nil, let one?): rate = one
        case (nil, nil): return nil
        }
        return rate.isNaN ? Self.minShardRate : max(rate, Self.minShardRate)
    }

    /// A time in ms worked out from a pacing value, clamped to what an Int64 holds (a NaN is 0) so a conversion
    /// never traps.
    public static func milliseconds(_ value: Double) -> Int64 {
        guard !value.isNaN else { return 0 }
        return Int64(min(max(value, -9e18), 9e18))
    }

    /// Reads a campaign document: every member checked, an unknown one refused, the notification read as
    /// rendering reads it (so a bad one is refused before a single device is looked at).
    public static func parse(_ bytes: [UInt8]) throws(DeviceError) -> Campaign {
        guard case .object(let object)? = JSONValue(parsing: bytes) else {
            throw DeviceError("bad_campaign", "a campaign is a JSON object with id, app, audience and notification")
        }
        for key in object.keys.sorted() where !members.contains(key) {
            throw DeviceError("unknown_member", "\(key) is not a campaign member (\(members.sorted().joined(separator: ", ")))")
        }
        guard case .string(let id)? = object["id"], !id.isEmpty, id.utf8.count <= maxIDBytes, QueueKeys.isValid(id),
              !id.unicodeScalars.contains(where: { $0.value <= 0x20 || "/:{}".unicodeScalars.contains($0) }) else {
            // ':' would let one campaign's hash be another's sent set (`<p>:campaign:x:sent`); '{' '}' are Redis
            // Cluster hash-tag marks.
            throw DeviceError("bad_id", "id must be 1 to \(maxIDBytes) bytes without spaces, slashes, colons, braces, quotes, backslashes or control characters")
        }
        guard case .string(let app)? = object["app"], !app.isEmpty, app.utf8.count <= 128, QueueKeys.isValid(app), !app.contains(":") else {
            throw DeviceError("bad_app", "app must be 1 to 128 bytes without quotes, backslashes, colons or control characters")
        }
        let audience = try Audience.parse(object["audience"], app: app)
        var queue: String?
        if let value = object["queue"], value != .null {
            guard case .string(let name) = value, !name.isEmpty, QueueKeys.isValid(name) else {
                throw DeviceError("bad_queue", "queue must be the name of a configured queue")
            }
            queue = name
        }
        guard let notification = object["notification"] else {
            throw DeviceError("bad_notification", "notification is required (docs/notifications.md)")
        }
        let notificationBytes = notification.bytes
        do {
            _ = try NeutralNotification.read(notificationBytes)
        } catch {
            throw DeviceError("bad_notification", "notification: \(error)")
        }
        func positive(_ name: String, min: Double, max: Double) throws(DeviceError) -> Double? {
            guard let value = object[name], value != .null else { return nil }
            guard case .number(let text) = value, let number = Double(text), number >= min, number <= max else {
                throw DeviceError("bad_pacing", "\(name) must be a number from \(min) to \(Int(max))")
            }
            return number
        }
        let rate = try positive("rate_per_second", min: minRate, max: 1_000_000)
        let within = try positive("finish_within", min: minFinishWithin, max: 31 * 86_400)
        let by = try positive("finish_by", min: 1, max: 32_503_680_000)
        if within != nil && by != nil { throw DeviceError("bad_pacing", "give finish_within or finish_by, not both") }
        var expiration: Int64?
        if let value = object["expiration"], value != .null {
            guard case .number(let text) = value, let seconds = Int64(text), seconds >= 0 else {
                throw DeviceError("bad_expiration", "expiration must be a whole number of UNIX seconds (0: try once)")
            }
            expiration = seconds
        }
        return Campaign(id: id, app: app, audience: audience, queue: queue, ratePerSecond: rate, finishWithin: within, finishBy: by,
                        deliverAtLocal: try LocalDelivery.parse(object["deliver_at_local"]), quietHours: try QuietHoursChoice.parse(object["quiet_hours"]),
                        expiration: expiration, notification: notificationBytes, document: bytes)
    }
}

extension Campaign.Audience {
    /// Reads the `audience` member of a campaign of `app`: exactly one kind.
    static func parse(_ member: JSONValue?, app: String) throws(DeviceError) -> Self {
        guard case .object(let object)? = member, object.count == 1, let (kind, value) = object.first else {
            throw DeviceError("bad_audience", "audience must name exactly one of user, topic, topics or app: {\"topic\": \"scores\"}")
        }
        func plain(_ value: JSONValue) -> String? {
            guard case .string(let name) = value, !name.isEmpty, name.utf8.count <= DeviceAttributes.maxOwnerBytes,
                  !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return nil }
            return name
        }
        let rule = "strings of 1 to \(DeviceAttributes.maxOwnerBytes) bytes without control characters"
        if kind == "topics" {
            guard case .array(let list) = value, (2...Campaign.maxTopics).contains(list.count) else {
                throw DeviceError("bad_audience", "audience.topics must be a list of 2 to \(Campaign.maxTopics) topics (one is {\"topic\": ...})")
            }
            let names = list.compactMap(plain)
            guard names.count == list.count, Set(names).count == names.count else {
                throw DeviceError("bad_audience", "audience.topics must be distinct \(rule)")
            }
            return .topics(names)
        }
        guard let name = plain(value) else { throw DeviceError("bad_audience", "audience.\(kind) must be one of the \(rule)") }
        switch kind {
        case "user": return .user(name)
        case "topic": return .topic(name)
        case "app":
            guard name == app else { throw DeviceError("bad_audience", "audience.app must be the campaign's app, \(app)") }
            return .app(name)
        default: throw DeviceError("bad_audience", "audience must name user, topic, topics or app, not \(kind)")
        }
    }
}

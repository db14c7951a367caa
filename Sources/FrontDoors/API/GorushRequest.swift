import Foundation

/// gorush's `POST /api/push` body (`{"notifications": [...]}`, as its README documents it) turned into Herald jobs,
/// so a team coming from gorush changes only a URL. The mapping table is in docs/api.md ("gorush compatibility").
/// Pure; Foundation's JSON is fine here (this is not the worker's hot path).
public enum GorushRequest {
    /// One Herald job made from a notification, and what gorush's answer says of it.
    public struct Job: Equatable {
        /// The notification's index in `notifications`.
        public var notification: Int
        /// `ios` or `android`, as gorush's logs name platforms.
        public var platform: String
        /// Devices it reaches (for gorush's `counts`; a topic counts as one).
        public var tokens: [String]
        public var bytes: [UInt8]
    }

    public enum Mapped: Equatable {
        case jobs([Job])
        /// gorush's own 400 answers (`{"message": ...}`).
        case refused(String)
    }

    public static func map(_ body: [UInt8], maxNotifications: Int) -> Mapped {
        guard let root = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            return .refused("Missing notifications field.")
        }
        guard let list = root["notifications"] as? [Any] else { return .refused("Missing notifications field.") }
        guard !list.isEmpty else { return .refused("Notifications field is empty.") }
        guard list.count <= maxNotifications else { return .refused("Number of notifications(\(list.count)) over limit(\(maxNotifications))") }
        var jobs: [Job] = []
        for (index, item) in list.enumerated() {
            let n = item as? [String: Any] ?? [:]
            let platform = (n["platform"] as? NSNumber)?.intValue ?? 0
            let tokens = (n["tokens"] as? [Any])?.compactMap { $0 as? String } ?? []
            switch platform {
            case 1:
                jobs.append(Job(notification: index, platform: "ios", tokens: tokens, bytes: encode(apnsJob(n, tokens: tokens))))
            case 2:
                // One FCM job per token (FCM v1 sends to one target); `to`/`topic` or `condition` is one more job.
                for token in tokens {
                    jobs.append(Job(notification: index, platform: "android", tokens: [token], bytes: encode(fcmJob(n, target: ["token": token]))))
                }
                if let target = fcmTopicTarget(n) {
                    jobs.append(Job(notification: index, platform: "android", tokens: [], bytes: encode(fcmJob(n, target: target))))
                }
                if tokens.isEmpty && fcmTopicTarget(n) == nil {
                    // No target at all: a job the worker's intake refuses with its own reason.
                    jobs.append(Job(notification: index, platform: "android", tokens: [], bytes: encode(fcmJob(n, target: [:]))))
                }
            default:
                // Not a Herald job at all: its `platform` makes the intake refuse it with `bad_platform`.
                var job: [String: Any] = ["platform": platform == 3 ? "huawei" : String(platform)]
                if let id = n["notif_id"] { job["id"] = id }
                jobs.append(Job(notification: index, platform: platform == 3 ? "huawei" : "unknown", tokens: tokens, bytes: encode(job)))
            }
        }
        return .jobs(jobs)
    }

    /// gorush's iOS fields as an APNs job: `aps` from `alert` (or `title`/`message`), `badge`, `sound`,
    /// `category`, `thread_id`, `content_available`, `mutable_content`; `data` at the payload's top level.
    static func apnsJob(_ n: [String: Any], tokens: [String]) -> [String: Any] {
        var aps: [String: Any] = [:]
        if let alert = n["alert"] as? [String: Any], !alert.isEmpty {
            var merged = alert
            if merged["body"] == nil, let message = n["message"] as? String { merged["body"] = message }
            if merged["title"] == nil, let title = n["title"] as? String { merged["title"] = title }
            aps["alert"] = merged
        } else if let title = n["title"] as? String, !title.isEmpty {
            aps["alert"] = ["title": title, "body": n["message"] as? String ?? ""]
        } else if let message = n["message"] as? String, !message.isEmpty {
            aps["alert"] = message
        }
        if let badge = n["badge"] as? NSNumber { aps["badge"] = badge }
        if let sound = n["sound"] as? String { aps["sound"] = sound }
        if let sound = n["sound"] as? [String: Any] { aps["sound"] = sound }
        if aps["sound"] == nil, n["name"] != nil || n["volume"] != nil {
            var sound: [String: Any] = [:]
            if let name = n["name"] { sound["name"] = name }
            if let volume = n["volume"] { sound["volume"] = volume }
            aps["sound"] = sound
        }
        if let category = n["category"] as? String { aps["category"] = category }
        if let thread = n["thread_id"] as? String { aps["thread-id"] = thread }
        if n["content_available"] as? Bool == true { aps["content-available"] = 1 }
        if n["mutable_content"] as? Bool == true { aps["mutable-content"] = 1 }
        var payload: [String: Any] = (n["data"] as? [String: Any]) ?? [:]
        payload["aps"] = aps
        var job: [String: Any] = ["payload": payload]
        if tokens.count == 1 { job["token"] = tokens[0] } else { job["tokens"] = tokens }
        if let id = n["notif_id"] as? String, !id.isEmpty { job["id"] = id }
        if let app = n["app"] as? String { job["app"] = app }
        if let topic = n["topic"] as? String, !topic.isEmpty { job["topic"] = topic }
        if let priority = n["priority"] as? String { job["priority"] = priority == "normal" ? 5 : 10 }
        if let expiration = n["expiration"] as? NSNumber { job["expiration"] = expiration }
        if let apnsID = n["apns_id"] as? String { job["apns_id"] = apnsID }
        if let pushType = n["push_type"] as? String { job["push_type"] = pushType }
        if let collapse = n["collapse_id"] as? String { job["collapse_id"] = collapse }
        if n["production"] as? Bool == true { job["environment"] = "production" }
        if n["development"] as? Bool == true { job["environment"] = "sandbox" }
        return job
    }

    /// `to` or `topic` naming a topic (`/topics/<name>` or a bare name), else `condition`.
    static func fcmTopicTarget(_ n: [String: Any]) -> [String: Any]? {
        for field in ["to", "topic"] {
            if let text = n[field] as? String, !text.isEmpty {
                if text.hasPrefix("/topics/") { return ["topic": String(text.dropFirst("/topics/".count))] }
                // gorush's `to` may also be a registration token.
                return field == "to" ? ["token": text] : ["topic": text]
            }
        }
        if let condition = n["condition"] as? String, !condition.isEmpty { return ["condition": condition] }
        return nil
    }

    /// gorush's Android fields as an FCM v1 message: `notification` from `title`/`message`/`image`, `data` as
    /// strings (FCM v1 takes only strings there), `android` from `priority`, `collapse_key`, `time_to_live`,
    /// `restricted_package_name` and gorush's `notification` object.
    static func fcmJob(_ n: [String: Any], target: [String: Any]) -> [String: Any] {
        var message = target
        var notification: [String: Any] = [:]
        if let title = n["title"] as? String, !title.isEmpty { notification["title"] = title }
        if let body = n["message"] as? String, !body.isEmpty { notification["body"] = body }
        if let image = n["image"] as? String, !image.isEmpty { notification["image"] = image }
        if !notification.isEmpty { message["notification"] = notification }
        if let data = n["data"] as? [String: Any], !data.isEmpty {
            message["data"] = data.mapValues { value -> String in
                if let text = value as? String { return text }
                // The value as JSON text (`{"v":<value>}` trimmed: JSONSerialization writes only containers).
                return String(decoding: encode(["v": value]).dropFirst(5).dropLast(), as: UTF8.self)
            }
        }
        var android: [String: Any] = [:]
        if let priority = n["priority"] as? String { android["priority"] = priority == "high" ? "HIGH" : "NORMAL" }
        if let collapse = n["collapse_key"] as? String { android["collapse_key"] = collapse }
        if let ttl = n["time_to_live"] as? NSNumber { android["ttl"] = "\(ttl.intValue)s" }
        if let package = n["restricted_package_name"] as? String { android["restricted_package_name"] = package }
        if let extra = n["notification"] as? [String: Any], !extra.isEmpty { android["notification"] = extra }
        if !android.isEmpty { message["android"] = android }
        var job: [String: Any] = ["platform": "fcm", "message": message]
        if let id = n["notif_id"] as? String, !id.isEmpty {
            let suffix = (target["token"] as? String).map { "." + String($0.suffix(8)) } ?? ""
            job["id"] = id + suffix
        }
        if let app = n["app"] as? String { job["app"] = app }
        return job
    }

    static func encode(_ object: [String: Any]) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8))
    }
}

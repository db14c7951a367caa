import Basics
import PushCore

/// gorush's `POST /api/push` body (`{"notifications": [...]}`, as its README documents it) turned into Herald jobs,
/// so a team coming from gorush changes only a URL. Exact or loud: the body is decoded with the Go types of
/// gorush's struct (`GorushFields`: a wrong type or an overflowing number fails the request with a 400, as gorush
/// answers), and every field a notification gives must land in its job; one Herald cannot send (`retry`, a
/// per-request `app_secret`, a field of another platform...) refuses that notification, naming the field, instead of
/// being dropped. The mapping table is in docs/api.md ("gorush compatibility"). Pure.
public enum GorushRequest {
    /// One Herald job made from a notification, or the notification's refusal, and what gorush's answer says of it.
    public struct Job: Equatable {
        /// The notification's index in `notifications`.
        public var notification: Int
        /// `ios`, `android` or `huawei`, as gorush's logs name platforms (`unknown` for another number).
        public var platform: String
        /// Devices it reaches (for gorush's `counts`; a topic counts as one).
        public var tokens: [String]
        /// The job, empty when `refusal` is set.
        public var bytes: [UInt8]
        /// Why the notification was refused before it became a job, and the gorush field that made it so.
        public var refusal: String? = nil
        public var field: String? = nil
        /// gorush's `notif_id` and `message`, which its logs repeat.
        public var notifID = ""
        public var message = ""
    }

    public enum Mapped: Equatable {
        /// `sync`: the body's top-level `"sync": true` (Herald's addition: wait for the outcomes, docs/api.md).
        case jobs([Job], sync: Bool)
        /// A 400 in gorush's words (`message`), with what Go's decoder said when decoding failed (`detail`).
        case refused(message: String, detail: String?)
    }

    static let missing = "Missing notifications field."

    /// `hmsAppIDs`: gorush's `app_id` (a Huawei app ID) to the name of the configured Huawei app that has it.
    public static func map(_ body: [UInt8], maxNotifications: Int, hmsAppIDs: [String: String] = [:]) -> Mapped {
        let notifications: [[(String, GoJSON)]]
        let sync: Bool
        switch decode(body) {
        case .failure(let error): return .refused(message: missing, detail: error.text)
        case .success((nil, _)): return .refused(message: missing, detail: nil)
        case .success((let list?, let wanted)): (notifications, sync) = (list, wanted)
        }
        guard !notifications.isEmpty else { return .refused(message: "Notifications field is empty.", detail: nil) }
        guard notifications.count <= maxNotifications else {
            return .refused(message: "Number of notifications(\(notifications.count)) over limit(\(maxNotifications))", detail: nil)
        }
        var jobs: [Job] = []
        for (index, members) in notifications.enumerated() {
            var n = Notification(fields: Dictionary(members, uniquingKeysWith: { $1 }))
            let platform = n.int("platform") ?? 0
            let name = [1: "ios", 2: "android", 3: "huawei"][platform] ?? "unknown"
            let notifID = n.fields["notif_id"]?.string ?? ""
            let message = n.fields["message"]?.string ?? ""
            // gorush adds `to` to the tokens (Android's `/topics/<name>` aside: a topic there).
            var tokens = n.strings("tokens")
            if let to = n.text("to"), !(platform == 2 && to.hasPrefix("/topics/")) { tokens.append(to) }
            do throws(Refusal) {
                var made: [Job] = []
                switch platform {
                case 1: made = [Job(notification: index, platform: name, tokens: tokens, bytes: try apnsJob(&n, tokens: tokens).bytes)]
                case 2: made = try fcmJobs(&n, tokens: tokens).map { Job(notification: index, platform: name, tokens: $0.tokens, bytes: $0.job.bytes) }
                case 3: made = [Job(notification: index, platform: name, tokens: tokens, bytes: try hmsJob(&n, tokens: tokens, hmsAppIDs: hmsAppIDs).bytes)]
                default: throw Refusal(field: "platform", reason: "bad_platform: gorush platform \(platform) is none of 1 (iOS), 2 (Android, Firebase), 3 (Huawei)")
                }
                if let field = n.unused.first { throw Refusal(field: field, reason: unsupported(field, platform: platform)) }
                for var job in made {
                    job.notifID = notifID
                    job.message = message
                    jobs.append(job)
                }
            } catch {
                jobs.append(Job(notification: index, platform: name, tokens: tokens, bytes: [], refusal: error.reason, field: error.field,
                                notifID: notifID, message: message))
            }
        }
        return .jobs(jobs, sync: sync)
    }

    /// The notifications as Go would decode `{"notifications": [...]}` into gorush's structs (nil: none given), and
    /// Herald's top-level `sync`.
    static func decode(_ body: [UInt8]) -> Result<([[(String, GoJSON)]]?, sync: Bool), GorushFields.DecodeError> {
        let root: GoJSON
        switch GoJSON.parse(body) {
        case .failure(let error): return .failure(GorushFields.DecodeError(text: "the body is not JSON: \(error)"))
        case .success(let value): root = value
        }
        do throws(GorushFields.DecodeError) {
            let list = GorushFields.Field(name: "notifications", type: .any), sync = GorushFields.Field(name: "sync", type: .bool)
            let top = try GorushFields.decodeStruct(root, fields: [list, sync], path: "notify.RequestPush")
            let wantsSync = top.contains { $0.0 == "sync" }
            guard let value = top.first(where: { $0.0 == "notifications" })?.1, value != .null else { return .success((nil, wantsSync)) }
            guard case .array(let elements) = value else {
                throw GorushFields.DecodeError(text: "json: cannot unmarshal \(value.goKind) into Go struct field RequestPush.notifications of type []notify.PushNotification")
            }
            return .success((try elements.map { element throws(GorushFields.DecodeError) in
                try GorushFields.decodeStruct(element, fields: GorushFields.all, path: "PushNotification.notifications")
            }, wantsSync))
        } catch {
            return .failure(error)
        }
    }

    /// A notification's decoded fields, and which of them its job has taken.
    struct Notification {
        let fields: [String: GoJSON]
        var used: Set<String> = []

        mutating func take(_ name: String) -> GoJSON? {
            used.insert(name)
            return fields[name]
        }
        mutating func text(_ name: String) -> String? { take(name)?.string }
        mutating func int(_ name: String) -> Int64? {
            if case .number(let text)? = take(name) { Int64(text) } else { nil }
        }
        mutating func strings(_ name: String) -> [String] {
            if case .array(let list)? = take(name) { list.compactMap(\.string) } else { [] }
        }
        /// Given fields no job took, in the table's order.
        var unused: [String] { GorushFields.all.map(\.name).filter { fields[$0] != nil && !used.contains($0) } }
    }

    struct Refusal: Error {
        let field: String
        let reason: String
    }

    /// Why a field no job of `platform` takes refuses the notification.
    static func unsupported(_ field: String, platform: Int64) -> String {
        let why = switch field {
        case "retry": "Herald retries as its retry policy says (retry.*), not a count per notification"
        case "delay_while_idle": "FCM HTTP v1 has no such option"
        case "app_secret": "Herald sends with the configured app's secret (apps[].hms.client_secret_file), never one from a request"
        default: "Herald has nowhere to put it in a \(["ios": "APNs", "android": "FCM", "huawei": "Push Kit"][[1: "ios", 2: "android", 3: "huawei"][platform] ?? ""] ?? "") job"
        }
        return "unsupported_field: gorush's `\(field)` cannot be honoured: \(why); the notification was not sent (drop the field to send it)"
    }

    // MARK: iOS

    /// gorush's iOS fields as an APNs job, as gorush builds its APNs request (notify/notification_apns.go), with the
    /// `apns` override (`headers`, `payload`) applied on top as FCM applies it to an iOS device.
    static func apnsJob(_ n: inout Notification, tokens: [String]) throws(Refusal) -> GoJSON {
        var aps = GoJSON.object([])
        let title = n.text("title"), message = n.text("message")
        var alert = GoJSON.object([])
        if let title { alert = alert.setting("title", .string(title)) }
        if let message, title != nil { alert = alert.setting("body", .string(message)) }
        if let given = n.take("alert") { alert = alert.merged(with: given) }
        if alert != .object([]) {
            // gorush would drop `message` here; Herald keeps it as the body when the alert has none.
            if let message, alert["body"] == nil { alert = alert.setting("body", .string(message)) }
            aps = aps.setting("alert", alert)
        } else if let message {
            aps = aps.setting("alert", .string(message))
        }
        if let badge = n.int("badge") {
            guard badge >= 0 else { throw Refusal(field: "badge", reason: "bad_badge: a negative badge (gorush drops it without a word)") }
            aps = aps.setting("badge", .number(String(badge)))
        }
        var sound = n.take("sound")
        if let given = sound, given.string == nil, given.members == nil {
            throw Refusal(field: "sound", reason: "bad_sound: `sound` must be a string or a {critical, name, volume} object, not \(given.goKind)")
        }
        let name = n.take("name"), volume = n.take("volume")
        if name != nil || volume != nil {
            // The dictionary form, keeping a string `sound` as its name (gorush would lose it).
            var dictionary = sound?.members.map(GoJSON.object) ?? .object(sound.map { [("name", $0)] } ?? [])
            if let name { dictionary = dictionary.setting("name", name) }
            if let volume {
                guard (Float(volume.numberText) ?? 0) > 0 else { throw Refusal(field: "volume", reason: "bad_sound: `volume` must be above 0 (gorush drops it without a word)") }
                dictionary = dictionary.setting("volume", volume)
            }
            sound = dictionary
        }
        if let sound { aps = aps.setting("sound", sound) }
        if n.take("content_available") != nil { aps = aps.setting("content-available", .number("1")) }
        if n.take("mutable_content") != nil { aps = aps.setting("mutable-content", .number("1")) }
        for (field, key) in [("url-args", "url-args"), ("thread_id", "thread-id"), ("thread-id", "thread-id"), ("category", "category"),
                             ("interruption_level", "interruption-level"), ("content-state", "content-state"), ("event", "event"),
                             ("attributes-type", "attributes-type"), ("attributes", "attributes"), ("relevance-score", "relevance-score")] {
            if let value = n.take(field) { aps = aps.setting(key, value) }
        }
        for field in ["timestamp", "stale-date", "dismissal-date"] {
            guard let value = n.int(field) else { continue }
            guard value > 0 else { throw Refusal(field: field, reason: "bad_live_activity: `\(field)` must be a UNIX time above 0 (gorush drops it without a word)") }
            aps = aps.setting(field, .number(String(value)))
        }
        var payload = GoJSON.object([])
        for (key, value) in n.take("data")?.members ?? [] {
            guard key != "aps" else { throw Refusal(field: "data", reason: "bad_data: `data.aps` would replace the aps dictionary") }
            payload = payload.setting(key, value)
        }
        payload = payload.setting("aps", aps)
        var job = GoJSON.object([])
        if let id = n.text("notif_id") { job = job.setting("id", .string(id)) }
        if let app = n.text("app") { job = job.setting("app", .string(app)) }
        job = tokens.count == 1 ? job.setting("token", .string(tokens[0])) : job.setting("tokens", .array(tokens.map(GoJSON.string)))
        if let topic = n.text("topic") { job = job.setting("topic", .string(topic)) }
        if let priority = n.text("priority") {
            guard let value = ["high": "10", "normal": "5"][priority] else { throw badPriority(priority) }
            job = job.setting("priority", .number(value))
        }
        if let expiration = n.take("expiration") { job = job.setting("expiration", expiration) }
        for field in ["apns_id", "push_type", "collapse_id"] {
            if let value = n.take(field) { job = job.setting(field, value) }
        }
        // gorush's order: `production` first.
        if n.take("production") != nil {
            job = job.setting("environment", .string("production"))
        } else if n.take("development") != nil {
            job = job.setting("environment", .string("sandbox"))
        }
        if n.take("dry_run") != nil { job = job.setting("validate_only", .bool(true)) }
        if let apns = n.take("apns") { job = try applyAPNsOverride(apns, to: job, payload: payload) } else { job = job.setting("payload", payload) }
        return job
    }

    /// The `apns` object (Firebase's APNSConfig) on an APNs job: `payload` merged over the built payload (its `aps`
    /// member by member), and each `headers` entry as the job field that sets that header.
    static func applyAPNsOverride(_ apns: GoJSON, to job: GoJSON, payload: GoJSON) throws(Refusal) -> GoJSON {
        var job = job
        var payload = payload
        for (key, value) in apns.members ?? [] {
            switch (key, value) {
            case ("payload", .object), ("payload", .null):
                payload = payload.merged(with: value == .null ? .object([]) : value)
            case ("headers", .object(let headers)):
                for (header, value) in headers {
                    guard let text = value.string else { throw Refusal(field: "apns", reason: "bad_apns: apns.headers.\(header) must be a string") }
                    switch header.lowercased() {
                    case "apns-priority", "apns-expiration":
                        guard let number = Int64(text) else { throw Refusal(field: "apns", reason: "bad_apns: apns.headers.\(header) must be a number") }
                        job = job.setting(header.lowercased() == "apns-priority" ? "priority" : "expiration", .number(String(number)))
                    case "apns-collapse-id": job = job.setting("collapse_id", .string(text))
                    case "apns-push-type": job = job.setting("push_type", .string(text))
                    case "apns-id": job = job.setting("apns_id", .string(text))
                    case "apns-topic": job = job.setting("topic", .string(text))
                    default: throw Refusal(field: "apns", reason: "unsupported_field: apns.headers.\(header) is no header Herald sets; the notification was not sent")
                    }
                }
            case (_, .null):
                continue
            default:
                throw Refusal(field: "apns", reason: "unsupported_field: apns.\(key) has no counterpart in an APNs job (Herald takes apns.headers and apns.payload); the notification was not sent")
            }
        }
        return job.setting("payload", payload)
    }

    static func badPriority(_ priority: String) -> Refusal {
        Refusal(field: "priority", reason: "bad_priority: gorush's `priority` is `high` or `normal`, not \(priority.debugDescription)")
    }

    // MARK: Android (Firebase)

    /// gorush's Android fields as FCM HTTP v1 messages, as gorush builds them (notify/notification_fcm.go): one
    /// job per token, and one for `topic`/`condition` (or a `to` of `/topics/<name>`).
    static func fcmJobs(_ n: inout Notification, tokens: [String]) throws(Refusal) -> [(tokens: [String], job: GoJSON)] {
        var notification = GoJSON.object([])
        var androidNotification = GoJSON.object([])
        // gorush's `notification` is Firebase's (title, body, image); the README's other members (icon, color,
        // tag, click_action, *_loc_*...) are Android's notification fields in FCM v1.
        for (key, value) in n.take("notification")?.members ?? [] {
            if ["title", "body", "image"].contains(key) {
                notification = notification.setting(key, value)
            } else {
                androidNotification = androidNotification.setting(key, value)
            }
        }
        for (field, key) in [("title", "title"), ("message", "body"), ("image", "image")] {
            if let value = n.take(field) { notification = notification.setting(key, value) }
        }
        var android = GoJSON.object([])
        if let priority = n.text("priority") {
            guard let value = ["high": "HIGH", "normal": "NORMAL"][priority] else { throw badPriority(priority) }
            android = android.setting("priority", .string(value))
        }
        if let collapse = n.take("collapse_key") { android = android.setting("collapse_key", collapse) }
        if let ttl = n.take("time_to_live") { android = android.setting("ttl", .string(ttl.numberText + "s")) }
        if let package = n.take("restricted_package_name") { android = android.setting("restricted_package_name", package) }
        var apns = GoJSON.object([])
        if let sound = n.take("sound") {
            guard let text = sound.string else { throw Refusal(field: "sound", reason: "bad_sound: an Android `sound` is a string (gorush drops any other)") }
            androidNotification = androidNotification.setting("sound", .string(text))
            apns = apns.merged(with: .object([("payload", .object([("aps", .object([("sound", .string(text))]))]))]))
        }
        if n.take("content_available") != nil {
            apns = apns.merged(with: .object([("headers", .object([("apns-priority", .string("5"))])),
                                              ("payload", .object([("aps", .object([("content-available", .number("1"))]))]))]))
        }
        if n.take("mutable_content") != nil {
            apns = apns.merged(with: .object([("payload", .object([("aps", .object([("mutable-content", .number("1"))]))]))]))
        }
        if androidNotification != .object([]) { android = android.setting("notification", androidNotification) }
        // The explicit Firebase objects win over what the flat fields made.
        if let given = n.take("android") { android = android.merged(with: given) }
        if let given = n.take("apns") { apns = apns.merged(with: given) }
        var message = GoJSON.object([])
        if notification != .object([]) { message = message.setting("notification", notification) }
        if let data = n.take("data")?.members {
            message = message.setting("data", .object(data.map { key, value in
                // FCM v1 takes only strings in `data`: anything else as its JSON text, as gorush marshals it.
                (key, value.string.map(GoJSON.string) ?? .string(String(decoding: value.bytes, as: UTF8.self)))
            }))
        }
        if android != .object([]) { message = message.setting("android", android) }
        if apns != .object([]) { message = message.setting("apns", apns) }
        for field in ["webpush", "fcm_options"] {
            if let value = n.take(field) { message = message.setting(field, value) }
        }
        var job = GoJSON.object([("platform", .string("fcm"))])
        if let app = n.text("app") { job = job.setting("app", .string(app)) }
        if n.take("dry_run") != nil { job = job.setting("validate_only", .bool(true)) }
        let notifID = n.text("notif_id")
        func made(_ target: [(String, GoJSON)], suffix: String?) -> GoJSON {
            var one = job
            if let notifID { one = one.setting("id", .string(notifID + (suffix.map { "." + $0 } ?? ""))) }
            return one.setting("message", .object(target + (message.members ?? [])))
        }
        var jobs: [(tokens: [String], job: GoJSON)] = tokens.map { token in
            ([token], made([("token", .string(token))], suffix: String(token.suffix(8))))
        }
        // gorush puts `topic` and `condition` on one message (the worker refuses two targets, as FCM does).
        var target: [(String, GoJSON)] = []
        if let to = n.fields["to"]?.string, to.hasPrefix("/topics/") { target.append(("topic", .string(String(to.dropFirst("/topics/".count))))) }
        if let topic = n.take("topic") { target.append(("topic", topic)) }
        if let condition = n.take("condition") { target.append(("condition", condition)) }
        if !target.isEmpty || tokens.isEmpty {
            // No target at all: a job the worker's intake refuses with its own reason.
            jobs.append(([], made(target, suffix: nil)))
        }
        return jobs
    }

    // MARK: Huawei

    /// gorush's Huawei fields as one Push Kit job (`"platform": "hms"`, every token in `message.token`), as gorush
    /// builds it (notify/notification_hms.go, with go-hms-push's defaults).
    static func hmsJob(_ n: inout Notification, tokens: [String], hmsAppIDs: [String: String]) throws(Refusal) -> GoJSON {
        var message = GoJSON.object([])
        if !tokens.isEmpty { message = message.setting("token", .array(tokens.map(GoJSON.string))) }
        if let topic = n.take("topic") { message = message.setting("topic", topic) }
        if let condition = n.take("condition") { message = message.setting("condition", condition) }
        var android = GoJSON.object([("urgency", .string("NORMAL")), ("ttl", .string("86400s"))])
        if let priority = n.text("priority") {
            guard let value = ["high": "HIGH", "normal": "NORMAL"][priority] else { throw badPriority(priority) }
            android = android.setting("urgency", .string(value))
        }
        for (field, key) in [("huawei_collapse_key", "collapse_key"), ("category", "category"), ("huawei_ttl", "ttl"),
                             ("bi_tag", "bi_tag"), ("fast_app_target", "fast_app_target")] {
            if let value = n.take(field) { android = android.setting(key, value) }
        }
        if let data = n.take("huawei_data") { message = message.setting("data", data) }
        var notification: GoJSON? = nil
        if let given = n.take("huawei_notification") {
            notification = given["click_action"] == nil ? given.setting("click_action", defaultClickAction) : given
        }
        let sound = n.take("sound")
        if let sound, sound.string == nil { throw Refusal(field: "sound", reason: "bad_sound: a Huawei `sound` is a string (gorush drops any other)") }
        for (field, key) in [("message", "body"), ("title", "title"), ("image", "image")] {
            guard let value = n.take(field) else { continue }
            notification = (notification ?? defaultNotification).setting(key, value)
        }
        if let sound {
            notification = (notification ?? defaultNotification).setting("sound", sound)
        } else if let given = notification {
            notification = given.setting("default_sound", .bool(true))
        }
        if let notification { android = android.setting("notification", notification) }
        message = message.setting("android", android)
        var job = GoJSON.object([("platform", .string("hms"))])
        if let id = n.text("notif_id") { job = job.setting("id", .string(id)) }
        if let app = n.text("app") { job = job.setting("app", .string(app)) }
        if let appID = n.text("app_id") {
            guard let app = hmsAppIDs[appID] else {
                throw Refusal(field: "app_id", reason: "UnknownApp: no configured Huawei app has app_id \(appID.debugDescription)")
            }
            job = job.setting("app", .string(app))
        }
        if n.take("dry_run") != nil { job = job.setting("validate_only", .bool(true)) }
        return job.setting("message", message)
    }

    /// go-hms-push's `GetDefaultClickAction` and `GetDefaultAndroidNotification`, which gorush starts from.
    static let defaultClickAction = GoJSON.object([("type", .number("1")), ("action", .string("Action"))])
    static let defaultNotification = GoJSON.object([
        ("default_sound", .bool(true)), ("importance", .string("NORMAL")), ("click_action", defaultClickAction),
        ("use_default_vibrate", .bool(true)), ("use_default_light", .bool(true)), ("visibility", .string("PRIVATE")),
        ("foreground_show", .bool(true)), ("auto_cancel", .bool(true)),
    ])
}

extension GoJSON {
    /// A number's literal text (empty for anything else).
    var numberText: String { if case .number(let text) = self { text } else { "" } }
}

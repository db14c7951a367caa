/// gorush's notification fields with the Go types its `PushNotification` struct gives them (notify/notification.go;
/// the README's table for the legacy Android fields the struct no longer has), and their decoding as Go's
/// encoding/json would do it: a value of another JSON kind, a number that is not an integer where an integer is
/// wanted, or one outside the Go type's range fails the whole request, as gin's binding makes gorush answer 400.
/// Keys match case-insensitively when no key matches exactly, and the last of repeated keys wins, as in Go.
enum GorushFields {
    indirect enum GoType: Equatable, Sendable {
        case string, bool, int, int64, uint, float32, float64, any, strings
        /// `map[string]any` (gorush's `D`).
        case map
        /// `map[string]string` (the Firebase SDK's headers and data).
        case stringMap
        /// gorush's `Alert` struct.
        case alert
        /// A struct of the Firebase or Huawei SDK (`notification`, `android`, `apns`...), by its Go name: the members
        /// listed are decoded with their types; the others are handed on as they are, to the provider's message,
        /// where the worker's own checks judge them.
        case object(String, [Field])

        var goName: String {
            switch self {
            case .string: "string"
            case .bool: "bool"
            case .int: "int"
            case .int64: "int64"
            case .uint: "uint"
            case .float32: "float32"
            case .float64: "float64"
            case .any: "interface {}"
            case .strings: "[]string"
            case .map: "notify.D"
            case .stringMap: "map[string]string"
            case .alert: "notify.Alert"
            case .object(let name, _): name
            }
        }
    }

    struct Field: Equatable, Sendable {
        let name: String
        let type: GoType
        /// A Go pointer (`*int`): its zero value is a value (`"badge": 0` clears the badge); for the others the
        /// zero value is the same as the field's absence, as gorush reads them (`omitempty`, `len(x) > 0`).
        var pointer = false
    }

    /// Every field of gorush's request, by Go type: its struct's (common, Android, Huawei, iOS and Live Activity
    /// fields), the README table's legacy Android fields its struct has dropped (`collapse_key`, `delay_while_idle`,
    /// `time_to_live`, `restricted_package_name`, `dry_run`, with the README's types), and Herald's own `app` (the
    /// app to send with) and `thread_id` (the spelling of `thread-id` Herald took before).
    static let all: [Field] = [
        ("notif_id to topic message title image priority condition collapse_key restricted_package_name app_id app_secret "
         + "huawei_data huawei_ttl bi_tag apns_id collapse_id push_type category thread-id name interruption_level event "
         + "attributes-type app thread_id", GoType.string),
        ("content_available mutable_content delay_while_idle dry_run production development", .bool),
        ("platform retry huawei_collapse_key fast_app_target", .int), ("stale-date dismissal-date timestamp", .int64),
        ("tokens url-args", .strings), ("data content-state attributes", .map), ("sound", .any), ("alert", .alert),
        ("notification", .object("messaging.Notification", strings("title body image"))),
        ("android", .object("messaging.AndroidConfig", strings("collapse_key priority ttl restricted_package_name") + [
            Field(name: "data", type: .stringMap), Field(name: "notification", type: .object("messaging.AndroidNotification", androidNotification)),
            Field(name: "fcm_options", type: .object("messaging.AndroidFCMOptions", strings("analytics_label"))),
        ] + bools("direct_boot_ok bandwidth_constrained_ok restricted_satellite_ok"))),
        ("webpush", .object("messaging.WebpushConfig", [
            Field(name: "headers", type: .stringMap), Field(name: "data", type: .stringMap),
            Field(name: "fcm_options", type: .object("messaging.WebpushFCMOptions", strings("link"))),
        ])),
        ("apns", .object("messaging.APNSConfig", [
            Field(name: "headers", type: .stringMap), Field(name: "payload", type: .object("messaging.APNSPayload", [])),
            Field(name: "fcm_options", type: .object("messaging.APNSFCMOptions", strings("analytics_label image"))),
        ] + strings("live_activity_token"))),
        ("fcm_options", .object("messaging.FCMOptions", strings("analytics_label"))),
        ("huawei_notification", .object("model.AndroidNotification", strings(
            "title body icon color sound tag body_loc_key title_loc_key channel_id notify_summary image big_title big_body group "
            + "ticker importance visibility")
            // Its booleans are handed on as given: Push Kit's defaults for some (`foreground_show`, `auto_cancel`) are true.
            + [Field(name: "body_loc_args", type: .strings), Field(name: "title_loc_args", type: .strings),
               Field(name: "style", type: .int), Field(name: "auto_clear", type: .int), Field(name: "notify_id", type: .int)])),
        ("time_to_live", .uint), ("volume", .float32),
    ].flatMap { names, type in names.split(separator: " ").map { Field(name: String($0), type: type) } } + [
        Field(name: "expiration", type: .int64, pointer: true), Field(name: "badge", type: .int, pointer: true),
        Field(name: "relevance-score", type: .float64, pointer: true),
    ]

    static func strings(_ names: String) -> [Field] { names.split(separator: " ").map { Field(name: String($0), type: .string) } }
    static func bools(_ names: String) -> [Field] { names.split(separator: " ").map { Field(name: String($0), type: .bool) } }

    /// Firebase's `AndroidNotification` (the members its JSON names directly).
    static let androidNotification = strings("title body icon color sound tag click_action body_loc_key title_loc_key channel_id image ticker")
        + bools("sticky local_only default_vibrate_timings default_sound default_light_settings")
        + [Field(name: "body_loc_args", type: .strings), Field(name: "title_loc_args", type: .strings),
           Field(name: "notification_count", type: .int, pointer: true)]

    /// gorush's `Alert` struct (the iOS alert dictionary): its members' types.
    static let alertFields: [Field] = [
        "action", "action-loc-key", "body", "launch-image", "loc-key", "title", "subtitle", "title-loc-key", "summary-arg",
    ].map { Field(name: $0, type: .string) } + [
        Field(name: "loc-args", type: .strings), Field(name: "title-loc-args", type: .strings),
        Field(name: "summary-arg-count", type: .int),
    ]

    /// Go's own words for a value it cannot decode.
    struct DecodeError: Error, Equatable {
        let text: String
    }

    /// `object`'s members decoded as the struct `fields` describe (`path` names it in errors): each field's value
    /// when it is not null and not its zero value (see `Field.pointer`); members no field names are kept as they
    /// are when `keepUnknown`, else ignored (as Go ignores them).
    static func decodeStruct(_ value: GoJSON, fields: [Field], path: String, keepUnknown: Bool = false,
                             typeName: String? = nil) throws(DecodeError) -> [(String, GoJSON)] {
        if value == .null { return [] }
        guard let members = value.members else { throw DecodeError(text: "json: cannot unmarshal \(value.goKind) into Go value of type \(typeName ?? path)") }
        var out: [(String, GoJSON)] = []
        for (key, member) in members {
            let field = fields.first { $0.name == key } ?? fields.first { $0.name.lowercased() == key.lowercased() }
            guard let field else {
                if keepUnknown { out.removeAll { $0.0 == key }; out.append((key, member)) }
                continue
            }
            let decoded = try decode(member, field: field, path: path)
            // The last of repeated keys wins; a null one leaves the field as it was (Go's rule for non-pointers).
            if member == .null && !field.pointer { continue }
            out.removeAll { $0.0 == field.name }
            if let decoded { out.append((field.name, decoded)) }
        }
        return out
    }

    /// One field's value checked against its Go type: nil when it is null or (for non-pointers) the zero value.
    static func decode(_ value: GoJSON, field: Field, path: String) throws(DecodeError) -> GoJSON? {
        func wrong() -> DecodeError {
            DecodeError(text: "json: cannot unmarshal \(value.goKind) into Go struct field \(path).\(field.name) of type \(field.pointer ? "*" : "")\(field.type.goName)")
        }
        if value == .null { return nil }
        switch (field.type, value) {
        case (.any, _): return value
        // An empty struct asks for nothing; a member that is null or its zero value is left out, as Go's omitempty does.
        case (.object(let name, let fields), .object):
            let members = try decodeStruct(value, fields: fields, path: "\(path).\(field.name)", keepUnknown: true, typeName: name)
            return members.isEmpty ? nil : .object(members)
        case (.stringMap, .object(let m)):
            for (key, element) in m where element.string == nil && element != .null {
                throw DecodeError(text: "json: cannot unmarshal \(element.goKind) into Go struct field \(path).\(field.name) of type string (at \(key.debugDescription))")
            }
            return m.isEmpty ? nil : value
        case (.string, .string(let s)): return s.isEmpty ? nil : value
        case (.bool, .bool(let b)): return b ? value : nil
        case (.int, .number(let text)), (.int64, .number(let text)):
            guard let n = Int64(text) else { throw wrong() }
            return n == 0 && !field.pointer ? nil : .number(String(n))
        case (.uint, .number(let text)):
            guard let n = UInt64(text) else { throw wrong() }
            return n == 0 ? nil : .number(String(n))
        case (.float32, .number(let text)):
            guard let n = Float(text), n.isFinite else { throw wrong() }
            return n == 0 && !field.pointer ? nil : value
        case (.float64, .number(let text)):
            guard let n = Double(text), n.isFinite else { throw wrong() }
            return n == 0 && !field.pointer ? nil : value
        case (.strings, .array(let list)):
            for element in list where element.string == nil && element != .null {
                throw DecodeError(text: "json: cannot unmarshal \(element.goKind) into Go struct field \(path).\(field.name) of type string")
            }
            // A null element is Go's zero value, the empty string.
            let strings = list.map { $0.string.map(GoJSON.string) ?? .string("") }
            return strings.isEmpty ? nil : .array(strings)
        case (.map, .object(let m)): return m.isEmpty ? nil : value
        case (.alert, .object):
            let members = try decodeStruct(value, fields: alertFields, path: "notify.Alert", keepUnknown: true)
            return members.isEmpty ? nil : .object(members)
        default:
            throw wrong()
        }
    }
}

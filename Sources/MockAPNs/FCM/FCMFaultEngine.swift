import Basics
import Reactor

/// An FCM error answer: the HTTP status, the google.rpc status name, the message, and the details FCM adds.
struct FCMError: Error, Equatable {
    var status: Int
    var rpcStatus: String
    var message: String
    /// The `FcmError` detail's `errorCode` (nil: no FcmError detail, as for auth and JSON-shape errors).
    var errorCode: String?
    /// `google.rpc.BadRequest` field violations: (field, description).
    var fieldViolations: [(String, String)] = []
    /// `google.rpc.ErrorInfo` reason (CREDENTIALS_MISSING, ACCESS_TOKEN_EXPIRED, ...).
    var errorInfoReason: String?
    var retryAfterSeconds: Int?

    static func == (a: FCMError, b: FCMError) -> Bool {
        a.status == b.status && a.rpcStatus == b.rpcStatus && a.message == b.message && a.errorCode == b.errorCode
            && a.fieldViolations.map(\.0) == b.fieldViolations.map(\.0) && a.errorInfoReason == b.errorInfoReason
            && a.retryAfterSeconds == b.retryAfterSeconds
    }

    /// The google.rpc code name Google pairs with an HTTP status.
    static func rpcStatus(for status: Int) -> String {
        switch status {
        case 400: return "INVALID_ARGUMENT"
        case 401: return "UNAUTHENTICATED"
        case 403: return "PERMISSION_DENIED"
        case 404: return "NOT_FOUND"
        case 409: return "ABORTED"
        case 429: return "RESOURCE_EXHAUSTED"
        case 501: return "UNIMPLEMENTED"
        case 503: return "UNAVAILABLE"
        case 504: return "DEADLINE_EXCEEDED"
        default: return status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION"
        }
    }

    /// The FCM errorCode an injected error of this status carries unless the rule names one.
    static func errorCode(for status: Int) -> String {
        switch status {
        case 400: return "INVALID_ARGUMENT"
        case 401: return "THIRD_PARTY_AUTH_ERROR"
        case 403: return "SENDER_ID_MISMATCH"
        case 404: return "UNREGISTERED"
        case 429: return "QUOTA_EXCEEDED"
        case 500: return "INTERNAL"
        case 503: return "UNAVAILABLE"
        default: return "UNSPECIFIED_ERROR"
        }
    }

    static func defaultMessage(for errorCode: String) -> String {
        switch errorCode {
        case "UNREGISTERED": return "Requested entity was not found."
        case "INVALID_ARGUMENT": return "Request contains an invalid argument."
        case "SENDER_ID_MISMATCH": return "SenderId mismatch"
        case "THIRD_PARTY_AUTH_ERROR": return "Auth error from APNS or Web Push Service"
        case "QUOTA_EXCEEDED": return "Quota exceeded for quota metric 'Send requests' and limit 'Send requests per minute'."
        case "UNAVAILABLE": return "The service is currently unavailable."
        case "INTERNAL": return "Internal error encountered."
        default: return "Unknown error."
        }
    }

    /// An FCM error as FCM words it, with the FcmError detail.
    static func fcm(_ status: Int, _ errorCode: String, message: String? = nil, retryAfter: Int? = nil) -> FCMError {
        FCMError(status: status, rpcStatus: rpcStatus(for: status), message: message ?? defaultMessage(for: errorCode),
                 errorCode: errorCode, retryAfterSeconds: retryAfter)
    }

    /// The 401 for an access token Google does not accept (no FcmError detail: it is not about the message).
    static func unauthenticated(_ message: String? = nil) -> FCMError {
        FCMError(status: 401, rpcStatus: "UNAUTHENTICATED", message: message ?? "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
                 errorCode: nil)
    }

    static let invalidToken = FCMError(
        status: 400, rpcStatus: "INVALID_ARGUMENT", message: "The registration token is not a valid FCM registration token",
        errorCode: "INVALID_ARGUMENT", fieldViolations: [("message.token", "The registration token is not a valid FCM registration token")])

    /// A validation failure of the message: INVALID_ARGUMENT with the FcmError detail and the field named.
    static func invalid(_ field: String, _ description: String) -> FCMError {
        FCMError(status: 400, rpcStatus: "INVALID_ARGUMENT", message: description, errorCode: "INVALID_ARGUMENT",
                 fieldViolations: [(field, description)])
    }

    /// A JSON-to-proto mapping failure (unknown field, wrong type): only a BadRequest detail, as Google's front end answers.
    static func badPayload(_ field: String, _ description: String) -> FCMError {
        FCMError(status: 400, rpcStatus: "INVALID_ARGUMENT", message: description, errorCode: nil, fieldViolations: [(field, description)])
    }

    /// `{"error":{"code","message","status","details":[...]}}`.
    func body() -> [UInt8] {
        var out = Array(#"{"error":{"code":"#.utf8)
        out += Array(String(status).utf8)
        out += Array(#","message":"#.utf8)
        appendJSONString(message, to: &out)
        out += Array(#","status":"#.utf8)
        appendJSONString(rpcStatus, to: &out)
        out += Array(#","details":["#.utf8)
        var first = true
        func separator() { if !first { out.append(UInt8(ascii: ",")) }; first = false }
        if let errorCode {
            separator()
            out += Array(#"{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"#.utf8)
            appendJSONString(errorCode, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        if !fieldViolations.isEmpty {
            separator()
            out += Array(#"{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":["#.utf8)
            for (index, (field, description)) in fieldViolations.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out += Array(#"{"field":"#.utf8)
                appendJSONString(field, to: &out)
                out += Array(#","description":"#.utf8)
                appendJSONString(description, to: &out)
                out.append(UInt8(ascii: "}"))
            }
            out += Array("]}".utf8)
        }
        if let errorInfoReason {
            separator()
            out += Array(#"{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"#.utf8)
            appendJSONString(errorInfoReason, to: &out)
            out += Array(#","domain":"googleapis.com","metadata":{"service":"fcm.googleapis.com","method":"google.firebase.fcm.v1.FcmService.SendMessage"}}"#.utf8)
        }
        out += Array("]}}".utf8)
        return out
    }
}

/// What the FCM simulator does with a send that passed authentication and validation.
enum FCMVerdict: Equatable {
    case accept
    case reject(FCMError)
    /// Refused by the project or device quota (not a scripted 429): counted apart in the stats.
    case overQuota(FCMError)
    case silence
    case drop
    case goaway
}

/// Applies a `MockFCMFaultScript` to sends, keeping per-token counters (failFirst, throttle) and the quota windows.
/// Confined to the server's loop thread: no locks on the request path.
final class FCMFaultEngine {
    private(set) var script: MockFCMFaultScript
    private var random: SeededRandom
    private var attempts: [Int: [String: Int]] = [:]
    private var windows: [Int: [String: Window]] = [:]
    private var projectWindows: [String: Window] = [:]
    private var deviceMinute: [String: Window] = [:]
    private var deviceHour: [String: Window] = [:]
    private var tokenRequests = 0

    /// A fixed counting window: `count` sends since `start`.
    struct Window {
        var start: UInt64
        var count: Int
    }

    init(script: MockFCMFaultScript, defaultSeed: UInt64) {
        self.script = script
        self.random = SeededRandom(seed: script.seed ?? defaultSeed)
    }

    func replace(_ newScript: MockFCMFaultScript, defaultSeed: UInt64) {
        script = newScript
        random = SeededRandom(seed: newScript.seed ?? defaultSeed)
        attempts.removeAll()
        windows.removeAll()
        projectWindows.removeAll()
        deviceMinute.removeAll()
        deviceHour.removeAll()
        tokenRequests = 0
    }

    private func latency(_ range: MockLatency) -> Int {
        random.between(range.minMilliseconds, range.maxMilliseconds)
    }

    /// Counts one send in `window` (restarting it when `length` has passed). Returns the seconds until it ends
    /// when the send is over `limit`, else nil. A refused send is not counted.
    private static func spend(_ window: inout Window?, limit: Int, length: UInt64, now: UInt64) -> Int? {
        var current = window ?? Window(start: now, count: 0)
        if now &- current.start >= length { current = Window(start: now, count: 0) }
        if current.count >= limit {
            window = current
            let remaining = length - (now &- current.start)
            return max(1, Int((remaining + 999_999_999) / 1_000_000_000))
        }
        current.count += 1
        window = current
        return nil
    }

    /// Evaluates the rules, then the quotas, for one send. Returns the verdict and the latency to add before answering.
    func decide(token: String?, topic: String?, project: String) -> (FCMVerdict, Int) {
        var delay = script.latencyMs.map(latency) ?? 0
        let key = token ?? topic.map { "/topics/" + $0 } ?? ""
        for (index, rule) in script.rules.enumerated() {
            guard rule.matches(token: token, topic: topic, project: project) else { continue }
            if let rate = rule.rate, rate < 1, random.unit() >= rate { continue }
            switch rule.fate {
            case .accept:
                return (quota(token: token, project: project), delay)
            case .delay:
                delay += rule.latencyMs.map(latency) ?? 0
            case .unregistered:
                return (.reject(.fcm(404, "UNREGISTERED", message: rule.message)), delay)
            case .invalidToken:
                return (.reject(.invalidToken), delay)
            case .senderIdMismatch:
                return (.reject(.fcm(403, "SENDER_ID_MISMATCH", message: rule.message)), delay)
            case .thirdPartyAuth:
                return (.reject(.fcm(401, "THIRD_PARTY_AUTH_ERROR", message: rule.message)), delay)
            case .unauthenticated:
                return (.reject(.unauthenticated(rule.message)), delay)
            case .quotaExceeded:
                return (.reject(.fcm(429, "QUOTA_EXCEEDED", message: rule.message, retryAfter: rule.retryAfterSeconds ?? 60)), delay)
            case .error:
                let status = rule.status ?? 500
                return (.reject(.fcm(status, rule.errorCode ?? FCMError.errorCode(for: status), message: rule.message,
                                     retryAfter: rule.retryAfterSeconds)), delay)
            case .failFirst:
                let seen = (attempts[index]?[key] ?? 0) + 1
                attempts[index, default: [:]][key] = seen
                if seen <= (rule.count ?? 0) {
                    let status = rule.status ?? 503
                    return (.reject(.fcm(status, rule.errorCode ?? FCMError.errorCode(for: status), message: rule.message,
                                         retryAfter: rule.retryAfterSeconds)), delay)
                }
            case .throttle:
                let length = UInt64(max(0, (rule.windowSeconds ?? 60) * 1e9))
                var window = windows[index]?[key]
                let over = Self.spend(&window, limit: rule.limit ?? 0, length: length, now: monotonicNanos())
                windows[index, default: [:]][key] = window
                if let over {
                    return (.reject(.fcm(429, "QUOTA_EXCEEDED", message: rule.message, retryAfter: rule.retryAfterSeconds ?? over)), delay)
                }
            case .silence:
                return (.silence, delay)
            case .drop:
                return (.drop, delay)
            case .goaway:
                return (.goaway, delay)
            }
        }
        return (quota(token: token, project: project), delay)
    }

    /// True when this token request is one of the script's `tokenFailFirst`.
    func tokenRequestFails() -> Bool {
        tokenRequests += 1
        return tokenRequests <= (script.tokenFailFirst ?? 0)
    }

    /// FCM's quotas: per project per minute (always), per device per minute and per hour (when `deviceQuota`).
    private func quota(token: String?, project: String) -> FCMVerdict {
        let now = monotonicNanos()
        let projectLimit = script.projectQuotaPerMinute ?? MockFCMFaultScript.defaultProjectQuotaPerMinute
        if projectLimit > 0 {
            var window = projectWindows[project]
            let over = Self.spend(&window, limit: projectLimit, length: 60_000_000_000, now: now)
            projectWindows[project] = window
            if let over {
                return .overQuota(.fcm(429, "QUOTA_EXCEEDED", message: "Quota exceeded for quota metric 'Send requests' and limit 'Send requests per minute' of service 'fcm.googleapis.com' for consumer 'project_number:\(project)'.", retryAfter: over))
            }
        }
        if script.deviceQuota == true, let token {
            var minute = deviceMinute[token]
            var hour = deviceHour[token]
            let overMinute = Self.spend(&minute, limit: script.deviceQuotaPerMinute ?? MockFCMFaultScript.defaultDeviceQuotaPerMinute,
                                        length: 60_000_000_000, now: now)
            let overHour = Self.spend(&hour, limit: script.deviceQuotaPerHour ?? MockFCMFaultScript.defaultDeviceQuotaPerHour,
                                      length: 3_600_000_000_000, now: now)
            let refused = overMinute != nil || overHour != nil
            if refused {
                // A refused send counts in neither window: take it back from the one that did count it.
                if overMinute == nil { minute?.count -= 1 }
                if overHour == nil { hour?.count -= 1 }
            }
            deviceMinute[token] = minute
            deviceHour[token] = hour
            if refused {
                return .overQuota(.fcm(429, "QUOTA_EXCEEDED", message: "Device message rate exceeded.", retryAfter: max(overMinute ?? 0, overHour ?? 0)))
            }
        }
        return .accept
    }
}

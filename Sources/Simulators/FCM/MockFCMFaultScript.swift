import Foundation
import Settings

/// FCM's own answers to a send a rule matches, beside the fates every send-API simulator has (`SendAPIFate`:
/// accept, error, failFirst, throttle, silence, drop, goaway, delay). Documented with examples in docs/mock-fcm.md.
public enum MockFCMAnswer: String, SendAPIOwnFate {
    /// 404 NOT_FOUND, errorCode UNREGISTERED: the app was removed or the token expired.
    case unregistered
    /// 400 INVALID_ARGUMENT, errorCode INVALID_ARGUMENT: "The registration token is not a valid FCM registration token".
    case invalidToken
    /// 403 PERMISSION_DENIED, errorCode SENDER_ID_MISMATCH: the token belongs to another project.
    case senderIdMismatch
    /// 401 UNAUTHENTICATED, errorCode THIRD_PARTY_AUTH_ERROR: the APNs key in Firebase is missing or invalid.
    case thirdPartyAuth
    /// 401 UNAUTHENTICATED without an FcmError detail, as for a revoked access token: a client should refresh
    /// its token once, then give up (park the app).
    case unauthenticated
    /// 429 RESOURCE_EXHAUSTED, errorCode QUOTA_EXCEEDED, with `Retry-After: retryAfterSeconds` (default 60).
    case quotaExceeded
}

/// What happens to an FCM send a rule matches: a fate every send-API simulator has, or one of FCM's answers.
public typealias MockFCMFate = SendAPIFate<MockFCMAnswer>

extension SendAPIFate where Own == MockFCMAnswer {
    public static var unregistered: Self { .own(.unregistered) }
    public static var invalidToken: Self { .own(.invalidToken) }
    public static var senderIdMismatch: Self { .own(.senderIdMismatch) }
    public static var thirdPartyAuth: Self { .own(.thirdPartyAuth) }
    public static var unauthenticated: Self { .own(.unauthenticated) }
    public static var quotaExceeded: Self { .own(.quotaExceeded) }
}

/// One scripted rule: which sends (by token, topic or project), how often (`rate`), and what happens.
public struct MockFCMRule: Sendable, Equatable, Encodable {
    public var token: String?
    public var tokenPrefix: String?
    public var tokenSuffix: String?
    /// Exact topic name (for messages sent to a topic).
    public var topic: String?
    /// Exact project ID of the request path.
    public var project: String?
    /// Probability 0...1 that a matching request is affected (seeded, so runs repeat). Default 1.
    public var rate: Double?
    public var fate: MockFCMFate
    public var status: Int?
    public var errorCode: String?
    public var message: String?
    public var count: Int?
    public var limit: Int?
    public var windowSeconds: Double?
    public var retryAfterSeconds: Int?
    public var latencyMs: MockLatency?

    public init(fate: MockFCMFate, token: String? = nil, tokenPrefix: String? = nil, tokenSuffix: String? = nil, topic: String? = nil,
                project: String? = nil, rate: Double? = nil, status: Int? = nil, errorCode: String? = nil, message: String? = nil,
                count: Int? = nil, limit: Int? = nil, windowSeconds: Double? = nil, retryAfterSeconds: Int? = nil,
                latencyMs: MockLatency? = nil) {
        self.fate = fate
        self.token = token
        self.tokenPrefix = tokenPrefix
        self.tokenSuffix = tokenSuffix
        self.topic = topic
        self.project = project
        self.rate = rate
        self.status = status
        self.errorCode = errorCode
        self.message = message
        self.count = count
        self.limit = limit
        self.windowSeconds = windowSeconds
        self.retryAfterSeconds = retryAfterSeconds
        self.latencyMs = latencyMs
    }
}

/// The keys every send-API rule has, then FCM's own: `tokenSuffix`, `project` and `errorCode` (the FcmError code of
/// `error` and `failFirst`, default from the status).
extension MockFCMRule: DeclaredFaultRule {
    public static let blank = MockFCMRule(fate: .accept)
    public static var declared: [Setting<MockFCMRule>] {
        sendAPIRuleSettings() + [.optionalText("tokenSuffix", \.tokenSuffix, "Sends to a token with this suffix."),
                                 .optionalText("project", \.project, "Exact project ID of the request path."),
                                 .optionalText("errorCode", \.errorCode, "The FcmError code of error and failFirst.")]
    }
}

/// FCM's own fields of its fault script: its quotas, per project and per device.
public struct MockFCMQuotas: FaultScriptExtras {
    public typealias Rule = MockFCMRule
    /// Sends a project may make per minute (FCM's default 600,000); over it 429 QUOTA_EXCEEDED. 0 turns it off.
    public var projectQuotaPerMinute: Int?
    /// Enforce FCM's per-device limits (240 a minute, 5,000 an hour to one token). Off by default.
    public var deviceQuota: Bool?
    public var deviceQuotaPerMinute: Int?
    public var deviceQuotaPerHour: Int?
    /// How long the quotas' "minute" and "hour" windows really last (ms; default 60,000 and 3,600,000), so a test
    /// sees a day's quota behaviour in seconds.
    public var quotaMinuteMs: Int?
    public var quotaHourMs: Int?
    /// The first N `POST /token` requests (after a start, a reload or a reset) get 503, as Google's token
    /// endpoint answers when its backend fails; later ones are checked as usual.
    public var tokenFailFirst: Int?

    public static let defaultProjectQuotaPerMinute = 600_000
    public static let defaultDeviceQuotaPerMinute = 240
    public static let defaultDeviceQuotaPerHour = 5_000

    public init() {}

    public static var declared: [Setting<MockFCMQuotas>] {
        [
            .whole("projectQuotaPerMinute", \.projectQuotaPerMinute, "Sends a project may make per minute (default 600,000; 0: off)."),
            .yesNo("deviceQuota", \.deviceQuota, "Enforce FCM's per-device limits."),
            .whole("deviceQuotaPerMinute", \.deviceQuotaPerMinute, "Sends to one token per minute (default 240)."),
            .whole("deviceQuotaPerHour", \.deviceQuotaPerHour, "Sends to one token per hour (default 5,000)."),
            .whole("quotaMinuteMs", \.quotaMinuteMs, "How long the quotas' minute lasts (ms)."),
            .whole("quotaHourMs", \.quotaHourMs, "How long the quotas' hour lasts (ms)."),
            .whole("tokenFailFirst", \.tokenFailFirst, "The first N token requests get 503."),
        ]
    }
}

/// Device state, faults and quotas of the FCM simulator: `--config`, `POST /_mock/config`, or the library.
public typealias MockFCMFaultScript = FaultScript<MockFCMQuotas>

extension FaultScript where Extras == MockFCMQuotas {
    public init(seed: UInt64? = nil, latencyMs: MockLatency? = nil, goawayAfterRequests: Int? = nil, dropAfterRequests: Int? = nil,
                silenceAfterRequests: Int? = nil, projectQuotaPerMinute: Int? = nil, deviceQuota: Bool? = nil,
                deviceQuotaPerMinute: Int? = nil, deviceQuotaPerHour: Int? = nil, tokenFailFirst: Int? = nil, quotaMinuteMs: Int? = nil, quotaHourMs: Int? = nil,
                rules: [MockFCMRule] = []) {
        var quotas = MockFCMQuotas()
        quotas.tokenFailFirst = tokenFailFirst
        quotas.projectQuotaPerMinute = projectQuotaPerMinute
        quotas.deviceQuota = deviceQuota
        quotas.deviceQuotaPerMinute = deviceQuotaPerMinute
        quotas.deviceQuotaPerHour = deviceQuotaPerHour
        quotas.quotaMinuteMs = quotaMinuteMs
        quotas.quotaHourMs = quotaHourMs
        self.init(seed: seed, latencyMs: latencyMs, goawayAfterRequests: goawayAfterRequests, dropAfterRequests: dropAfterRequests,
                  silenceAfterRequests: silenceAfterRequests, rules: rules, extras: quotas)
    }
}

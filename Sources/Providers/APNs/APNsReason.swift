import PushCore

/// A `reason` string from an APNs error body or GOAWAY. Every reason in Apple's table is a case;
/// anything else is kept verbatim in `.unknown` so nothing is lost when Apple adds one.
public enum APNsReason: Hashable, Sendable, CustomStringConvertible {
    // 400
    case badCollapseId, badDeviceToken, badExpirationDate, badMessageId, badPriority, badTopic
    case deviceTokenNotForTopic, duplicateHeaders, idleTimeout, invalidPushType, missingDeviceToken
    case missingTopic, payloadEmpty, topicDisallowed, badRequestParams, badRequestPayload, missingPushType
    // 403
    case badCertificate, badCertificateEnvironment, expiredProviderToken, forbidden, invalidProviderToken
    case missingProviderToken, unrelatedKeyIdInToken, topicMismatch
    /// Apple's documentation spells it both `BadEnvironmentKeyIdInToken` and `BadEnvironmentKeyInToken`;
    /// both are this case (equal and hashing alike), `spelling` keeps the one received.
    case badEnvironmentKeyIdInToken(spelling: String)
    // 404, 405, 410, 413, 429
    case badPath, methodNotAllowed, expiredToken, unregistered, payloadTooLarge
    case tooManyProviderTokenUpdates, tooManyRequests
    // 500, 503
    case internalServerError, serviceUnavailable, shutdown
    // broadcast (channels)
    case featureNotEnabled, missingChannelId, badChannelId, channelNotRegistered, cannotCreateChannelConfig
    case unknown(String)

    private static let table: [(String, APNsReason, Int)] = [
        ("BadCollapseId", .badCollapseId, 400), ("BadDeviceToken", .badDeviceToken, 400),
        ("BadExpirationDate", .badExpirationDate, 400), ("BadMessageId", .badMessageId, 400),
        ("BadPriority", .badPriority, 400), ("BadTopic", .badTopic, 400),
        ("DeviceTokenNotForTopic", .deviceTokenNotForTopic, 400), ("DuplicateHeaders", .duplicateHeaders, 400),
        ("IdleTimeout", .idleTimeout, 400), ("InvalidPushType", .invalidPushType, 400),
        ("MissingDeviceToken", .missingDeviceToken, 400), ("MissingTopic", .missingTopic, 400),
        ("PayloadEmpty", .payloadEmpty, 400), ("TopicDisallowed", .topicDisallowed, 400),
        ("BadRequestParams", .badRequestParams, 400), ("BadRequestPayload", .badRequestPayload, 400),
        ("MissingPushType", .missingPushType, 400),
        ("BadCertificate", .badCertificate, 403), ("BadCertificateEnvironment", .badCertificateEnvironment, 403),
        ("ExpiredProviderToken", .expiredProviderToken, 403), ("Forbidden", .forbidden, 403),
        ("InvalidProviderToken", .invalidProviderToken, 403), ("MissingProviderToken", .missingProviderToken, 403),
        ("UnrelatedKeyIdInToken", .unrelatedKeyIdInToken, 403), ("TopicMismatch", .topicMismatch, 403),
        ("BadEnvironmentKeyIdInToken", .badEnvironmentKeyIdInToken(spelling: "BadEnvironmentKeyIdInToken"), 403),
        ("BadEnvironmentKeyInToken", .badEnvironmentKeyIdInToken(spelling: "BadEnvironmentKeyInToken"), 403),
        ("BadPath", .badPath, 404), ("MethodNotAllowed", .methodNotAllowed, 405),
        ("ExpiredToken", .expiredToken, 410), ("Unregistered", .unregistered, 410),
        ("PayloadTooLarge", .payloadTooLarge, 413),
        ("TooManyProviderTokenUpdates", .tooManyProviderTokenUpdates, 429),
        ("TooManyRequests", .tooManyRequests, 429),
        ("InternalServerError", .internalServerError, 500), ("ServiceUnavailable", .serviceUnavailable, 503),
        ("Shutdown", .shutdown, 503),
        ("FeatureNotEnabled", .featureNotEnabled, 400), ("MissingChannelId", .missingChannelId, 400),
        ("BadChannelId", .badChannelId, 400), ("ChannelNotRegistered", .channelNotRegistered, 400),
        ("CannotCreateChannelConfig", .cannotCreateChannelConfig, 400),
    ]
    private static let byName: [String: (APNsReason, Int)] = {
        var d: [String: (APNsReason, Int)] = [:]
        for (name, reason, status) in table { d[name] = (reason, status) }
        return d
    }()

    /// Every known reason string with the status Apple documents for it (both spellings included);
    /// for tables, tests and simulators.
    public static var allKnown: [(raw: String, reason: APNsReason, status: Int)] {
        table.map { (raw: $0.0, reason: $0.1, status: $0.2) }
    }

    public init(_ raw: String) {
        self = Self.byName[raw]?.0 ?? .unknown(raw)
    }

    /// The string as Apple sends it (the received spelling for the two-spelling case, verbatim for unknown).
    public var rawValue: String {
        switch self {
        case .badEnvironmentKeyIdInToken(let spelling): return spelling
        case .unknown(let raw): return raw
        default:
            for (name, reason, _) in Self.table where reason == self { return name }
            return "\(self)"
        }
    }

    /// The HTTP status Apple documents for this reason; nil when unknown.
    public var documentedStatus: Int? {
        if case .unknown = self { return nil }
        return Self.byName[rawValue]?.1
    }

    public var description: String { rawValue }

    public static func == (lhs: APNsReason, rhs: APNsReason) -> Bool {
        switch (lhs, rhs) {
        case (.badEnvironmentKeyIdInToken, .badEnvironmentKeyIdInToken): return true
        case (.unknown(let a), .unknown(let b)): return a == b
        case (.unknown, _), (_, .unknown), (.badEnvironmentKeyIdInToken, _), (_, .badEnvironmentKeyIdInToken):
            return false
        default: return lhs.caseIndex == rhs.caseIndex
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .unknown(let raw): hasher.combine(-1); hasher.combine(raw)
        case .badEnvironmentKeyIdInToken: hasher.combine(-2)
        default: hasher.combine(caseIndex)
        }
    }

    /// A stable number per payload-free case, so == needs no string work.
    private var caseIndex: Int {
        switch self {
        case .badCollapseId: 0
        case .badDeviceToken: 1
        case .badExpirationDate: 2
        case .badMessageId: 3
        case .badPriority: 4
        case .badTopic: 5
        case .deviceTokenNotForTopic: 6
        case .duplicateHeaders: 7
        case .idleTimeout: 8
        case .invalidPushType: 9
        case .missingDeviceToken: 10
        case .missingTopic: 11
        case .payloadEmpty: 12
        case .topicDisallowed: 13
        case .badRequestParams: 14
        case .badRequestPayload: 15
        case .missingPushType: 16
        case .badCertificate: 17
        case .badCertificateEnvironment: 18
        case .expiredProviderToken: 19
        case .forbidden: 20
        case .invalidProviderToken: 21
        case .missingProviderToken: 22
        case .unrelatedKeyIdInToken: 23
        case .topicMismatch: 24
        case .badEnvironmentKeyIdInToken: 25
        case .badPath: 26
        case .methodNotAllowed: 27
        case .expiredToken: 28
        case .unregistered: 29
        case .payloadTooLarge: 30
        case .tooManyProviderTokenUpdates: 31
        case .tooManyRequests: 32
        case .internalServerError: 33
        case .serviceUnavailable: 34
        case .shutdown: 35
        case .featureNotEnabled: 36
        case .missingChannelId: 37
        case .badChannelId: 38
        case .channelNotRegistered: 39
        case .cannotCreateChannelConfig: 40
        case .unknown: -1
        }
    }
}

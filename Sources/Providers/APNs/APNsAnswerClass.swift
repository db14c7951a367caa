import PushCore

/// Apple's table: an APNs answer in the outcome classes the core decides on (docs/results.md).
/// - TooManyProviderTokenUpdates defers (no new token, no attempt counted), as issue 2 lists it with the
///   credential errors; `ProviderTokenCache` already refuses to refresh within 20 minutes.
/// - Broadcasts: ChannelNotRegistered drops the channel (like a dropped token, on its own stream).
///   FeatureNotEnabled and CannotCreateChannelConfig are the app's configuration, yet they fail the job rather than
///   pause the destination: a pause would hold the app's device pushes too, which Apple still accepts, and the fix
///   (enable broadcast for the App ID, delete unused channels) is a person's, not a retry's.
extension APNsResponse: ProviderAnswer {
    public var reasonName: String { reason?.rawValue ?? "HTTP \(status)" }

    public var answerClass: AnswerClass {
        if status == 200 { return .delivered }
        let name = reasonName
        switch reason {
        case .badDeviceToken?:
            return .dropToken(invalidSince: nil, reason: name)
        case .unregistered?, .expiredToken?:
            return .dropToken(invalidSince: timestamp, reason: name)
        case .channelNotRegistered?:
            return .dropChannel(reason: name)
        case .expiredProviderToken?:
            return .resendNow(freshConnection: true, refreshToken: true)
        case .unrelatedKeyIdInToken?, .idleTimeout?:
            return .resendNow(freshConnection: true, refreshToken: false)
        case .invalidProviderToken?, .missingProviderToken?, .badCertificate?, .badCertificateEnvironment?,
            .badEnvironmentKeyIdInToken?, .topicMismatch?, .tooManyProviderTokenUpdates?:
            return .deferForConfiguration(reason: name)
        case .tooManyRequests?:
            return .throttled(reason: name, retryAfterMilliseconds: 0, slowsDestination: false)
        default:
            if status == 410 { return .dropToken(invalidSince: timestamp, reason: name) }
            if status >= 500 { return .serverError(reason: name, retryAfterMilliseconds: 0) }
            if status == 429 { return .throttled(reason: name, retryAfterMilliseconds: 0, slowsDestination: false) }
            return .fail(reason: name)
        }
    }

    /// Shutdown, IdleTimeout, ExpiredProviderToken and UnrelatedKeyIdInToken retire the connection.
    public var connectionAdvice: ConnectionAdvice {
        switch reason {
        case .shutdown?, .idleTimeout?, .expiredProviderToken?, .unrelatedKeyIdInToken?: .replace
        default: .keep
        }
    }

    public var metricsReason: String { reason?.rawValue ?? "" }

    public var resultFields: AnswerFields { AnswerFields(apnsID: apnsID, apnsUniqueID: apnsUniqueID) }
}

extension DeliveryResult {
    /// An APNs answer (tests and tools build results this way).
    public static func response(_ response: APNsResponse) -> DeliveryResult { .answer(response) }

    /// The APNs answer, nil for a transport failure or another provider's answer.
    public var apns: APNsResponse? { answer(as: APNsResponse.self) }
}

import PushCore

/// What an APNs notification carries beyond the envelope: the request headers a job may set. Kept in the
/// notification's `provider` only when one differs from its default, so a plain alert costs no allocation.
public struct APNsHeaders: ProviderFields, Equatable {
    public var pushType: PushType = .alert
    /// `apns-priority`; nil sends `pushType.defaultPriority`.
    public var priority: Int?
    public var collapseID: String?
    /// `apns-id` (`apns-request-id` for a broadcast); either case is accepted locally, `headerAPNsID` is what goes on
    /// the wire.
    public var apnsID: String?

    public init(pushType: PushType = .alert, priority: Int? = nil, collapseID: String? = nil, apnsID: String? = nil) {
        self.pushType = pushType
        self.priority = priority
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    var isDefault: Bool { pushType == .alert && priority == nil && collapseID == nil && apnsID == nil }
}

extension PushNotification {
    /// An APNs notification.
    public static func apns(target: PushTarget, topic: String, environment: APNsEnvironment, pushType: PushType = .alert,
                            priority: Int? = nil, expiration: Int64? = nil, collapseID: String? = nil, apnsID: String? = nil,
                            payload: [UInt8]) -> PushNotification {
        let headers = APNsHeaders(pushType: pushType, priority: priority, collapseID: collapseID, apnsID: apnsID)
        return PushNotification(target: target, topic: topic, environment: environment, expiration: expiration, payload: payload,
                                platform: .apns, provider: headers.isDefault ? nil : headers)
    }

    /// An APNs notification to one device.
    public static func apns(deviceToken: String, topic: String, environment: APNsEnvironment, pushType: PushType = .alert,
                            priority: Int? = nil, expiration: Int64? = nil, collapseID: String? = nil, apnsID: String? = nil,
                            payload: [UInt8]) -> PushNotification {
        apns(target: .device(token: deviceToken), topic: topic, environment: environment, pushType: pushType, priority: priority,
             expiration: expiration, collapseID: collapseID, apnsID: apnsID, payload: payload)
    }

    /// Its APNs headers (their defaults when it keeps none). Read once per use: each read looks into `provider`.
    public var apns: APNsHeaders {
        get {
            // Most notifications keep none: neither a copy of the container nor a dynamic cast for them.
            if provider == nil { return APNsHeaders() }
            return provider as? APNsHeaders ?? APNsHeaders()
        }
        set {
            precondition(platform == .apns, "APNs headers set on a \(platform.rawValue) notification would replace its own fields")
            provider = newValue.isDefault ? nil : newValue
        }
    }

    public var pushType: PushType {
        get { apns.pushType }
        set { apns.pushType = newValue }
    }

    public var priority: Int? {
        get { apns.priority }
        set { apns.priority = newValue }
    }

    public var collapseID: String? {
        get { apns.collapseID }
        set { apns.collapseID = newValue }
    }

    public var apnsID: String? {
        get { apns.apnsID }
        set { apns.apnsID = newValue }
    }

    /// The priority header value to send: the job's, or the push type's safe default.
    public var effectivePriority: Int { apns.priority ?? apns.pushType.defaultPriority }

    /// `apns-id` in the canonical lowercase form Apple documents (producers often send
    /// Foundation's uppercase `uuidString`).
    public var headerAPNsID: String? { apns.apnsID?.lowercased() }

    /// `:path` of the request.
    public var path: String {
        switch target {
        case .device(let token): "/3/device/" + token
        case .channel(_, let bundleID): "/4/broadcasts/apps/" + bundleID
        }
    }

    /// APNs refuses larger bodies with 413 PayloadTooLarge (broadcasts allow 5120 bytes).
    public var maxPayloadBytes: Int { isBroadcast ? Broadcast.maxPayloadBytes : apns.pushType.maxPayloadBytes }
}

/// One notification as it will be sent; the payload is the producer's bytes, never re-encoded,
/// so what the app receives is exactly what the producer wrote.
public struct PushNotification: Sendable, Equatable {
    public var deviceToken: String
    public var topic: String
    public var environment: APNsEnvironment
    public var pushType: PushType
    /// `apns-priority`; nil sends `pushType.defaultPriority`.
    public var priority: Int?
    /// `apns-expiration` in UNIX seconds; 0 = try once, do not store.
    public var expiration: Int64?
    public var collapseID: String?
    /// `apns-id`; either case is accepted locally, `headerAPNsID` is what goes on the wire.
    public var apnsID: String?
    public var payload: [UInt8]
    /// `.fcm`: `payload` is the job's FCM `message` object (sent as `{"message":<payload>}`), `deviceToken` its
    /// token target and `topic` its topic or condition; the APNs-only fields are unused.
    public var platform: Platform = .apns

    public init(
        deviceToken: String, topic: String, environment: APNsEnvironment, pushType: PushType = .alert,
        priority: Int? = nil, expiration: Int64? = nil, collapseID: String? = nil, apnsID: String? = nil,
        payload: [UInt8], platform: Platform = .apns
    ) {
        self.platform = platform
        self.deviceToken = deviceToken
        self.topic = topic
        self.environment = environment
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.payload = payload
    }

    /// The priority header value to send: the job's, or the push type's safe default.
    public var effectivePriority: Int { priority ?? pushType.defaultPriority }

    /// `apns-id` in the canonical lowercase form Apple documents (producers often send
    /// Foundation's uppercase `uuidString`).
    public var headerAPNsID: String? { apnsID?.lowercased() }

    /// `:path` of the request.
    public var path: String { "/3/device/" + deviceToken }
}

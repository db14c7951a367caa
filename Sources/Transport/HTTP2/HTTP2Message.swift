/// One request header. Names are stored lower-case: HTTP/2 forbids upper case and servers reset such streams.
public struct HTTP2Header: Hashable, Sendable {
    public var name: String
    public var value: String
    /// Sent as an HPACK never-indexed literal: secrets such as `authorization` never enter a compression table.
    public var neverIndex: Bool

    public init(name: String, value: String, neverIndex: Bool = false) {
        var name = name
        let hasUpper = name.withUTF8 { bytes in bytes.contains { $0 >= 65 && $0 <= 90 } }
        self.name = hasUpper ? name.lowercased() : name
        self.value = value
        self.neverIndex = neverIndex
    }
}

/// A request as the caller builds it. `:scheme` is always https; `:path` always goes never-indexed
/// (an APNs path carries the device token).
public struct HTTP2Request: Sendable {
    public var method: String
    public var path: String
    /// `:authority`; defaults to the endpoint's `host:port`.
    public var authority: String?
    public var headers: [HTTP2Header]
    public var body: [UInt8]
    /// From the moment the request is written (handed to the server): how long the server has to answer.
    public var timeoutMilliseconds: Int
    /// From the moment `send` is called: how long it may wait in a queue for a connection or a free stream.
    /// Past it the request is never written (`.queueTimedOut`, certainly unprocessed). nil: `timeoutMilliseconds`.
    public var queueTimeoutMilliseconds: Int?

    public init(
        method: String = "POST", path: String, authority: String? = nil, headers: [HTTP2Header] = [],
        body: [UInt8] = [], timeoutMilliseconds: Int = 30_000, queueTimeoutMilliseconds: Int? = nil
    ) {
        self.method = method
        self.path = path
        self.authority = authority
        self.headers = headers
        self.body = body
        self.timeoutMilliseconds = timeoutMilliseconds
        self.queueTimeoutMilliseconds = queueTimeoutMilliseconds
    }
}

/// A complete answer: status, every response header and the body.
public struct HTTP2Response: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// Which connection answered (see `HTTP2ClientConnection.id`): lets a caller retire exactly that one
    /// and resend on a newer one (APNs ExpiredProviderToken, UnrelatedKeyIdInToken).
    public var connectionID: Int

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8], connectionID: Int) {
        self.status = status
        self.headers = headers
        self.body = body
        self.connectionID = connectionID
    }

    /// The first header with this (lower-case) name, e.g. `apns-id`.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

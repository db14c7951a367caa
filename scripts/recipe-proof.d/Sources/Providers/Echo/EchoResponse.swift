import PushCore

/// The echo service's answer: its status (0 when the key was refused before anything was sent).
public struct EchoResponse: Sendable, Equatable {
    public var status: Int
    public var grantRefused: String?

    public init(status: Int, grantRefused: String? = nil) {
        self.status = status
        self.grantRefused = grantRefused
    }

    /// The `reason` label values besides "" and `other`.
    public static let metricsReasons = ["HTTP 400", "HTTP 401", "HTTP 410", "HTTP 429", "HTTP 500", "HTTP 503"]
}

import PushCore

/// Why a provider refuses a job matched to one of its apps (`PushProvider.admit` throws it), as the result's reason
/// (`BadEnvironment: ...`).
public struct AdmissionRefusal: Error {
    public let reason: String

    @inlinable public init(_ reason: String) { self.reason = reason }
}

/// What a provider admitted (`PushProvider.admit`): the destination, the notification, and how a job of several
/// tokens goes. The worker makes its attempt (lease, id, times) from it, so the provider needs nothing of the worker.
/// Returned as it is, not in an enum: wrapped, it was copied once more per job.
public struct AdmittedJob {
    public var destination: Destination
    public var notification: PushNotification
    /// A multicast job (`tokens`, `subscriptions`): fanned out into one job per token instead of being sent.
    public var multicast: JobMulticast?
    /// A many-token send (Push Kit's `token` list): every token the one request carries, each once.
    public var batchTokens: [String]

    public init(destination: Destination, notification: PushNotification, multicast: JobMulticast? = nil, batchTokens: [String] = []) {
        self.destination = destination
        self.notification = notification
        self.multicast = multicast
        self.batchTokens = batchTokens
    }
}

/// A multicast job's tokens (each once, in the producer's order) and its bytes around the `tokens` member.
public struct JobMulticast {
    public let tokens: [String]
    public let jobPrefix: [UInt8]
    public let jobSuffix: [UInt8]

    public init(tokens: [String], jobPrefix: [UInt8], jobSuffix: [UInt8]) {
        self.tokens = tokens
        self.jobPrefix = jobPrefix
        self.jobSuffix = jobSuffix
    }
}

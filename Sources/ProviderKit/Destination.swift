import PushCore

/// Where a job goes: one app's credential in one APNs environment, or an FCM app (one project; its
/// environment is always production). Probes, pauses and outages are kept per destination, so a key refused
/// in sandbox or an unreachable sandbox host does not stop production, and FCM's state never touches APNs'.
public struct Destination: Hashable, Sendable, CustomStringConvertible {
    public let app: Int
    public let environment: APNsEnvironment
    public let platform: Platform

    @inlinable public init(app: Int, environment: APNsEnvironment, platform: Platform = .apns) {
        self.app = app
        self.environment = environment
        self.platform = platform
    }

    // Inlinable, like the initializer: the core makes and hashes destinations per job from another module.
    @inlinable public static func == (a: Destination, b: Destination) -> Bool {
        a.app == b.app && a.environment == b.environment && a.platform == b.platform
    }

    @inlinable public func hash(into hasher: inout Hasher) {
        hasher.combine(app)
        hasher.combine(environment)
        hasher.combine(platform)
    }

    public var description: String { "\(app)/\(environmentLabel)" }

    /// Its environment, or for a platform without environments its platform (logs, descriptions).
    public var environmentLabel: String { platform.hasEnvironments ? environment.rawValue : platform.rawValue }
}

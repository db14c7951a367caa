import PushCore

/// Where a job goes: one app's credential in one APNs environment, an FCM app (one project; its
/// environment is always production), or a Web Push app's push service (its origin). Probes, pauses and outages are kept per destination, so a key refused
/// in sandbox or an unreachable sandbox host does not stop production, and FCM's state never touches APNs'.
public struct Destination: Hashable, Sendable, CustomStringConvertible {
    public let app: Int
    public let environment: ServiceEnvironment
    public let platform: Platform
    /// Where within the app's platform, when that has many independent services: a Web Push job's push-service
    /// origin, so one service unreachable pauses its own jobs only. Empty for APNs and FCM.
    public let route: String

    @inlinable public init(app: Int, environment: ServiceEnvironment, platform: Platform = .apns, route: String = "") {
        self.app = app
        self.environment = environment
        self.platform = platform
        self.route = route
    }

    // Inlinable, like the initializer: the core makes and hashes destinations per job from another module.
    @inlinable public static func == (a: Destination, b: Destination) -> Bool {
        a.app == b.app && a.environment == b.environment && a.platform == b.platform && a.route == b.route
    }

    @inlinable public func hash(into hasher: inout Hasher) {
        hasher.combine(app)
        hasher.combine(environment)
        hasher.combine(platform)
        if !route.isEmpty { hasher.combine(route) }
    }

    public var description: String { "\(app)/\(environmentLabel)" }

    /// Its environment, or for a platform without environments its route or platform (logs, descriptions).
    public var environmentLabel: String { platform.hasEnvironments ? environment.rawValue : route.isEmpty ? platform.rawValue : route }

    /// The `environment` label of its pause in the metrics: the APNs environment, or the route (a push-service
    /// origin) when it has one.
    public var pauseLabel: String { route.isEmpty ? environment.rawValue : route }
}

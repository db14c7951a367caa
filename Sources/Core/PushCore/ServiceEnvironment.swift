/// Which of its provider's environments a destination is in: APNs' production or sandbox (a device token works only
/// in the one that issued it). A provider without environments puts every destination in `production`.
public enum ServiceEnvironment: String, Sendable, CaseIterable {
    case production, sandbox
}

/// APNs' name for it, which the APNs module and its tests use.
public typealias APNsEnvironment = ServiceEnvironment

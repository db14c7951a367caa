/// The push service a job goes to. APNs is the default so every producer written before FCM keeps working.
/// A new provider is a new case here, its sender in `ProviderRegistry` (Worker) and its module (docs/adding-a-provider.md).
public enum Platform: String, Sendable, Hashable, CaseIterable {
    case apns, fcm

    /// Its index among `allCases`: the slot of its counters (the `platform` label of every per-job metric), its
    /// sender in the registry.
    @inline(__always)
    public var slot: Int {
        switch self {
        case .apns: 0
        case .fcm: 1
        }
    }
}

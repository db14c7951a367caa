import ProviderKit

/// HarmonyOS Push Kit (v3, scenario-specific messages): where messages go (tests point it at the simulator), how the
/// connections behave, and how long each self-signed JWT is used.
public struct HarmonySettings: Sendable, Equatable {
    public init() {}
    /// The push host (`url`), its connections, timeouts, CA and proxy, as the shared bearer sender takes them.
    public var pool = BearerPoolSettings(url: "https://push-api.cloud.huawei.com:443")
    /// `exp - iat` of each JWT: Huawei recommends 3600 s and reuse within it; the cache signs a new one before its end.
    public var jwtLifetimeSeconds = 3600
}

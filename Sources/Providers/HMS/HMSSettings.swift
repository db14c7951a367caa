import ProviderKit

/// Huawei Push Kit: where messages and token requests go (tests point both at the simulator) and how the
/// connections to them behave.
public struct HMSSettings: Sendable, Equatable {
    public init() {}
    /// The push host (`url`), its connections, timeouts, CA and proxy, as the shared OAuth-bearer sender takes them.
    public var pool = BearerPoolSettings(url: "https://push-api.cloud.huawei.com:443")
    /// Huawei's OAuth 2.0 token endpoint (client credentials).
    public var tokenURL = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"
}

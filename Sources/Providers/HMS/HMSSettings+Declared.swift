import ProviderKit
import PushCore

/// The `hms` section: one pool per Huawei app to the push host, tokens from Huawei's OAuth endpoint (docs/hms.md).
/// Declared once here; the worker lifts it under `hms.`, and its docs table, `check-config`, the environment
/// overrides and `worker --help` come from these.
extension HMSSettings: DeclaredSection {
    public static let section = "hms"

    public static let declared: [Setting<HMSSettings>] = [
        .text("url", \.pool.url, environment: "HERALD_HMS_URL",
              "Where `POST /v1/<app_id>/messages:send` goes. Point it at `herald mock-hms` for tests."),
        .text("token_url", \.tokenURL, environment: "HERALD_HMS_TOKEN_URL",
              "Huawei's OAuth 2.0 token endpoint, where the client-credentials grant is POSTed (the simulator's in tests)."),
        .integer("connections_per_pool", \.pool.connectionsPerPool, 1...64, "HTTP/2 connections per Huawei app."),
        .integer("request_timeout_ms", \.pool.requestTimeoutMs, 100...SettingBounds.maxTimeoutMs, "As for `fcm`."),
        .integer("connect_timeout_ms", \.pool.connectTimeoutMs, 100...SettingBounds.maxTimeoutMs, "For the pool's connections and the token exchange's connect."),
        .integer("token_timeout_ms", \.pool.tokenTimeoutMs, 100...SettingBounds.maxTimeoutMs, "As for `fcm`."),
        .optionalText("ca_file", \.pool.caFile, environment: "HERALD_HMS_CA_FILE",
                      "Extra trusted CA (PEM) for both the push host and the token endpoint, e.g. the simulator's."),
        .optionalText("proxy", \.pool.proxy, environment: "HERALD_HMS_PROXY", "As for `fcm`."),
        .integer("max_queued_per_pool", \.pool.maxQueuedPerPool, 1...1_000_000, "As for `apns`."),
    ]
}

/// A Huawei app's credential block.
extension HMSAuth: CredentialBlock {
    public static let platform = Platform.hms
    public static let key = "hms"
    public static let blank = HMSAuth(appID: "", clientSecretFile: "")

    public static let declared: [Setting<HMSAuth>] = [
        .text("app_id", \.appID, "The app's ID in AppGallery Connect (the OAuth client ID)."),
        .text("client_secret_file", \.clientSecretFile, "The file holding its client secret."),
    ]
}

import ProviderKit
import PushCore

/// The `fcm` section: the FCM host, a pool per app, the token exchange. Declared once here; the worker lifts it
/// under `fcm.`, and its docs table, `check-config`, the environment overrides and `worker --help` come from these.
extension FCMSettings: DeclaredSection {
    public static let section = "fcm"

    public static let declared: [Setting<FCMSettings>] = [
        .text("url", \.url, environment: "HERALD_FCM_URL",
              "Where `POST /v1/projects/<project_id>/messages:send` goes. Point it at `herald mock-fcm` for tests (docs/mock-fcm.md)."),
        .integer("connections_per_pool", \.connectionsPerPool, 1...64,
                 "HTTP/2 connections per FCM app; each carries up to the server's stream limit (100 at Google's front end)."),
        .integer("request_timeout_ms", \.requestTimeoutMs, 100...SettingBounds.maxTimeoutMs, "A send without an answer this long after it was written is cancelled and sent again; as for APNs, it may wait as long again for a connection first, and is never written past that."),
        .integer("connect_timeout_ms", \.connectTimeoutMs, 100...SettingBounds.maxTimeoutMs, "For the pool's connections and the token exchange's connect."),
        .integer("token_timeout_ms", \.tokenTimeoutMs, 100...SettingBounds.maxTimeoutMs,
                 "The whole OAuth token exchange (made off the event loop; sends of that app wait for it)."),
        .optionalText("ca_file", \.caFile, environment: "HERALD_FCM_CA_FILE",
                      "Extra trusted CA (PEM) for both the FCM host and the token endpoint, e.g. the simulator's."),
        .optionalText("proxy", \.proxy, environment: "HERALD_FCM_PROXY",
                      "`http://host:port`: HTTP CONNECT proxy for both. Without it libcurl honours `https_proxy` for the token exchange."),
        .integer("max_queued_per_pool", \.maxQueuedPerPool, 1...1_000_000, "As for `apns`."),
    ]
}

/// An FCM app's credential block.
extension FCMAuth: CredentialBlock {
    public static let platform = Platform.fcm
    public static let key = "fcm"
    public static let blank = FCMAuth(serviceAccountFile: "")

    public static let declared: [Setting<FCMAuth>] = [
        .text("service_account_file", \.serviceAccountFile, "Google's service-account JSON."),
    ]
}

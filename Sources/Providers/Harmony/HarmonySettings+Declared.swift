import ProviderKit
import PushCore

/// The `harmony` section: one pool per HarmonyOS app to the push host, its JWT's lifetime (docs/harmony.md).
/// Declared once here; the worker lifts it under `harmony.`, and its docs table, `check-config`, the environment
/// overrides and `worker --help` come from these.
extension HarmonySettings: DeclaredSection {
    public static let section = "harmony"

    public static let declared: [Setting<HarmonySettings>] = [
        .text("url", \.pool.url, environment: "HERALD_HARMONY_URL",
              "Where `POST /v3/<project_id>/messages:send` goes. Point it at `herald mock-harmony` for tests."),
        .integer("jwt_lifetime_s", \.jwtLifetimeSeconds, 60...3600,
                 "Seconds between a JWT's `iat` and `exp` (Huawei: at most an hour); a new one is signed before it ends."),
        .integer("connections_per_pool", \.pool.connectionsPerPool, 1...64, "HTTP/2 connections per HarmonyOS app."),
        .integer("request_timeout_ms", \.pool.requestTimeoutMs, 100...SettingBounds.maxTimeoutMs, "As for `fcm`."),
        .integer("connect_timeout_ms", \.pool.connectTimeoutMs, 100...SettingBounds.maxTimeoutMs, "For the pool's connections."),
        .optionalText("ca_file", \.pool.caFile, environment: "HERALD_HARMONY_CA_FILE",
                      "Extra trusted CA (PEM) for the push host, e.g. the simulator's."),
        .optionalText("proxy", \.pool.proxy, environment: "HERALD_HARMONY_PROXY", "As for `fcm`."),
        .integer("max_queued_per_pool", \.pool.maxQueuedPerPool, 1...1_000_000, "As for `apns`."),
    ]
}

/// A HarmonyOS app's credential block.
extension HarmonyAuth: CredentialBlock {
    public static let platform = Platform.harmony
    public static let key = "harmony"
    public static let blank = HarmonyAuth(serviceAccountFile: "")

    public static let declared: [Setting<HarmonyAuth>] = [
        .text("service_account_file", \.serviceAccountFile,
              "Huawei's service-account key file (JSON: project_id, key_id, sub_account, private_key)."),
    ]
}

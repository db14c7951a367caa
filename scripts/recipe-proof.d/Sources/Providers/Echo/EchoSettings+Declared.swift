import ProviderKit
import PushCore

/// The `echo` section, declared once: the loader, `worker --help` and docs/configuration.md's table come from it.
extension EchoSettings: DeclaredSection {
    public static let section = "echo"

    public static let declared: [Setting<EchoSettings>] = [
        .text("url", \.pool.url, "Where `POST /echo` goes. Point it at `herald mock-echo`."),
        .optionalText("ca_file", \.pool.caFile, "Extra trusted CA (PEM), e.g. the simulator's."),
        .integer("connections_per_pool", \.pool.connectionsPerPool, 1...64, "HTTP/2 connections per echo app."),
        .integer("request_timeout_ms", \.pool.requestTimeoutMs, 100...SettingBounds.maxTimeoutMs, "As for `fcm`."),
        .integer("connect_timeout_ms", \.pool.connectTimeoutMs, 100...SettingBounds.maxTimeoutMs, "As for `fcm`."),
        .integer("token_timeout_ms", \.pool.tokenTimeoutMs, 100...SettingBounds.maxTimeoutMs, "Unused (the key is its own token)."),
        .optionalText("proxy", \.pool.proxy, "As for `fcm`."),
        .integer("max_queued_per_pool", \.pool.maxQueuedPerPool, 1...1_000_000, "As for `apns`."),
    ]
}

/// An echo app's credential block: `"echo": {"key_file": ...}`.
extension EchoAuth: CredentialBlock {
    public static let platform = Platform.echo
    public static let key = "echo"
    public static let blank = EchoAuth(keyFile: "")

    public static let declared: [Setting<EchoAuth>] = [
        .text("key_file", \.keyFile, "The file holding the key sent as the bearer token."),
    ]
}

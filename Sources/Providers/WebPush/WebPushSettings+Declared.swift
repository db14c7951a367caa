import ProviderKit
import PushCore

/// The `web_push` section: one pool per push-service origin, shared by every Web Push app (docs/webpush.md).
/// Declared once here; the worker lifts it under `web_push.`, and its docs table, `check-config`, the environment
/// overrides and `worker --help` come from these.
extension WebPushSettings: DeclaredSection {
    public static let section = "web_push"

    public static let declared: [Setting<WebPushSettings>] = [
        .integer("connections_per_pool", \.connectionsPerPool, 1...64, "HTTP/2 connections to each push service."),
        .integer("http1_connections_per_origin", \.http1ConnectionsPerOrigin, 1...64,
                 "Keep-alive HTTP/1.1 connections (one request at a time each, a thread each) to a push service whose ALPN picks HTTP/1.1."),
        .integer("max_pools", \.maxPools, 1...10_000,
                 "Push-service origins with a pool open at once; past it idle pools close first, then a send waits."),
        .integer("idle_pool_ms", \.idlePoolMs, 100...SettingBounds.maxTimeoutMs, "A push service's pool that carried nothing this long is closed."),
        .integer("request_timeout_ms", \.requestTimeoutMs, 100...SettingBounds.maxTimeoutMs, "As for `fcm`."),
        .integer("connect_timeout_ms", \.connectTimeoutMs, 100...SettingBounds.maxTimeoutMs, "For the pools' connections."),
        .integer("max_queued_per_pool", \.maxQueuedPerPool, 1...1_000_000, "As for `apns`."),
        .optionalText("ca_file", \.caFile, environment: "HERALD_WEB_PUSH_CA_FILE",
                      "CA bundle to trust for push services besides the system's (the simulator's, in tests)."),
    ]
}

/// A Web Push app's credential block: its VAPID key and subject, and the push services its subscriptions may name.
extension WebPushAuth: CredentialBlock {
    public static let platform = Platform.webpush
    public static let key = "webpush"
    public static let blank = WebPushAuth(subject: "")

    public static let declared: [Setting<WebPushAuth>] = [
        .text("vapid_key", \.vapidKey, "The VAPID private key (PEM or base64url)."),
        .optionalText("vapid_key_file", \.vapidKeyFile, "Or the file that holds it."),
        .text("subject", \.subject, "`mailto:` or an `https:` URL."),
        .custom("push_service_hosts", default: "the vendors' documented hosts", "The push services its subscriptions may name (compared in lower case).",
                read: { value, auth, name, problems in
                    guard let hosts = value as? [String] else { return problems.append("\(name) must be a list of strings") }
                    auth.policy.hosts = PushServicePolicy(hosts: hosts).hosts
                }),
        .flag("allow_ip_literals", \.policy.allowsIPLiterals, "For tests against a local simulator."),
        .flag("allow_private_addresses", \.policy.allowsPrivateAddresses, "For tests against a local simulator."),
    ]
}

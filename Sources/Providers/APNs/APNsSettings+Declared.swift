import ProviderKit
import PushCore

/// The `apns` section: the push hosts, the pools and their connections. Declared once here; the worker lifts it
/// under `apns.`, and its docs table, `check-config`, the environment overrides and `worker --help` come from
/// these.
extension APNsSettings: DeclaredSection {
    public static let section = "apns"

    public static let declared: [Setting<APNsSettings>] = [
        .text("production_url", \.productionURL, environment: "HERALD_APNS_PRODUCTION_URL",
              "Use port 2197 where 443 is blocked. Point it at `herald mock-apns` for tests."),
        .text("sandbox_url", \.sandboxURL, environment: "HERALD_APNS_SANDBOX_URL", "The sandbox (development) push host."),
        .text("channels_production_url", \.channelsProductionURL, environment: "HERALD_APNS_CHANNELS_PRODUCTION_URL",
              "Broadcast channel management (`herald channels`, docs/broadcast.md); broadcasts themselves go to `production_url`."),
        .text("channels_sandbox_url", \.channelsSandboxURL, environment: "HERALD_APNS_CHANNELS_SANDBOX_URL",
              "Broadcast channel management in the sandbox."),
        .integer("connections_per_pool", \.connectionsPerPool, 1...64, environment: "HERALD_APNS_CONNECTIONS",
                 "HTTP/2 connections per credential and environment. Each carries up to the server's stream limit (about 1000 at APNs). More streams in flight also make every batch (Redis, TLS records) larger: on the benchmark machine 4 connections cost less CPU per job than 2."),
        .integer("request_timeout_ms", \.requestTimeoutMs, 100...SettingBounds.maxTimeoutMs, "A request without an answer this long after it was written is cancelled and retried. It may also wait this long for a connection or a free stream first; past that it is never written (not processed, resent without spending an attempt)."),
        .integer("connect_timeout_ms", \.connectTimeoutMs, 100...SettingBounds.maxTimeoutMs, "Connecting and the TLS handshake."),
        .integer("connection_stagger_ms", \.connectionStaggerMs, 0...10_000,
                 "A pool opens its connections this far apart (at start, and when replacing several), never in a burst, as Apple asks. Each connection resolves the host afresh and prefers an address no other connection of the pool uses (docs/transport.md, \"Connecting to APNs\"). 0 opens them all at once."),
        .integer("ping_idle_seconds", \.pingIdleSeconds, 1...86_400, "PING a connection idle this long (Apple: about an hour)."),
        .integer("ping_timeout_seconds", \.pingTimeoutSeconds, 1...3_600, "A PING unanswered this long declares the connection dead."),
        .optionalText("ca_file", \.caFile, environment: "HERALD_APNS_CA_FILE",
                      "Extra trusted CA (PEM) on top of the system store, e.g. the simulator's CA."),
        .optionalText("proxy", \.proxy, environment: "HERALD_APNS_PROXY", "`http://host:port`: HTTP CONNECT proxy for corporate networks."),
        .integer("max_queued_per_pool", \.maxQueuedPerPool, 1...1_000_000,
                 "Requests waiting for a free stream in one pool. Beyond it the pool refuses; the worker keeps the refused jobs in memory and sends them as answers free room (claiming stays bounded by `max_in_flight`)."),
    ]
}

/// An APNs app's credential, one of two blocks: `token` (a .p8 signing key, Apple's recommendation) or `certificate`.
extension APNsTokenAuth: CredentialBlock {
    public static let platform = Platform.apns
    public static let key = "token"
    public static let blank = APNsTokenAuth(teamID: "", keyID: "", keyFile: "")

    public static let declared: [Setting<APNsTokenAuth>] = [
        .text("team_id", \.teamID, "The developer team's ID (10 characters)."),
        .text("key_id", \.keyID, "The signing key's ID (10 characters)."),
        .text("key_file", \.keyFile, "The .p8 key file."),
        .integer("refresh_minutes", \.refreshMinutes, 20...60, "A provider token is signed anew after this long (Apple's window is 20 to 60 minutes)."),
    ]
}

extension APNsCertificateAuth: CredentialBlock {
    public static let platform = Platform.apns
    public static let key = "certificate"
    public static let blank = APNsCertificateAuth()

    public static let declared: [Setting<APNsCertificateAuth>] = [
        .optionalText("pem_file", \.pemFile, "The client certificate (PEM), with `key_file` unless it holds the key."),
        .optionalText("key_file", \.keyFile, "Its private key (PEM)."),
        .optionalText("pkcs12_file", \.pkcs12File, "Or both in one PKCS#12 file."),
        .optionalText("password", \.password, "The key's or the PKCS#12 file's password."),
        .optionalText("password_env", \.passwordEnv, "Or the environment variable that holds it."),
    ]
}

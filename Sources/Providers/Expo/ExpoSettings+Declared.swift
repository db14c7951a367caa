import ProviderKit
import PushCore

/// The `expo` section: one pool per Expo app to the push host, its batching and its receipts' schedule
/// (docs/expo.md). Declared once here; the worker lifts it under `expo.`.
extension ExpoSettings: DeclaredSection {
    public static let section = "expo"

    public static let declared: [Setting<ExpoSettings>] = [
        .text("url", \.pool.url, environment: "HERALD_EXPO_URL",
              "Where `POST /--/api/v2/push/send` and `getReceipts` go. Point it at `herald mock-expo` for tests."),
        .integer("connections_per_pool", \.pool.connectionsPerPool, 1...64, "HTTP/2 connections per Expo app."),
        .integer("request_timeout_ms", \.pool.requestTimeoutMs, 100...SettingBounds.maxTimeoutMs, "As for `fcm`."),
        .integer("connect_timeout_ms", \.pool.connectTimeoutMs, 100...SettingBounds.maxTimeoutMs, "As for `fcm`."),
        .optionalText("ca_file", \.pool.caFile, environment: "HERALD_EXPO_CA_FILE", "Extra trusted CA (PEM) for the push host, e.g. the simulator's."),
        .optionalText("proxy", \.pool.proxy, environment: "HERALD_EXPO_PROXY", "As for `fcm`."),
        .integer("max_queued_per_pool", \.pool.maxQueuedPerPool, 1...1_000_000, "As for `apns`."),
        .integer("batch_size", \.batchSize, 1...100, "Most messages in one `push/send` request."),
        .integer("batch_wait_ms", \.batchWaitMs, 0...1000, "How long a message waits for others to fill its request; 0: one loop turn."),
        .integer("receipt_delay_seconds", \.receiptDelaySeconds, 0...86_400, "First ask for a ticket's receipt this long after it."),
        .integer("receipt_interval_seconds", \.receiptIntervalSeconds, 1...86_400, "Ask for one receipt again no sooner than this."),
        .integer("receipt_bound_seconds", \.receiptBoundSeconds, 1...172_800,
                   "A receipt not seen this long after its ticket ends the token `delivered` with reason `ReceiptNotSeen`."),
    ]
}

/// An Expo app's credential block.
extension ExpoAuth: CredentialBlock {
    public static let platform = Platform.expo
    public static let key = "expo"
    public static let blank = ExpoAuth(accessTokenFile: "")

    public static let declared: [Setting<ExpoAuth>] = [
        .text("access_token_file", \.accessTokenFile, "The file holding the app's Expo access token (enhanced push security)."),
    ]
}

import ProviderKit

/// Expo's push service: where tickets and receipts are asked for (tests point it at `herald mock-expo`), how the
/// connections behave, how messages are batched, and when receipts are asked for.
public struct ExpoSettings: Sendable, Equatable {
    public init() {}
    /// The push host (`url`), its connections, timeouts, CA and proxy, as the shared bearer sender takes them.
    public var pool = BearerPoolSettings(url: "https://exp.host:443")
    /// The most messages one `push/send` request carries (Expo takes up to 100).
    public var batchSize = 100
    /// How long a message waits for others to share its request; 0 sends what one loop turn gathered.
    public var batchWaitMs = 0
    /// First ask for a receipt this long after its ticket (Expo: "usually quickly, allow up to 30 minutes").
    public var receiptDelaySeconds: Int64 = 900
    /// Ask for one ticket's receipt again no sooner than this after the last ask.
    public var receiptIntervalSeconds: Int64 = 600
    /// A receipt not seen this long after its ticket ends the token as delivered (Expo keeps receipts a day).
    public var receiptBoundSeconds: Int64 = 86_400

    /// Expo's documented most ids in one `getReceipts`.
    public static let receiptBatch = 1000

    public var receiptSchedule: ReceiptSchedule {
        ReceiptSchedule(delayMilliseconds: receiptDelaySeconds * 1000, intervalMilliseconds: receiptIntervalSeconds * 1000,
                        boundMilliseconds: receiptBoundSeconds * 1000, batch: Self.receiptBatch)
    }
}

import PushCore

/// A provider's second phase: its send answers a ticket (`AnswerClass.awaitReceipt`), and a receipt asked for later
/// decides the outcome (Expo's push service). Declared by conforming the provider to it; the neutral receipts set and
/// poller (`ReceiptPoller`, run by `herald scheduler --config`) ask only such providers, so the worker's send path
/// of every other provider never meets it.
public protocol ReceiptPhase: PushProvider {
    /// When and how often its receipts are asked for, from its settings.
    static func receiptSchedule(_ configuration: Configuration) -> ReceiptSchedule

    /// Asks for the receipts of `tickets` (at most `ReceiptSchedule.batch`) of one app, blocking: each ticket's
    /// verdict, none for a receipt that is not there yet; or why no answer could be had (all stay for the next ask).
    static func askReceipts(_ tickets: [String], app: AppCredentials, configuration: Configuration) -> Result<[String: ReceiptVerdict], ReceiptAskFailure>
}

/// When a second phase's receipts are asked for: first `delayMilliseconds` after the ticket, then again no sooner
/// than `intervalMilliseconds` after each ask, until `boundMilliseconds` after the ticket, when a receipt never seen
/// ends the token as delivered (`ReceiptNotSeen`). `batch`: the most tickets one ask names.
public struct ReceiptSchedule: Sendable, Equatable {
    public var delayMilliseconds: Int64
    public var intervalMilliseconds: Int64
    public var boundMilliseconds: Int64
    public var batch: Int

    public init(delayMilliseconds: Int64, intervalMilliseconds: Int64, boundMilliseconds: Int64, batch: Int) {
        self.delayMilliseconds = delayMilliseconds
        self.intervalMilliseconds = intervalMilliseconds
        self.boundMilliseconds = boundMilliseconds
        self.batch = batch
    }
}

/// A receipt's word on one ticket: the terminal outcome it writes.
public enum ReceiptVerdict: Sendable, Equatable {
    case delivered
    /// The device is gone (Expo's `DeviceNotRegistered`): onto the dropped-tokens stream.
    case dropToken(reason: String)
    case fail(reason: String)
}

/// Why an ask for receipts got no usable answer; the tickets stay and are asked again after the interval.
public struct ReceiptAskFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

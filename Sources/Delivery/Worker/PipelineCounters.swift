/// What one pipeline has done, for the periodic log line and the shutdown summary. Loop-confined.
public struct PipelineCounters: Sendable, Equatable {
    public var claimed = 0
    public var delivered = 0
    public var retrying = 0
    public var tokensDropped = 0
    /// Broadcasts answered ChannelNotRegistered.
    public var channelsDropped = 0
    public var failed = 0
    public var rejected = 0
    public var resent = 0
    public var leasesLost = 0
    public var recovered = 0
    /// Destinations paused because nothing reached APNs (each pause once, however many jobs it parked).
    public var outagePauses = 0
    /// Jobs an outage pause held that went back to the head of their queue for other workers (no attempt spent).
    public var handedBack = 0
    /// Jobs whose `deliver_at` lay ahead, put in the retry set until then.
    public var scheduled = 0
    /// Outcomes Redis could not record because it had lost its data (a restart without persistence).
    public var forgotten = 0
    /// Jobs sent to their app's other environment after a BadDeviceToken (environment fallback).
    public var fallbacks = 0
    /// Multicast jobs fanned out, and the token jobs they made.
    public var multicast = 0
    public var fannedOut = 0
    /// Copies of a job id already sent within the idempotency window (not sent again).
    public var duplicates = 0
    /// FCM projects held back after a 429 (each pause once).
    public var throttlePauses = 0
    /// Jobs a budget held back to a later time (each also counts in `retrying`).
    public var budgetHeld = 0

    public init() {}

    public var terminal: Int { delivered + tokensDropped + channelsDropped + failed + rejected + duplicates }

    public static func + (a: PipelineCounters, b: PipelineCounters) -> PipelineCounters {
        var c = a
        c.claimed += b.claimed
        c.delivered += b.delivered
        c.retrying += b.retrying
        c.tokensDropped += b.tokensDropped
        c.channelsDropped += b.channelsDropped
        c.failed += b.failed
        c.rejected += b.rejected
        c.resent += b.resent
        c.leasesLost += b.leasesLost
        c.recovered += b.recovered
        c.outagePauses += b.outagePauses
        c.handedBack += b.handedBack
        c.scheduled += b.scheduled
        c.forgotten += b.forgotten
        c.fallbacks += b.fallbacks
        c.multicast += b.multicast
        c.fannedOut += b.fannedOut
        c.duplicates += b.duplicates
        c.throttlePauses += b.throttlePauses
        c.budgetHeld += b.budgetHeld
        return c
    }

    var logFields: [String: LogValue] {
        ["claimed": .int(claimed), "delivered": .int(delivered), "retrying": .int(retrying), "token_dropped": .int(tokensDropped),
         "channel_dropped": .int(channelsDropped),
         "failed": .int(failed), "rejected": .int(rejected), "resent": .int(resent), "leases_lost": .int(leasesLost),
         "outage_pauses": .int(outagePauses), "handed_back": .int(handedBack), "scheduled": .int(scheduled),
         "forgotten": .int(forgotten), "fallbacks": .int(fallbacks), "multicast": .int(multicast), "fanned_out": .int(fannedOut),
         "duplicates": .int(duplicates), "throttle_pauses": .int(throttlePauses),
         "budget_held": .int(budgetHeld)]
    }
}

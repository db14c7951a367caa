/// PING-based liveness of a session: after `idle` without receiving a byte a PING goes out, and no answer
/// within `timeout` declares the connection dead. Any byte received counts as an answer. A request that times
/// out makes the connection suspect at once: a half-open connection (a black hole on the path) would otherwise
/// swallow every request until the idle PING, an hour later by default.
struct Liveness {
    private(set) var lastReadAt: UInt64
    private(set) var pingSentAt: UInt64?

    init(lastReadAt: UInt64) { self.lastReadAt = lastReadAt }

    enum Verdict: Equatable { case alive, sendPing, dead }

    mutating func received(at now: UInt64) {
        lastReadAt = now
        pingSentAt = nil
    }

    mutating func pingAcknowledged() { pingSentAt = nil }

    mutating func pingSent(at now: UInt64) { pingSentAt = now }

    /// A request timed out: true when a PING should go out now (none is outstanding). A live server answers
    /// it at once, however slow the stream that timed out; a dead path does not, and `timeout` later it is closed.
    var shouldProbeAfterTimeout: Bool { pingSentAt == nil }

    func verdict(at now: UInt64, idleNanos: UInt64, timeoutNanos: UInt64) -> Verdict {
        if let sent = pingSentAt { return now &- sent >= timeoutNanos ? .dead : .alive }
        return now &- lastReadAt >= idleNanos ? .sendPing : .alive
    }
}

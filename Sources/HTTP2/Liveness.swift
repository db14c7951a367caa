/// PING-based liveness of a session: after `idle` without receiving a byte a PING goes out, and no answer
/// within `timeout` declares the connection dead. Any byte received counts as an answer.
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

    func verdict(at now: UInt64, idleNanos: UInt64, timeoutNanos: UInt64) -> Verdict {
        if let sent = pingSentAt { return now &- sent >= timeoutNanos ? .dead : .alive }
        return now &- lastReadAt >= idleNanos ? .sendPing : .alive
    }
}

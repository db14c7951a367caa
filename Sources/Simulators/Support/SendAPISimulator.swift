/// What the public server of every send-API simulator (`MockFCMServer`, `MockHMSServer`) answers alike, on the
/// loop through its handle; each server forwards to these.
extension SimulatorHandle {
    /// A snapshot of the counters.
    func stats<Handler>() -> SendAPIStats<Handler.Counters> where Provider == SendAPICore<Handler> {
        read(SendAPIStats()) { $0.snapshot() }
    }

    /// Accepted messages so far (only when `recordAccepted` is on).
    func acceptedMessages<Handler>() -> [Handler.Accepted] where Provider == SendAPICore<Handler> {
        read([]) { $0.accepted }
    }

    /// The fault script in force.
    func faults<Handler>() -> FaultScript<Handler.Settings.Faults> where Provider == SendAPICore<Handler> {
        read(FaultScript(extras: Handler.Settings.Faults())) { $0.faults.script }
    }

    /// Replaces device state, faults and quotas (per-token counters and quota windows start afresh).
    func replaceFaults<Handler>(_ script: FaultScript<Handler.Settings.Faults>) throws where Provider == SendAPICore<Handler> {
        try script.check()
        try run { $0.faults.replace(script, defaultSeed: $0.configuration.seed) }
    }

    /// Every access token issued so far is refused from now on; new ones are issued as before.
    func revokeAccessTokens<Handler>() where Provider == SendAPICore<Handler> {
        try? run { $0.handler.revokeAccessTokens() }
    }

    /// Zeroes the counters, the accepted log, the fault counters and the quota windows (connections and tokens stay).
    func resetStats<Handler>() where Provider == SendAPICore<Handler> {
        try? run { $0.resetCounters() }
    }
}

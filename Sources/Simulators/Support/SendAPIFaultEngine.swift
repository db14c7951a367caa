/// The fault engine of a send-API simulator: the shared one over its script, then the provider's quota, and
/// the count of token requests `tokenFailFirst` fails. Confined to the server's loop thread: no locks on the
/// request path.
final class SendAPIFaultEngine<Extras: SendAPIFaults> {
    private let rules: ScriptedFaults<Extras>
    private var quota = Extras.Quota()
    private var tokenRequests = 0

    var script: FaultScript<Extras> { rules.script }

    init(script: FaultScript<Extras>, defaultSeed: UInt64) {
        rules = ScriptedFaults(script: script, defaultSeed: defaultSeed)
    }

    /// A new script; the rules' counters, the quota windows and the token requests start afresh.
    func replace(_ newScript: FaultScript<Extras>, defaultSeed: UInt64) {
        rules.replace(newScript, defaultSeed: defaultSeed)
        quota = Extras.Quota()
        tokenRequests = 0
    }

    /// The rules, then the quota, for one send: the verdict (`overQuota` when the quota refused it) and the
    /// latency to add before answering.
    func decide(_ subject: SendSubject) -> (verdict: FaultVerdict<Extras.Rule.Answer>, overQuota: Bool, delay: Int) {
        let (verdict, delay) = rules.evaluate(key: subject.key, subject)
        switch verdict {
        case nil, .accept?:
            if let refusal = quota.spend(subject, script.extras) { return (.answer(refusal), true, delay) }
            return (.accept, false, delay)
        case let decided?: return (decided, false, delay)
        }
    }

    /// True when this token request is one of the script's `tokenFailFirst`.
    func tokenRequestFails() -> Bool {
        tokenRequests += 1
        return tokenRequests <= (script.extras.tokenFailFirst ?? 0)
    }
}

/// What may go to one destination right now: everything, one probe at a time, or nothing (paused).
///
/// A destination starts unproven: one job (the probe) goes out and the rest wait for its answer, so a broken
/// key costs one rejected request per pause instead of one per claimed job. A credential error, a client that
/// cannot be set up, or an outage (nothing reaches APNs) pauses it; when the pause ends it is unproven again.
/// Loop-confined, owned by the core.
final class DestinationGate {
    enum PauseKind: CaseIterable {
        /// APNs refused the credential: reload the key or certificate when the pause ends.
        case credential
        /// No client could be set up (CA file, certificate): reload too.
        case setup
        /// Nothing reaches APNs (connect or TLS failures, nothing processed): try again with back-off.
        case outage
        /// FCM said the project is over its quota (429): hold back for its Retry-After, then probe.
        case throttle
    }

    struct Pause {
        let kind: PauseKind
        let reason: String
        /// Monotonic nanoseconds.
        let until: UInt64
    }

    let destination: Destination
    private(set) var pause: Pause?
    /// Ended pauses of a credential or set-up kind wait here for the reload's answer; nothing is sent meanwhile.
    private(set) var reloading = false
    /// Outage pauses in a row (reset by any answer from APNs): the back-off's exponent.
    private(set) var consecutiveOutages = 0
    /// Answers from APNs (any status) so far: tells a server that processes nothing from a stream refused by
    /// chance while the others are answered.
    private(set) var processedAnswers: UInt64 = 0
    private(set) var proven = false
    private(set) var probe: JobAttempt?
    private(set) var waiting: [JobAttempt] = []
    /// Jobs this pause handed back to their queue (ids), with how often they came back to this worker since: one
    /// that comes back within the same pause waits in the retry set, quietly, a second, then two, four...
    /// (at most to the pause's end), instead of going round the queue again at once with a new entry each time
    /// (issue 54: an outage of one provider beside a healthy one wrote ~110 `retrying` entries a second for the
    /// same jobs). Short waits first, so another worker that reaches the destination still gets them soon.
    private var handedBack: [String: Int] = [:]
    /// Past this many ids a pause hands back no more (its jobs wait in the retry set): bounds the memory.
    static let maxHandedBackPerPause = 100_000

    init(_ destination: Destination) { self.destination = destination }

    func isPaused(at now: UInt64) -> Bool { reloading || (pause.map { now < $0.until } ?? false) }

    /// True when `job` may go out now; otherwise the caller defers it (paused) or it waits for the probe.
    enum Admission { case send, paused, waitForProbe }

    func admit(_ job: JobAttempt, now: UInt64) -> Admission {
        if isPaused(at: now) { return .paused }
        if proven { return .send }
        if let probe, probe !== job {
            waiting.append(job)
            return .waitForProbe
        }
        probe = job
        return .send
    }

    /// The job's send was refused before it went out (full pool): it proves nothing.
    func withdraw(_ job: JobAttempt) {
        if probe === job { probe = nil }
    }

    /// An answer (or failure) for `job` arrived. Returns whether it was the probe.
    /// `credentialAccepted` is asked only of the probe's answer (the only one that can prove a credential).
    func answered(_ job: JobAttempt, reachedAPNs: Bool, credentialAccepted: () -> Bool) -> Bool {
        if reachedAPNs {
            consecutiveOutages = 0
            processedAnswers &+= 1
        }
        guard probe === job else { return false }
        probe = nil
        if reachedAPNs && credentialAccepted() { proven = true }
        return true
    }

    /// Jobs that waited for the probe; the caller sends, defers or re-gates them.
    func takeWaiting() -> [JobAttempt] {
        let jobs = waiting
        waiting.removeAll()
        return jobs
    }

    /// Starts a pause unless one is already running; returns false when already paused.
    @discardableResult
    func startPause(_ kind: PauseKind, reason: String, milliseconds: Int64, now: UInt64) -> Bool {
        if isPaused(at: now) { return false }
        if kind == .outage { consecutiveOutages += 1 }
        pause = Pause(kind: kind, reason: reason, until: now &+ UInt64(max(1, milliseconds)) * 1_000_000)
        handedBack.removeAll()
        proven = false
        return true
    }

    /// What the running pause does with job `id` that it would hand back to its queue.
    enum HandBack {
        /// The first time it meets the job: back to its queue, for a worker that may reach the destination.
        case handBack
        /// It handed the job back already, and met it `returns` times since: the job waits in the retry set,
        /// with no new entry.
        case alreadyHandedBack(returns: Int)
        /// Too many ids remembered: the job waits out the pause in the retry set, with its entry.
        case park
    }

    func handBack(_ id: String) -> HandBack {
        if let returns = handedBack[id] {
            handedBack[id] = returns + 1
            return .alreadyHandedBack(returns: returns + 1)
        }
        guard handedBack.count < Self.maxHandedBackPerPause else { return .park }
        handedBack[id] = 0
        return .handBack
    }

    /// Called on every tick: a pause whose time is up ends (outage), or turns into a reload (credential, set-up).
    /// Returns the kind of the pause that just ended.
    func endPauseIfDue(now: UInt64) -> PauseKind? {
        guard let pause, now >= pause.until else { return nil }
        self.pause = nil
        handedBack.removeAll()
        if pause.kind == .credential || pause.kind == .setup { reloading = true }
        return pause.kind
    }

    /// The reload after a credential or set-up pause finished (the caller pauses again if it failed).
    func reloaded() {
        reloading = false
        proven = false
    }
}

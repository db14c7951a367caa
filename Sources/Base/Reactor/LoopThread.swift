import Glibc
import Synchronization

/// Which thread runs a loop: the identity every loop-only call is checked against (the loop itself, its
/// timers, `LoopBound`). One atomic load and a compare with `pthread_self()` on the fast path.
final class LoopThread: Sendable {
    /// The loop's name, for the message when a check fails.
    let name: String
    /// 0 before the loop runs, then the loop thread's `pthread_t`, then `finished` once `run` has returned.
    private let state = Atomic<UInt>(0)
    private static let finished = UInt.max

    init(name: String) { self.name = name }

    private static var current: UInt { UInt(pthread_self()) }

    /// Called first thing on the loop's thread.
    func begin() {
        state.store(Self.current, ordering: .releasing)
    }

    /// Called last thing on the loop's thread: from now on the loop has no thread.
    func end() {
        state.store(Self.finished, ordering: .releasing)
    }

    /// Waits (briefly: the thread was just started) until `begin` has run.
    func waitUntilStarted() {
        while state.load(ordering: .acquiring) == 0 { sched_yield() }
    }

    var isCurrent: Bool { state.load(ordering: .acquiring) == Self.current }

    /// True on the loop's thread, and anywhere once the loop has finished (teardown of what it owned).
    var isCurrentOrFinished: Bool {
        let owner = state.load(ordering: .acquiring)
        return owner == Self.current || owner == Self.finished
    }

    /// Stops the process unless `isCurrentOrFinished`.
    @inline(__always)
    func precondition(_ call: StaticString) {
        if _fastPath(isCurrentOrFinished) { return }
        confinementViolation(loop: name, call)
    }

    /// Stops the process unless on the loop's running thread (strict: for `LoopBound`, whose value must not
    /// be shared once the loop is gone either).
    @inline(__always)
    func preconditionCurrent(_ call: StaticString) {
        if _fastPath(isCurrent) { return }
        confinementViolation(loop: name, call)
    }
}

/// Out of line so the checks stay small; `fatalError` (not `precondition`) so release builds say why too.
@inline(never)
private func confinementViolation(loop name: String, _ call: StaticString) -> Never {
    fatalError("loop confinement: \(call) called off the thread of event loop '\(name)'")
}

import Basics
import Reactor

/// A running simulator as its public server type holds it: the loop thread, and the shared core with the
/// provider and the listeners on it (reached only through the `LoopBound`, so that is checked).
///
/// Thread-safe: every call hops onto the loop (`submit`); the request path never leaves it.
struct SimulatorHandle<Provider: MockProvider>: Sendable {
    /// The ports bound, in the order asked for (0 asks for a free one).
    let ports: [Int]
    private let loop: EventLoop
    private let state: LoopBound<(core: MockServerCore<Provider>, listeners: [ServerListener])>
    private let isStopped = LockedValue(false)

    /// Starts the loop thread, makes the provider on it (with the counters it reports), binds and listens.
    init(name: String, host: String, ports: [Int], makeProvider: @escaping @Sendable (ConnectionCounters) throws -> Provider) throws {
        (loop, state, self.ports) = try ServerLoop.start(name: name, host: host, ports: ports) { loop in
            let counters = ConnectionCounters()
            return try MockServerCore(loop: loop, provider: try makeProvider(counters), counters: counters)
        }
    }

    /// `body`'s result on the loop; `fallback` once the server has stopped.
    func read<T: Sendable>(_ fallback: T, _ body: @escaping @Sendable (Provider) -> T) -> T {
        (try? loop.submit { [state] in body(state.value.core.provider) }) ?? fallback
    }

    /// Runs `body` on the loop; throws what it throws (or that the server has stopped).
    func run(_ body: @escaping @Sendable (Provider) throws -> Void) throws {
        try loop.submit { [state] in try body(state.value.core.provider) }
    }

    /// Closes every connection and the listeners, and ends the loop thread. Idempotent.
    func stop() {
        ServerLoop.stop(loop: loop, state: state, isStopped: isStopped)
    }
}

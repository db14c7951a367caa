import Foundation
import PushCore
import Reactor

/// One credential's bearer access token for any provider whose token comes from an exchange (FCM's signed
/// assertion grant, an OAuth client-credentials grant): cached until shortly before its lifetime ends, refreshed
/// in the background near its end, fetched once at a time however many sends wait, and dropped when the provider
/// refuses it (the next fetch is marked, so a 401 on that one means the credential itself is refused). The
/// exchange is blocking and runs on a helper thread; its answer comes back with `EventLoop.execute`. The token is
/// never logged. Loop-confined.
public final class AccessTokenCache {
    public struct Token: Sendable {
        /// `Bearer <token>`, ready for the header.
        public let header: String
        /// Fetched after a 401 on its predecessor: a 401 on this one means the credential is refused.
        public let afterRefusal: Bool
        let generation: Int
    }

    public enum Failure: Error, Sendable, Equatable {
        /// The endpoint refused the grant (`invalid_grant`...) or the request for it could not be made (a key that
        /// does not sign): trying again will not help until the credential changes.
        case refused(String)
        /// No usable answer (network, TLS, 5xx, timeout): may pass later.
        case unavailable(String)
    }

    /// One exchange, blocking, off the loop: the access token and its lifetime in seconds, or why there is none.
    public typealias Exchange = @Sendable () -> Result<(token: String, lifetimeSeconds: Int64), Failure>

    private let loop: EventLoop
    private var exchange: Exchange
    private var current: (token: Token, refreshAt: UInt64, expiresAt: UInt64)?
    private var fetching = false
    private var waiters: [(Result<Token, Failure>) -> Void] = []
    /// Bumped when the credential is replaced, so a late answer for the old one is dropped.
    private var generation = 0
    private var nextIsAfterRefusal = false
    /// Exchanges made, for tests and the metrics (a provider's tokens signed).
    public private(set) var exchanges = 0
    /// Exchanges that ended without a token, and the time all answered exchanges took (the metrics).
    public private(set) var stats = TokenExchangeStats()

    public init(loop: EventLoop, exchange: @escaping Exchange) {
        self.loop = loop
        self.exchange = exchange
    }

    /// Calls `body` with a valid token: at once when one is cached (starting a background refresh when it is
    /// near its end), else when the exchange answers.
    public func withToken(_ body: @escaping (Result<Token, Failure>) -> Void) {
        loop.preconditionInLoop()
        let now = monotonicNanos()
        if let current, now < current.expiresAt {
            if now >= current.refreshAt && !fetching { fetch() }
            return body(.success(current.token))
        }
        waiters.append(body)
        if !fetching { fetch() }
    }

    /// The provider answered 401 to a request with `token`: drop it so the next send fetches a new one.
    public func refused(_ token: Token) {
        guard let current, current.token.generation == token.generation, current.token.header == token.header else { return }
        self.current = nil
        nextIsAfterRefusal = true
    }

    /// A send with `token` was accepted: a later 401 on it is a stale token again, not a refused credential.
    public func accepted(_ token: Token) {
        guard token.afterRefusal, let current, current.token.header == token.header else { return }
        self.current = (Token(header: token.header, afterRefusal: false, generation: token.generation), current.refreshAt, current.expiresAt)
    }

    /// The credential was read again (after a pause): forget the old token and any exchange in flight, and make
    /// the next ones with `exchange`.
    public func replace(exchange: @escaping Exchange) {
        self.exchange = exchange
        generation += 1
        current = nil
        nextIsAfterRefusal = false
        if fetching {
            fetching = false
            let waiting = waiters
            waiters = []
            // Whoever waited asks again with the new credential.
            for body in waiting { withToken(body) }
        }
    }

    private func fetch() {
        fetching = true
        exchanges += 1
        let exchange = self.exchange
        let started = generation
        let afterRefusal = nextIsAfterRefusal
        let bound = LoopBound(self, loop: loop)
        let thread = Thread {
            let begun = monotonicNanos()
            let answer = exchange()
            let took = monotonicNanos() &- begun
            bound.loop.execute { bound.value.finish(answer, generation: started, afterRefusal: afterRefusal, took: took) }
        }
        thread.name = "herald-token"
        thread.start()
    }

    private func finish(_ result: Result<(token: String, lifetimeSeconds: Int64), Failure>, generation started: Int, afterRefusal: Bool,
                        took: UInt64) {
        stats.answered += 1
        stats.nanoseconds &+= took
        switch result {
        case .success: break
        case .failure(.refused): stats.refused += 1
        case .failure(.unavailable): stats.unavailable += 1
        }
        guard started == generation else { return }
        fetching = false
        let outcome: Result<Token, Failure>
        switch result {
        case .success(let (value, seconds)):
            let token = Token(header: "Bearer " + value, afterRefusal: afterRefusal, generation: generation)
            let now = monotonicNanos()
            // At most a year: an endpoint answering a negative or absurd expires_in must not overflow the clock.
            let lifetime = min(UInt64(clamping: seconds), 365 * 86_400) * 1_000_000_000
            // Refresh 5 minutes early (a fifth of a short token's life); stop using it a minute before its end.
            let refreshMargin = min(300_000_000_000, lifetime / 5)
            let expiryMargin = min(60_000_000_000, lifetime / 10)
            current = (token, now &+ lifetime - refreshMargin, now &+ lifetime - expiryMargin)
            if afterRefusal { nextIsAfterRefusal = false }
            outcome = .success(token)
        case .failure(let failure):
            outcome = .failure(failure)
        }
        let waiting = waiters
        waiters = []
        for body in waiting { body(outcome) }
    }
}

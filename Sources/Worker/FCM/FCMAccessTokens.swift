import APNs
import CurlHTTP
import FCM
import Foundation
import PushCore
import Reactor

/// One service account's OAuth access token: signed assertion in, bearer token out, cached until shortly
/// before `expires_in`, refreshed once at a time. The exchange is a blocking libcurl POST on a helper thread;
/// its answer comes back with `EventLoop.execute`. The token is never logged. Loop-confined.
final class FCMAccessTokens {
    struct Token {
        /// `Bearer <token>`, ready for the header.
        let header: String
        /// Fetched after a 401 on its predecessor: a 401 on this one means the credential is refused.
        let afterRefusal: Bool
        let generation: Int
    }

    enum Failure: Error {
        /// The endpoint refused the grant (`invalid_grant`...) or the assertion could not be signed.
        case refused(String)
        /// No usable answer (network, TLS, 5xx, timeout): may pass later.
        case unavailable(String)
    }

    /// How the exchange is made; injectable so tests can count and hold exchanges.
    typealias Exchange = @Sendable (_ url: String, _ body: [UInt8], _ options: CurlPost.Options) -> Result<CurlPost.Answer, CurlFailure>

    private let loop: EventLoop
    private(set) var account: ServiceAccount
    private let options: CurlPost.Options
    private let exchange: Exchange
    private var current: (token: Token, refreshAt: UInt64, expiresAt: UInt64)?
    private var fetching = false
    private var waiters: [(Result<Token, Failure>) -> Void] = []
    /// Bumped when the account is replaced or a token refused, so a late answer for an old one is dropped.
    private var generation = 0
    private var nextIsAfterRefusal = false
    /// Exchanges made, for tests and the log.
    private(set) var exchanges = 0

    init(account: ServiceAccount, loop: EventLoop, options: CurlPost.Options,
         exchange: @escaping Exchange = { url, body, options in
             CurlPost.post(url: url, contentType: "application/x-www-form-urlencoded", body: body, options: options)
         }) {
        self.account = account
        self.loop = loop
        self.options = options
        self.exchange = exchange
    }

    /// Calls `body` with a valid token: at once when one is cached (starting a background refresh when it is
    /// near its end), else when the exchange answers.
    func withToken(_ body: @escaping (Result<Token, Failure>) -> Void) {
        loop.preconditionInLoop()
        let now = monotonicNanos()
        if let current, now < current.expiresAt {
            if now >= current.refreshAt && !fetching { fetch() }
            return body(.success(current.token))
        }
        waiters.append(body)
        if !fetching { fetch() }
    }

    /// FCM answered 401 to a request with `token`: drop it so the next send fetches a new one.
    func refused(_ token: Token) {
        guard let current, current.token.generation == token.generation, current.token.header == token.header else { return }
        self.current = nil
        nextIsAfterRefusal = true
    }

    /// A send with `token` was accepted: a later 401 on it is a stale token again, not a refused credential.
    func accepted(_ token: Token) {
        guard token.afterRefusal, let current, current.token.header == token.header else { return }
        self.current = (Token(header: token.header, afterRefusal: false, generation: token.generation), current.refreshAt, current.expiresAt)
    }

    /// The service account file was read again (after a pause): forget the old token and any exchange in flight.
    func replace(_ account: ServiceAccount) {
        self.account = account
        generation += 1
        current = nil
        nextIsAfterRefusal = false
        if fetching {
            fetching = false
            let waiting = waiters
            waiters = []
            // Whoever waited asks again with the new account.
            for body in waiting { withToken(body) }
        }
    }

    private func fetch() {
        fetching = true
        exchanges += 1
        let assertion: String
        do {
            assertion = try OAuthAssertion.sign(account, issuedAt: wallClockMillis() / 1000)
        } catch {
            return finish(.failure(.refused("cannot sign the OAuth assertion: \(error)")), generation: generation, afterRefusal: false)
        }
        let body = Array(OAuthAssertion.formBody(assertion: assertion).utf8)
        let url = account.tokenURI
        let options = self.options
        let exchange = self.exchange
        let started = generation
        let afterRefusal = nextIsAfterRefusal
        let bound = LoopBound(self, loop: loop)
        let thread = Thread {
            let answer = exchange(url, body, options)
            bound.loop.execute {
                let result: Result<(String, Int64), Failure>
                switch answer {
                case .failure(let failure) where failure.isConfiguration:
                    result = .failure(.refused("token endpoint \(url) cannot be used: \(failure)"))
                case .failure(let failure):
                    result = .failure(.unavailable("token endpoint \(url): \(failure)"))
                case .success(let http):
                    switch OAuthTokenAnswer.decode(status: http.status, body: http.body) {
                    case .token(let token, let seconds): result = .success((token, seconds))
                    case .refused(let error, let detail):
                        result = .failure(.refused("token endpoint refused the grant: \(error)\(detail.isEmpty ? "" : " (\(detail))")"))
                    case .unusable(let detail): result = .failure(.unavailable(detail))
                    }
                }
                bound.value.finish(result, generation: started, afterRefusal: afterRefusal)
            }
        }
        thread.name = "herald-oauth"
        thread.start()
    }

    private func finish(_ result: Result<(String, Int64), Failure>, generation started: Int, afterRefusal: Bool) {
        guard started == generation else { return }
        fetching = false
        let outcome: Result<Token, Failure>
        switch result {
        case .success(let (value, seconds)):
            let token = Token(header: "Bearer " + value, afterRefusal: afterRefusal, generation: generation)
            let now = monotonicNanos()
            let lifetime = UInt64(seconds) * 1_000_000_000
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

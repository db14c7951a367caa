import Basics
import Glibc
import PushCore

/// One provider token per credential, shared by every connection: Apple refuses refreshes more often than
/// every 20 minutes (429 TooManyProviderTokenUpdates) and tokens older than 60 (403 ExpiredProviderToken).
/// A lock makes sure concurrent callers never sign twice; callers should keep the string they got for
/// their connection and ask again when sending, which is a lock and a compare. The lock is `LockedValue`
/// (pthread), so ThreadSanitizer sees it.
public final class ProviderTokenCache: Sendable {
    /// Apple's window: no more often than every 20 minutes, no less than every 60.
    public static let minimumRefreshSeconds: Int64 = 1200
    public static let maximumRefreshSeconds: Int64 = 3600

    public let signer: ProviderTokenSigner
    /// Age at which `token()` makes a new token; clamped to 1200...3600 seconds.
    public let refreshAfterSeconds: Int64
    private let clock: @Sendable () -> Int64
    private let state = LockedValue(State())

    private struct State: Sendable {
        var token: String?
        var issuedAt: Int64 = 0
        var stale = false
        var made = 0
    }

    /// - Parameter clock: UNIX seconds; injectable so tests can move time.
    public init(
        keyID: String, teamID: String, key: SigningKey, refreshAfterSeconds: Int64 = 3000,
        clock: @escaping @Sendable () -> Int64 = { Int64(time(nil)) }
    ) throws(CredentialError) {
        signer = try ProviderTokenSigner(keyID: keyID, teamID: teamID, key: key)
        self.refreshAfterSeconds = min(max(refreshAfterSeconds, Self.minimumRefreshSeconds), Self.maximumRefreshSeconds)
        self.clock = clock
    }

    /// The current token, made now if there is none, it is `refreshAfterSeconds` old, or the server said
    /// it expired. A clock that jumps backwards keeps the current token (refreshing then could break the
    /// 20-minute rule).
    public func token() throws(CredentialError) -> String {
        let now = clock()
        return try state.withLock { (s: inout State) throws(CredentialError) -> String in
            if let token = s.token, !s.stale, now - s.issuedAt < refreshAfterSeconds { return token }
            let token = try signer.sign(issuedAt: now)
            s.token = token
            s.issuedAt = now
            s.stale = false
            s.made += 1
            return token
        }
    }

    /// `authorization` header value.
    public var bearer: String {
        get throws(CredentialError) { "bearer " + (try token()) }
    }

    /// Call on 403 ExpiredProviderToken with the token that was refused. Returns true when the next
    /// `token()` gives a different token: either this call marked `token` for replacement (it is at least
    /// 20 minutes old), or it had already been replaced. Returns false when `token` is current and younger
    /// than 20 minutes: replacing it would earn TooManyProviderTokenUpdates (the usual cause is a wrong
    /// clock on this machine).
    @discardableResult
    public func serverSaidExpired(token: String) -> Bool {
        let now = clock()
        return state.withLock { s in
            guard let current = s.token else { return false }
            if current != token || s.stale { return true }
            guard now - s.issuedAt >= Self.minimumRefreshSeconds else { return false }
            s.stale = true
            return true
        }
    }

    /// `iat` of the current token; nil before the first one.
    public var issuedAt: Int64? {
        state.withLock { s in s.token == nil ? nil : s.issuedAt }
    }

    /// How many tokens this cache has signed (metrics, tests).
    public var tokensMade: Int { state.withLock { $0.made } }
}

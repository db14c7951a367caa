import COpenSSL
import Reactor
import Worker

/// Who may use the API (`api.keys`): a presented key is looked up by its SHA-256, the only form the
/// configuration holds, and each key has its own token bucket for `rate_per_second`. With no keys configured
/// every request is served (the listener is on loopback by default). Loop-confined (the buckets).
final class APIAccess {
    typealias Key = Configuration.APISettings.Key

    private let byHash: [String: Key]
    /// Keys already presented, by their text: the SHA-256 is computed once per key, not once per request. Only
    /// keys that matched are kept (an unknown one is hashed every time and never stored), so this holds at most
    /// one entry per configured key: SHA-256 has no second preimages to fill it with.
    private var known: [String: Key] = [:]
    private var buckets: [String: TokenBucket] = [:]

    init(keys: [Key]) {
        var byHash: [String: Key] = [:]
        for key in keys { byHash[key.sha256] = key }
        self.byHash = byHash
        for key in keys where key.ratePerSecond > 0 {
            buckets[key.name] = TokenBucket(rate: Double(key.ratePerSecond), capacity: Double(max(key.burst, key.ratePerSecond)))
        }
    }

    var isOpen: Bool { byHash.isEmpty }

    enum Verdict {
        /// No keys are configured.
        case open
        case key(Key)
        case refused(code: String, message: String)
    }

    /// `Authorization: Bearer <key>`, else `X-API-Key: <key>`.
    func authenticate(_ request: HTTP1Parser.Request) -> Verdict {
        guard !isOpen else { return .open }
        var presented = request.header("x-api-key")
        if let authorization = request.header("authorization"), let key = Self.bearerCredential(authorization) { presented = key }
        guard let presented, !presented.isEmpty else {
            return .refused(code: "unauthenticated", message: "this API needs a key: send Authorization: Bearer <key> (or X-API-Key)")
        }
        if let key = known[presented] { return .key(key) }
        guard let key = byHash[Self.sha256Hex(Array(presented.utf8))] else {
            return .refused(code: "unauthenticated", message: "the API key is not one of api.keys")
        }
        known[presented] = key
        return .key(key)
    }

    /// The credential of `Bearer <key>` (the scheme in any case, the key trimmed), nil for another scheme. Byte by
    /// byte: it runs on every request, where splitting and lower-casing strings cost more than the rest of the check.
    static func bearerCredential(_ authorization: String) -> String? {
        let utf8 = authorization.utf8
        guard utf8.count > 7, let space = utf8.firstIndex(of: 32), utf8.distance(from: utf8.startIndex, to: space) == 6 else { return nil }
        for (byte, expected) in zip(utf8[..<space], "bearer".utf8) where byte | 0x20 != expected { return nil }
        let rest = authorization[space...].dropFirst().trimmingWhitespace()
        return rest.isEmpty ? nil : String(rest)
    }

    /// Takes `jobs` from the key's bucket; nil when they fit, else the whole seconds until they would.
    func take(_ jobs: Int, for key: Key, now: UInt64 = monotonicNanos()) -> Int? {
        guard var bucket = buckets[key.name] else { return nil }
        defer { buckets[key.name] = bucket }
        return bucket.take(Double(jobs), now: now)
    }

    static func sha256Hex(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = bytes.withUnsafeBufferPointer { EVP_Digest($0.baseAddress, $0.count, &digest, &length, EVP_sha256(), nil) }
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in digest { out.append(hex[Int(byte >> 4)]); out.append(hex[Int(byte & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}

/// `rate` tokens a second up to `capacity`, starting full.
struct TokenBucket {
    let rate: Double
    let capacity: Double
    private var tokens: Double
    private var updatedAt: UInt64?

    init(rate: Double, capacity: Double) {
        self.rate = rate
        self.capacity = max(1, capacity)
        tokens = self.capacity
    }

    /// nil when `n` tokens were taken; else the seconds (at least 1) until they would be there, nothing taken.
    /// More than the capacity never fits: the caller is told to wait for a full bucket and send fewer.
    mutating func take(_ n: Double, now: UInt64) -> Int? {
        if let updatedAt, now > updatedAt { tokens = min(capacity, tokens + Double(now - updatedAt) / 1e9 * rate) }
        updatedAt = now
        if n <= tokens {
            tokens -= n
            return nil
        }
        let missing = min(n, capacity) - tokens
        return max(1, Int((missing / rate).rounded(.up)))
    }
}

import COpenSSL
import HTTP1
import Reactor
import Worker

/// Who may use the API (`api.keys`): a presented key is looked up by its SHA-256, the only form the
/// configuration holds, and each key has its own token bucket for `rate_per_second`. With no keys configured
/// every request is served (the listener is on loopback by default). Loop-confined (the buckets).
final class APIAccess {
    typealias Key = Configuration.APISettings.Key

    private let byHash: [String: Key]
    /// Keys already presented, with their bytes: the SHA-256 is computed once per key, not once per request. Only
    /// keys that matched are kept (an unknown one is hashed every time and never stored), so this holds at most
    /// one entry per configured key: SHA-256 has no second preimages to fill it with. Compared in constant time.
    private var known: [KnownKey] = []

    private struct KnownKey {
        let credential: [UInt8]
        let key: Key
    }
    private var buckets: [String: TokenBucket] = [:]
    /// Each key's tenant id (`tenantID(sha256:)`), by its configured hash: made once, read on every job.
    private let tenants: [String: String]

    init(keys: [Key]) {
        var byHash: [String: Key] = [:]
        for key in keys { byHash[key.sha256] = key }
        self.byHash = byHash
        tenants = Dictionary(keys.map { ($0.sha256, Self.tenantID(sha256: $0.sha256)) }, uniquingKeysWith: { a, _ in a })
        for key in keys where key.ratePerSecond > 0 {
            buckets[key.name] = TokenBucket(rate: Double(key.ratePerSecond), capacity: Double(max(key.burst, key.ratePerSecond)))
        }
    }

    var isOpen: Bool { byHash.isEmpty }

    /// The tenant id of `key`: what its jobs' ids are scoped by (`<tenant>/<producer id>`, docs/api.md, "Tenancy").
    func tenant(of key: Key) -> String { tenants[key.sha256] ?? Self.tenantID(sha256: key.sha256) }

    /// Every configured key's tenant id.
    var tenantIDs: Set<String> { Set(tenants.values) }

    /// A key's tenant id: the first 16 hex digits of the SHA-256 of its configured hash (with a label), so that it is
    /// stable for as long as the key is, names neither the secret nor the hash that verifies it (results streams and
    /// Redis keys carry it), and is the same on every API process. 16 hex digits: never `/`, and fixed in length.
    static func tenantID(sha256: String) -> String {
        String(sha256Hex(Array(("herald api tenant\n" + sha256.lowercased()).utf8)).prefix(tenantIDLength))
    }

    static let tenantIDLength = 16

    enum Verdict {
        /// No keys are configured.
        case open
        case key(Key)
        case refused(code: String, message: String)
    }

    /// `Authorization: Bearer <key>`, else `X-API-Key: <key>`. Over the fields' bytes: it runs on every request.
    func authenticate(_ request: HTTP1Parser.Request) -> Verdict {
        guard !isOpen else { return .open }
        return request.withValue(of: "authorization") { authorization in
            if let authorization, let credential = Self.bearerCredential(authorization) { return verdict(presented: credential) }
            return request.withValue(of: "x-api-key") { verdict(presented: $0 ?? UnsafeBufferPointer(start: nil, count: 0)) }
        }
    }

    private func verdict(presented: UnsafeBufferPointer<UInt8>) -> Verdict {
        guard !presented.isEmpty else {
            return .refused(code: "unauthenticated", message: "this API needs a key: send Authorization: Bearer <key> (or X-API-Key)")
        }
        if let key = knownKey(presented) { return .key(key) }
        guard let key = byHash[Self.sha256Hex(Array(presented))] else {
            return .refused(code: "unauthenticated", message: "the API key is not one of api.keys")
        }
        known.append(KnownKey(credential: Array(presented), key: key))
        return .key(key)
    }

    /// The key whose bytes `presented` are, looked at in constant time for a given length: every known key of that
    /// length is compared whole, so how long an answer takes tells nothing about how much of a key matched.
    private func knownKey(_ presented: UnsafeBufferPointer<UInt8>) -> Key? {
        var found = -1
        for k in known.indices where known[k].credential.count == presented.count {
            let difference = known[k].credential.withUnsafeBufferPointer { credential in
                var difference: UInt8 = 0
                for i in 0..<presented.count { difference |= credential[i] ^ presented[i] }
                return difference
            }
            if difference == 0 { found = k }
        }
        return found < 0 ? nil : known[found].key
    }

    /// The credential of `Bearer <key>` (the scheme in any case, the key trimmed of spaces and tabs), nil for another
    /// scheme.
    static func bearerCredential(_ authorization: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
        guard authorization.count > 7, authorization[6] == 32 else { return nil }
        let scheme: StaticString = "bearer"
        for i in 0..<6 where authorization[i] | 0x20 != scheme.utf8Start[i] { return nil }
        var start = 7, end = authorization.count
        while start < end, authorization[start] == 32 || authorization[start] == 9 { start += 1 }
        while end > start, authorization[end - 1] == 32 || authorization[end - 1] == 9 { end -= 1 }
        return start == end ? nil : UnsafeBufferPointer(rebasing: authorization[start..<end])
    }

    static func bearerCredential(_ authorization: String) -> String? {
        var text = authorization
        return text.withUTF8 { bearerCredential($0).map { String(decoding: $0, as: UTF8.self) } }
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

import Glibc

/// Which push services a job may make Herald call. Endpoints come from browsers, so from anyone: without this a
/// job could make the worker request any URL (an open proxy into the network it runs in). An endpoint must be
/// https on an allowed host; an IP literal, and any private or loopback address a name resolves to, is refused
/// unless a test configuration allows it.
public struct PushServicePolicy: Sendable, Equatable {
    /// Host names, or `*.suffix` for every name under it (not the suffix itself).
    public var hosts: [String]
    /// Test setting: IP literals are allowed as hosts.
    public var allowsIPLiterals: Bool
    /// Test setting: loopback, private, link-local and other non-public addresses are allowed.
    public var allowsPrivateAddresses: Bool

    /// The vendors' documented push-service hosts: Google's (Chrome, Edge on Android...), Mozilla's (Firefox),
    /// Apple's (Safari; Apple documents `*.push.apple.com`) and Microsoft's WNS (Edge on Windows).
    public static let defaultHosts = [
        "fcm.googleapis.com", "updates.push.services.mozilla.com", "*.push.apple.com", "*.notify.windows.com",
    ]

    public init(hosts: [String] = PushServicePolicy.defaultHosts, allowsIPLiterals: Bool = false, allowsPrivateAddresses: Bool = false) {
        self.hosts = hosts.map { $0.lowercased() }
        self.allowsIPLiterals = allowsIPLiterals
        self.allowsPrivateAddresses = allowsPrivateAddresses
    }

    /// What in the policy runs but weakens it (issue 51): a test switch that turns the SSRF protection off, an entry
    /// that matches nothing (a `*` anywhere but a leading `*.`) or every name under a top-level domain (`*.com`).
    /// Each after `label`, naming the setting.
    public func warnings(label: String) -> [String] {
        var out: [String] = []
        if allowsIPLiterals {
            out.append("\(label): webpush.allow_ip_literals is on: subscriptions may name IP addresses (SSRF protection off; for tests against a local simulator only)")
        }
        if allowsPrivateAddresses {
            out.append("\(label): webpush.allow_private_addresses is on: push services may resolve to loopback and private addresses (SSRF protection off; for tests against a local simulator only)")
        }
        for host in hosts {
            let wildcard = host.hasPrefix("*.")
            let rest = wildcard ? host.dropFirst(2) : Substring(host)
            if rest.contains("*") || rest.isEmpty {
                out.append("\(label): webpush.push_service_hosts entry \(host.debugDescription) matches nothing (a * stands only as a leading *.)")
            } else if wildcard && !rest.contains(".") {
                out.append("\(label): webpush.push_service_hosts entry \(host.debugDescription) allows every host under a top-level domain")
            }
        }
        return out
    }

    /// Whether a job may send to `endpoint` (the parser already made it https with a clean host).
    public func check(_ endpoint: PushEndpoint) throws(PolicyError) {
        if endpoint.isIPLiteral {
            guard allowsIPLiterals else { throw .ipLiteral(endpoint.host) }
            guard let address = Self.addressBytes(endpoint.host) else { throw .ipLiteral(endpoint.host) }
            try check(resolved: address, host: endpoint.host)
        }
        guard Self.matches(endpoint.host, hosts) else { throw .hostNotAllowed(endpoint.host) }
    }

    /// Whether an address the endpoint's host resolved to may be connected to (the sender checks each one).
    public func check(resolved address: [UInt8], host: String) throws(PolicyError) {
        if !allowsPrivateAddresses && Self.isNonPublic(address) { throw .privateAddress(host: host) }
    }

    static func matches(_ host: String, _ patterns: [String]) -> Bool {
        patterns.contains { pattern in
            if pattern.hasPrefix("*.") { return host.hasSuffix(pattern.dropFirst()) && host.utf8.count > pattern.utf8.count - 1 }
            return host == pattern
        }
    }

    /// An IPv4 (4 bytes) or IPv6 (16 bytes) literal as bytes, by inet_pton (nil for anything else).
    public static func addressBytes(_ text: String) -> [UInt8]? {
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, text, &v4) == 1 { return v4 }
        var v6 = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET6, text, &v6) == 1 { return v6 }
        // "127.1", "0x7f.1": forms inet_aton reads as addresses; never a public push service.
        var loose = in_addr()
        if inet_aton(text, &loose) == 1 { return withUnsafeBytes(of: loose.s_addr) { Array($0) } }
        return nil
    }

    /// Loopback, private (RFC 1918, RFC 4193), link-local, shared (RFC 6598), unspecified, multicast, reserved,
    /// and IPv4-mapped or -compatible IPv6 forms of those.
    public static func isNonPublic(_ a: [UInt8]) -> Bool {
        if a.count == 4 {
            switch (a[0], a[1]) {
            case (0, _), (10, _), (127, _): return true
            case (100, 64...127): return true
            case (169, 254): return true
            case (172, 16...31): return true
            case (192, 168): return true
            case (192, 0) where a[2] == 0 || a[2] == 2: return true
            case (198, 18...19): return true
            case (198, 51) where a[2] == 100, (203, 0) where a[2] == 113: return true
            default: return a[0] >= 224
            }
        }
        guard a.count == 16 else { return true }
        if a[0..<10].allSatisfy({ $0 == 0 }) && ((a[10] == 0xFF && a[11] == 0xFF) || (a[10] == 0 && a[11] == 0)) {
            let v4 = Array(a[12..<16])
            // :: and ::1 are the unspecified and loopback addresses; ::a.b.c.d and ::ffff:a.b.c.d carry IPv4.
            return a[10] == 0 && v4[0] == 0 ? true : isNonPublic(v4)
        }
        if a[0] & 0xFE == 0xFC { return true }  // fc00::/7 unique local
        if a[0] == 0xFE && a[1] & 0xC0 == 0x80 { return true }  // fe80::/10 link-local
        if a[0] == 0xFF { return true }  // multicast
        if a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0D && a[3] == 0xB8 { return true }  // 2001:db8::/32 documentation
        if a[0] == 0x00 && a[1] == 0x64 && a[2] == 0xFF && a[3] == 0x9B { return isNonPublic(Array(a[12..<16])) }  // NAT64
        return false
    }
}

public enum PolicyError: Error, Equatable, Sendable, CustomStringConvertible {
    case hostNotAllowed(String)
    case ipLiteral(String)
    case privateAddress(host: String)

    public var description: String {
        switch self {
        case .hostNotAllowed(let h): return "push service \(h) is not on the app's allow-list of push-service hosts"
        case .ipLiteral(let h): return "push service \(h) is an IP address; endpoints name their push service's host"
        case .privateAddress(let h): return "push service \(h) is a loopback or private address"
        }
    }
}

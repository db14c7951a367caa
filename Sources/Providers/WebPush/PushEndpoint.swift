/// A subscription's endpoint: an https URL on a push service (RFC 8030 section 5). Its origin is VAPID's
/// `aud` and the key of the sender's pool; `path` (with any query) is what the request asks for.
public struct PushEndpoint: Sendable, Hashable {
    /// The whole URL as the browser gave it.
    public let url: String
    /// The host, lowercased; an IPv6 literal without its brackets.
    public let host: String
    public let port: Int
    /// The path and query, at least "/".
    public let path: String
    /// The host is an IP address (v4 or v6), not a name.
    public let isIPLiteral: Bool

    public static let maxLength = 2048

    public init(_ url: String) throws(SubscriptionError) {
        guard url.utf8.count <= Self.maxLength else { throw .badEndpoint("is longer than \(Self.maxLength) bytes") }
        let bytes = Array(url.utf8)
        let scheme = Array("https://".utf8)
        guard bytes.count > scheme.count,
              zip(bytes.prefix(scheme.count), scheme).allSatisfy({ lowercased($0) == $1 })
        else { throw .badEndpoint("is not an https URL") }
        if bytes.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) {
            throw .badEndpoint("has a space, a control character or a non-ASCII byte")
        }
        let rest = bytes[scheme.count...]
        let authorityEnd = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? rest.endIndex
        let authority = rest[rest.startIndex..<authorityEnd]
        guard !authority.contains(UInt8(ascii: "@")) else { throw .badEndpoint("carries user information") }
        guard !rest[authorityEnd...].contains(UInt8(ascii: "#")) else { throw .badEndpoint("has a fragment") }
        var hostBytes: ArraySlice<UInt8>
        var portBytes: ArraySlice<UInt8> = []
        var bracketed = false
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { throw .badEndpoint("has an unclosed IPv6 literal") }
            hostBytes = authority[(authority.startIndex + 1)..<close]
            bracketed = true
            let after = authority[(close + 1)...]
            if let colon = after.first {
                guard colon == UInt8(ascii: ":") else { throw .badEndpoint("has bytes after its IPv6 literal") }
                portBytes = after.dropFirst()
            }
        } else if let colon = authority.firstIndex(of: UInt8(ascii: ":")) {
            hostBytes = authority[authority.startIndex..<colon]
            portBytes = authority[(colon + 1)...]
        } else {
            hostBytes = authority
        }
        guard !hostBytes.isEmpty else { throw .badEndpoint("has no host") }
        var port = 443
        if !portBytes.isEmpty {
            guard portBytes.count <= 5, portBytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let value = Int(String(decoding: portBytes, as: UTF8.self)), value >= 1, value <= 65535
            else { throw .badEndpoint("has a bad port") }
            port = value
        }
        let hostText = String(decoding: hostBytes.map(lowercased), as: UTF8.self)
        if bracketed {
            guard hostBytes.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else {
                throw .badEndpoint("has a bad IPv6 literal")
            }
        } else {
            guard hostBytes.allSatisfy({ isHostNameByte($0) }), hostBytes.first != UInt8(ascii: "."),
                  hostBytes.first != UInt8(ascii: "-")
            else { throw .badEndpoint("has a bad host name") }
        }
        self.url = url
        self.host = hostText
        self.port = port
        let pathBytes = rest[authorityEnd...]
        self.path = pathBytes.first == UInt8(ascii: "/") ? String(decoding: pathBytes, as: UTF8.self)
                                                          : "/" + String(decoding: pathBytes, as: UTF8.self)
        self.isIPLiteral = bracketed || Self.isDottedQuad(hostText)
    }

    /// `https://host[:port]`: VAPID's audience (RFC 8292 section 2) and the pool's key.
    public var origin: String {
        let shownHost = host.contains(":") ? "[" + host + "]" : host
        return port == 443 ? "https://" + shownHost : "https://" + shownHost + ":" + String(port)
    }

    /// Four decimal parts, or any name that is all digits and dots (resolvers read "127.1" as an address too).
    static func isDottedQuad(_ host: String) -> Bool {
        host.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: ".") }
            || (host.hasPrefix("0x") && host.utf8.allSatisfy { isHexDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "x") })
    }
}

@inline(__always) private func lowercased(_ b: UInt8) -> UInt8 {
    b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z") ? b + 32 : b
}

@inline(__always) private func isHexDigit(_ b: UInt8) -> Bool {
    (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66)
}

@inline(__always) private func isHostNameByte(_ b: UInt8) -> Bool {
    (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == UInt8(ascii: "-")
        || b == UInt8(ascii: ".")
}

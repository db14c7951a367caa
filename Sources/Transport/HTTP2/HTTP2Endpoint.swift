/// Re-exported so HTTP/2 callers keep naming `TLSConfiguration` and `TLSContext` with `import HTTP2` alone.
@_exported import TLS

/// Where to connect: the origin server and, optionally, an HTTP CONNECT proxy in front of it.
public struct HTTP2Endpoint: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// `http://host:port` of a CONNECT proxy, as corporate networks need; nil connects directly.
    public var proxy: String?

    public init(host: String, port: Int = 443, proxy: String? = nil) {
        self.host = host
        self.port = port
        self.proxy = proxy
    }

    /// `host:port` with IPv6 literals bracketed, as `:authority` and CONNECT want it.
    public var authority: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    public var description: String { proxy.map { "\(authority) via \($0)" } ?? authority }

    /// Throws `.connectFailed` for a proxy URL that is not `http://host:port`; connections would fail the same way.
    public func validate() throws(HTTP2ClientError) { _ = try proxyHostPort() }

    /// The proxy's host and port, or nil when there is none. Throws on a malformed proxy URL.
    func proxyHostPort() throws(HTTP2ClientError) -> (host: String, port: Int)? {
        guard var text = proxy, !text.isEmpty else { return nil }
        if text.hasPrefix("http://") { text.removeFirst(7) } else if text.contains("://") {
            throw .connectFailed("proxy \(text): only http:// CONNECT proxies are supported")
        }
        while text.hasSuffix("/") { text.removeLast() }
        var host = text
        var port = 8080
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if rest.hasPrefix(":") { guard let p = Int(rest.dropFirst()) else { throw .connectFailed("proxy \(text): bad port") }; port = p }
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            guard let p = Int(text[text.index(after: colon)...]) else { throw .connectFailed("proxy \(text): bad port") }
            port = p
        }
        guard !host.isEmpty, (1...65535).contains(port) else { throw .connectFailed("proxy \(text): bad host or port") }
        return (host, port)
    }
}

extension TLSContext {
    /// The APNs/FCM context: offers ALPN `h2` only; unreadable files and bad keys throw `.tlsFailed`.
    public convenience init(_ configuration: TLSConfiguration) throws(HTTP2ClientError) {
        do { try self.init(configuration, alpn: ["h2"]) } catch { throw .tlsFailed(error.message) }
    }
}

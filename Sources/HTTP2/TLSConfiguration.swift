/// How a client proves who it talks to (and, optionally, who it is). One `SSL_CTX` is built from it per pool.
public struct TLSConfiguration: Hashable, Sendable {
    /// An extra PEM CA bundle trusted in addition to (or, with `useSystemTrustStore == false`, instead of) the system store.
    public var caFile: String?
    public var useSystemTrustStore: Bool
    /// Off only for diagnostics: without it anyone on the path can read the pushes.
    public var verifyPeer: Bool
    /// Client certificate and key (PEM), for certificate-authenticated apps.
    public var clientCertificateFile: String?
    public var clientKeyFile: String?
    /// Client certificate, key and chain as PKCS#12, as Apple's portal exports them.
    public var pkcs12File: String?
    public var pkcs12Password: String?
    /// Name sent as SNI and checked against the certificate; defaults to the endpoint's host.
    public var serverName: String?

    public init(
        caFile: String? = nil, useSystemTrustStore: Bool = true, verifyPeer: Bool = true,
        clientCertificateFile: String? = nil, clientKeyFile: String? = nil,
        pkcs12File: String? = nil, pkcs12Password: String? = nil, serverName: String? = nil
    ) {
        self.caFile = caFile
        self.useSystemTrustStore = useSystemTrustStore
        self.verifyPeer = verifyPeer
        self.clientCertificateFile = clientCertificateFile
        self.clientKeyFile = clientKeyFile
        self.pkcs12File = pkcs12File
        self.pkcs12Password = pkcs12Password
        self.serverName = serverName
    }
}

extension TLSConfiguration: CustomStringConvertible {
    /// Never prints the PKCS#12 password: configurations end up in logs.
    public var description: String {
        var parts = ["verifyPeer: \(verifyPeer)", "systemTrust: \(useSystemTrustStore)"]
        if let caFile { parts.append("caFile: \(caFile)") }
        if let clientCertificateFile { parts.append("clientCertificate: \(clientCertificateFile)") }
        if let pkcs12File { parts.append("pkcs12: \(pkcs12File) (password \(pkcs12Password == nil ? "none" : "redacted"))") }
        if let serverName { parts.append("serverName: \(serverName)") }
        return "TLSConfiguration(\(parts.joined(separator: ", ")))"
    }
}

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

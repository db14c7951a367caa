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

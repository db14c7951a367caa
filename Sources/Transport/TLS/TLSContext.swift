import COpenSSL

/// Why a TLS context could not be built or a TLS session failed, in words an operator can act on.
public struct TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Owns one client `SSL_CTX` built from a `TLSConfiguration`: trust store, TLS 1.2 minimum, the ALPN protocols
/// the caller speaks (`h2` for APNs/FCM, none for Redis, which must not be offered h2) and the optional client certificate. Freed in `deinit`.
/// The connections it spawns are loop-confined.
/// @unchecked: immutable after `init`, and OpenSSL allows one `SSL_CTX` to back `SSL` objects on any thread.
public final class TLSContext: @unchecked Sendable {
    public let context: OpaquePointer
    public let configuration: TLSConfiguration

    public let alpn: [String]

    /// `alpn` is offered in order; empty offers none. `systemTrust` is where the system's roots come from when
    /// `configuration.useSystemTrustStore` (tests pass a directory of their own).
    public init(_ configuration: TLSConfiguration, alpn: [String], systemTrust: SystemTrustStore = .current) throws(TLSError) {
        self.alpn = alpn
        self.configuration = configuration
        ERR_clear_error()
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw TLSError("SSL_CTX_new: \(openSSLErrors())") }
        context = ctx
        _ = copenssl_set_min_proto_version(ctx, TLS1_2_VERSION)
        _ = copenssl_ctx_set_mode(ctx, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS))
        if configuration.verifyPeer {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        } else {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
        }
        if configuration.useSystemTrustStore { try systemTrust.load(into: ctx) }
        if let caFile = configuration.caFile, SSL_CTX_load_verify_locations(ctx, caFile, nil) != 1 {
            throw TLSError("CA file \(caFile): \(openSSLErrors())")
        }
        if !alpn.isEmpty {
            let wire = alpn.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
            guard SSL_CTX_set_alpn_protos(ctx, wire, UInt32(wire.count)) == 0 else { throw TLSError("ALPN: \(openSSLErrors())") }
        }
        if let certFile = configuration.clientCertificateFile {
            guard SSL_CTX_use_certificate_chain_file(ctx, certFile) == 1 else {
                throw TLSError("client certificate \(certFile): \(openSSLErrors())")
            }
            let keyFile = configuration.clientKeyFile ?? certFile
            guard SSL_CTX_use_PrivateKey_file(ctx, keyFile, SSL_FILETYPE_PEM) == 1 else {
                throw TLSError("client key \(keyFile): \(openSSLErrors())")
            }
            guard SSL_CTX_check_private_key(ctx) == 1 else { throw TLSError("client key does not match certificate: \(openSSLErrors())") }
        }
        if let p12File = configuration.pkcs12File { try loadPKCS12(p12File, password: configuration.pkcs12Password) }
        if let held = configuration.pkcs12File ?? configuration.clientCertificateFile, let leaf = SSL_CTX_get0_certificate(ctx) {
            CertificateExpiry.shared.record(.held, name: held, certificate: leaf)
        }
    }

    private func loadPKCS12(_ path: String, password: String?) throws(TLSError) {
        guard let bio = BIO_new_file(path, "rb") else { throw TLSError("PKCS#12 \(path): \(openSSLErrors())") }
        defer { BIO_free(bio) }
        guard let p12 = d2i_PKCS12_bio(bio, nil) else { throw TLSError("PKCS#12 \(path): not PKCS#12: \(openSSLErrors())") }
        defer { PKCS12_free(p12) }
        var key: OpaquePointer?
        var cert: OpaquePointer?
        var chain: OpaquePointer?
        guard PKCS12_parse(p12, password ?? "", &key, &cert, &chain) == 1, let key, let cert else {
            throw TLSError("PKCS#12 \(path): wrong password or unreadable: \(openSSLErrors())")
        }
        defer {
            EVP_PKEY_free(key)
            X509_free(cert)
            if let chain { copenssl_stack_x509_free(chain) }
        }
        guard SSL_CTX_use_certificate(context, cert) == 1, SSL_CTX_use_PrivateKey(context, key) == 1,
              SSL_CTX_check_private_key(context) == 1 else {
            throw TLSError("PKCS#12 \(path): \(openSSLErrors())")
        }
        if let chain {
            for index in 0..<copenssl_stack_x509_num(chain) {
                guard let extra = copenssl_stack_x509_value(chain, index) else { continue }
                X509_up_ref(extra)  // the context takes ownership of what it is given
                if copenssl_ctx_add_extra_chain_cert(context, extra) != 1 { X509_free(extra) }
            }
        }
    }

    deinit { SSL_CTX_free(context) }
}

/// OpenSSL's queued errors as one line (see `copenssl_drain_errors`).
public func openSSLErrors() -> String {
    var buffer = [CChar](repeating: 0, count: 1024)
    let count = copenssl_drain_errors(&buffer, buffer.count)
    return count == 0 ? noErrorDetail : String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

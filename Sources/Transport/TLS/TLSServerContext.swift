import COpenSSL

/// A server-side `SSL_CTX` for Herald's own listeners (`herald api`): the certificate chain and its key, TLS 1.2+,
/// partial writes, and with a client CA every client must present a certificate it signed (mutual TLS).
/// @unchecked: immutable after `init`, and OpenSSL allows one `SSL_CTX` to back `SSL` objects on any thread.
public final class TLSServerContext: @unchecked Sendable {
    public let context: OpaquePointer

    public init(certificateFile: String, keyFile: String, clientCAFile: String? = nil) throws(TLSError) {
        ERR_clear_error()
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw TLSError("SSL_CTX_new: \(openSSLErrors())") }
        context = ctx
        _ = copenssl_set_min_proto_version(ctx, TLS1_2_VERSION)
        _ = copenssl_ctx_set_mode(ctx, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS))
        guard SSL_CTX_use_certificate_chain_file(ctx, certificateFile) == 1 else { throw TLSError("certificate \(certificateFile): \(openSSLErrors())") }
        guard SSL_CTX_use_PrivateKey_file(ctx, keyFile, SSL_FILETYPE_PEM) == 1 else { throw TLSError("private key \(keyFile): \(openSSLErrors())") }
        guard SSL_CTX_check_private_key(ctx) == 1 else { throw TLSError("key \(keyFile) does not match certificate \(certificateFile): \(openSSLErrors())") }
        if let clientCAFile {
            guard SSL_CTX_load_verify_locations(ctx, clientCAFile, nil) == 1 else { throw TLSError("client CA file \(clientCAFile): \(openSSLErrors())") }
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        }
    }

    /// ALPN picks `h2` when the client offers it, else `http/1.1` (`selectH2OrHTTP1`).
    public func chooseH2OrHTTP1() {
        SSL_CTX_set_alpn_select_cb(context, selectH2OrHTTP1, nil)
    }

    deinit { SSL_CTX_free(context) }
}

import COpenSSL
import Glibc
import Reactor

/// One client `SSL*` on a non-blocking socket, with SNI and host-name (or IP) verification set for `serverName`.
/// Freed in `deinit`; freeing it leaves the socket open (the socket BIO does not own the fd, its owner closes it).
/// Used on one thread at a time (the connection's loop, or the blocking client's caller).
public final class SSLHandle {
    public let pointer: OpaquePointer
    /// The handshake finished and no fatal error followed: only then does `shutdown()` send a close_notify
    /// (OpenSSL forbids `SSL_shutdown` after `SSL_ERROR_SSL`/`SSL_ERROR_SYSCALL`).
    public private(set) var established = false

    public init(context: TLSContext, fd: Int32, serverName: String) throws(TLSError) {
        ignoreBrokenPipesOnce()  // OpenSSL writes with write(2): a reset peer must give EPIPE, not SIGPIPE
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else { throw TLSError("SSL_new: \(openSSLErrors())") }
        pointer = ssl
        SSL_set_fd(ssl, fd)
        SSL_set_connect_state(ssl)
        let verify = context.configuration.verifyPeer
        if Self.isIPAddress(serverName) {
            if verify { X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName) }
        } else {
            _ = copenssl_set_tlsext_host_name(ssl, serverName)
            if verify { SSL_set1_host(ssl, serverName) }
        }
    }

    deinit { SSL_free(pointer) }

    /// Where a non-blocking handshake stands: finished, or waiting for the socket to turn readable or writable.
    public enum HandshakeStep: Equatable, Sendable {
        case done
        case wantRead
        case wantWrite
    }

    /// One `SSL_do_handshake` step. Throws a `TLSError` that says why (certificate, not TLS, closed).
    public func handshake() throws(TLSError) -> HandshakeStep {
        ERR_clear_error()
        let rc = SSL_do_handshake(pointer)
        if rc == 1 {
            established = true
            return .done
        }
        switch SSL_get_error(pointer, rc) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        default:
            established = false
            throw TLSError(handshakeFailure())
        }
    }

    /// Decrypted bytes into `buffer`. WANT_READ/WANT_WRITE (a TLS 1.3 key update) read as `.wouldBlock`; a peer
    /// that closes, with or without close_notify, as `.endOfFile`.
    public func read(into buffer: UnsafeMutableRawPointer, count: Int) throws(TLSError) -> IOProgress {
        ERR_clear_error()
        let n = SSL_read(pointer, buffer, Int32(min(count, 1 << 30)))
        if n > 0 { return .bytes(Int(n)) }
        switch SSL_get_error(pointer, n) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wouldBlock
        case SSL_ERROR_ZERO_RETURN: return .endOfFile
        default:
            established = false
            let detail = openSSLErrors()
            if detail == noErrorDetail || detail.contains("unexpected eof") { return .endOfFile }
            throw TLSError(Self.refusal(detail))
        }
    }

    /// Encrypts and sends from `buffer`. After `.wouldBlock` the caller retries with the same bytes (or more:
    /// the context accepts a moving, growing write buffer).
    public func write(from buffer: UnsafeRawPointer, count: Int) throws(TLSError) -> IOProgress {
        guard count > 0 else { return .bytes(0) }
        ERR_clear_error()
        let n = SSL_write(pointer, buffer, Int32(min(count, 1 << 30)))
        if n > 0 { return .bytes(Int(n)) }
        switch SSL_get_error(pointer, n) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wouldBlock
        default:
            established = false
            let detail = openSSLErrors()
            throw TLSError(detail == noErrorDetail ? "TLS write failed: \(String(cString: strerror(errno)))" : Self.refusal(detail))
        }
    }

    /// Sends a close_notify (once, and only after a finished handshake) so the peer sees a clean close.
    public func shutdown() {
        guard established else { return }
        established = false
        ERR_clear_error()
        _ = SSL_shutdown(pointer)
        ERR_clear_error()
    }

    /// A failed handshake in words: the certificate check and its reason, a peer that does not speak TLS, a close.
    func handshakeFailure() -> String {
        let savedErrno = errno
        let detail = openSSLErrors()
        let verify = SSL_get_verify_result(pointer)
        if verify != X509_V_OK {
            return "certificate verification failed: \(String(cString: X509_verify_cert_error_string(verify))) (\(detail))"
        }
        if detail.contains("wrong version number") || detail.contains("packet length too long") || detail.contains("record layer failure") {
            return "the server does not speak TLS on this port (a plain-TCP port?): \(detail)"
        }
        if detail == noErrorDetail {
            return "handshake failed: connection closed (\(String(cString: strerror(savedErrno))))"
        }
        return Self.refusal(detail)
    }

    /// A server's alert in words; TLS 1.3 servers refuse a missing client certificate only after the handshake.
    static func refusal(_ detail: String) -> String {
        if detail.contains("certificate required") || detail.contains("peer did not return a certificate") {
            return "the server requires a client certificate (none or an unaccepted one was sent): \(detail)"
        }
        if detail.contains("unknown ca") || detail.contains("bad certificate") || detail.contains("certificate unknown") {
            return "the server refused the client certificate: \(detail)"
        }
        return detail
    }

    /// Host names never contain a colon and IPv6 literals always do; IPv4 is four dotted bytes.
    public static func isIPAddress(_ text: String) -> Bool {
        if text.contains(":") { return true }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in UInt8(part) != nil }
    }
}

/// What `openSSLErrors()` says when OpenSSL queued nothing.
public let noErrorDetail = "no OpenSSL error detail"

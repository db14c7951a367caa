import COpenSSL
import Glibc
import Reactor

/// One `SSL*` on a non-blocking socket: the one TLS record path (handshake, read, write, close_notify) and the
/// one reading of OpenSSL's errors for every TLS user: the HTTP/2 client, Redis, and (server side) the simulators.
/// A client checks `serverName` (SNI and host-name or IP verification). Freed in `deinit`; freeing it leaves the
/// socket open (the socket BIO does not own the fd, its owner closes it). Used on one thread at a time (the
/// connection's loop, or the blocking client's caller).
public final class SSLHandle {
    public let pointer: OpaquePointer
    /// The handshake finished and no fatal error followed: only then does `shutdown()` send a close_notify
    /// (OpenSSL forbids `SSL_shutdown` after `SSL_ERROR_SSL`/`SSL_ERROR_SYSCALL`).
    public private(set) var established = false
    /// The last step returned `.wouldBlock` (or `.wantWrite`) because TLS must write first (a key update, a
    /// handshake message): wait for writability, not readability, before the next step.
    public private(set) var wantsWritable = false
    /// The host a client asked for (nil on the server side): its certificate's expiry is recorded by it.
    private let serverName: String?

    public init(context: TLSContext, fd: Int32, serverName: String) throws(TLSError) {
        ignoreBrokenPipesOnce()  // OpenSSL writes with write(2): a reset peer must give EPIPE, not SIGPIPE
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else { throw TLSError("SSL_new: \(openSSLErrors())") }
        pointer = ssl
        self.serverName = serverName
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

    /// The server side of an accepted socket, under the caller's server `SSL_CTX` (certificate, ALPN choice),
    /// which must outlive this handle.
    public init(accepting fd: Int32, serverContext: OpaquePointer) throws(TLSError) {
        ignoreBrokenPipesOnce()
        ERR_clear_error()
        guard let ssl = SSL_new(serverContext) else { throw TLSError("SSL_new: \(openSSLErrors())") }
        pointer = ssl
        serverName = nil
        SSL_set_fd(ssl, fd)
        SSL_set_accept_state(ssl)
    }

    deinit { SSL_free(pointer) }

    /// The protocol ALPN agreed on ("h2"), or "" when none was.
    public var alpnSelected: String {
        var name: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(pointer, &name, &length)
        guard let name, length > 0 else { return "" }
        return String(decoding: UnsafeBufferPointer(start: name, count: Int(length)), as: UTF8.self)
    }

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
            if let serverName, let leaf = SSL_get0_peer_certificate(pointer) {
                CertificateExpiry.shared.record(.peer, name: serverName, certificate: leaf)
            }
            return .done
        }
        guard waits(SSL_get_error(pointer, rc)) else {
            established = false
            throw TLSError(handshakeFailure())
        }
        return wantsWritable ? .wantWrite : .wantRead
    }

    /// WANT_READ or WANT_WRITE: the step waits for the socket, and `wantsWritable` says which way.
    private func waits(_ error: Int32) -> Bool {
        guard error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE else { return false }
        wantsWritable = error == SSL_ERROR_WANT_WRITE
        return true
    }

    /// Decrypted bytes into `buffer`, record after record until it is full or the socket has nothing more, so
    /// nothing decrypted waits inside OpenSSL while epoll reports the socket idle: fewer bytes than `count`
    /// means the next call would block (or find the end). WANT_READ/WANT_WRITE (a TLS 1.3 key update) read as
    /// `.wouldBlock` (see `wantsWritable`); a peer that closes, with or without close_notify, as `.endOfFile`.
    /// A close or failure after some bytes is met by the next call.
    public func read(into buffer: UnsafeMutableRawPointer, count: Int) throws(TLSError) -> IOProgress {
        var total = 0
        while total < count {
            ERR_clear_error()
            let n = SSL_read(pointer, buffer + total, Int32(min(count - total, 1 << 30)))
            if n > 0 {
                total += Int(n)
                continue
            }
            if total > 0 {
                wantsWritable = SSL_get_error(pointer, n) == SSL_ERROR_WANT_WRITE
                return .bytes(total)
            }
            let error = SSL_get_error(pointer, n)
            if waits(error) { return .wouldBlock }
            if error == SSL_ERROR_ZERO_RETURN { return .endOfFile }
            established = false
            let detail = openSSLErrors()
            if detail == noErrorDetail || detail.contains("unexpected eof") { return .endOfFile }
            throw TLSError(Self.refusal(detail))
        }
        return .bytes(total)
    }

    /// Encrypts and sends from `buffer`. After `.wouldBlock` the caller retries with the same bytes (or more:
    /// the context accepts a moving, growing write buffer).
    public func write(from buffer: UnsafeRawPointer, count: Int) throws(TLSError) -> IOProgress {
        guard count > 0 else { return .bytes(0) }
        ERR_clear_error()
        let n = SSL_write(pointer, buffer, Int32(min(count, 1 << 30)))
        if n > 0 { return .bytes(Int(n)) }
        let savedErrno = errno
        if waits(SSL_get_error(pointer, n)) { return .wouldBlock }
        established = false
        let detail = openSSLErrors()
        if detail != noErrorDetail { throw TLSError(Self.refusal(detail)) }
        // No OpenSSL reason and no errno: TLS had already met the peer's close (strerror(0) would say "Success").
        throw TLSError(savedErrno == 0 ? "the connection is closed" : String(cString: strerror(savedErrno)))
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

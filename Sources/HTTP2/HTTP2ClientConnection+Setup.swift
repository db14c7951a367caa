import CNghttp2
import COpenSSL
import Foundation
import Glibc
import Reactor

/// Set-up of a connection: DNS, TCP (address by address), the CONNECT proxy, the TLS handshake and the
/// nghttp2 session. Runs on the loop's thread like the rest of the connection.
extension HTTP2ClientConnection {
    func resolved(_ result: Result<[SocketAddress], SystemError>) {
        entry {
            guard phase == .resolving else { return }
            switch result {
            case let .failure(error):
                shutdown(.connectFailed("\(error)"), inFlight: .connectFailed("\(error)"), queued: .connectFailed("\(error)"))
            case let .success(list):
                addresses = list
                tryNextAddress()
            }
        }
    }

    func tryNextAddress() {
        while addressIndex < addresses.count {
            let address = addresses[addressIndex]
            addressIndex += 1
            do {
                fd = try Sockets.startConnect(to: address)
                try loop.register(fd: fd, handler: self, readable: false, writable: true)
                registered = true
                interestWritable = true
                phase = .tcpConnecting
                return
            } catch {
                lastConnectError = "\(address): \(error)"
                closeSocket()
            }
        }
        let error = HTTP2ClientError.connectFailed("\(endpoint): \(lastConnectError)")
        shutdown(error, inFlight: error, queued: error)
    }

    func tcpConnected() {
        if let error = Sockets.connectError(fd) {
            lastConnectError = "\(addresses[addressIndex - 1]): \(error)"
            closeSocket()
            tryNextAddress()
            return
        }
        if endpoint.proxy != nil {
            let authority = endpoint.authority
            proxyOut = Array("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n".utf8)
            phase = .proxy
            setInterest(writable: true)
            proxyIO(readable: false, writable: true)
        } else {
            startTLS()
        }
    }

    func closeSocket() {
        if fd >= 0 {
            if registered { loop.unregister(fd: fd) }
            Glibc.close(fd)
        }
        registered = false
        fd = -1
    }

    func setInterest(writable: Bool) {
        guard registered, writable != interestWritable else { return }
        interestWritable = writable
        do { try loop.setInterest(fd: fd, readable: true, writable: writable) } catch {
            lose("epoll: \(error)")
        }
    }

    // MARK: proxy

    func proxyIO(readable: Bool, writable: Bool) {
        if !proxyOut.isEmpty {
            let written = proxyOut.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written > 0 { proxyOut.removeFirst(written) } else if written < 0 && errno != EAGAIN && errno != EINTR {
                return failConnect("proxy write: \(String(cString: strerror(errno)))")
            }
            setInterest(writable: !proxyOut.isEmpty)
        }
        guard readable else { return }
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if count == 0 { return failConnect("proxy closed the connection") }
        if count < 0 {
            if errno == EAGAIN || errno == EINTR { return }
            return failConnect("proxy read: \(String(cString: strerror(errno)))")
        }
        proxyIn.append(contentsOf: chunk[0..<count])
        let terminator: [UInt8] = [13, 10, 13, 10]
        guard let end = proxyIn.indices.first(where: { proxyIn[$0...].starts(with: terminator) }) else {
            if proxyIn.count > 16_384 { failConnect("proxy answer too long") }
            return
        }
        let head = String(decoding: proxyIn[..<end], as: UTF8.self)
        let statusLine = head.split(separator: "\r\n").first.map(String.init) ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let code = Int(parts[1]), (200..<300).contains(code) else {
            return failConnect("proxy refused CONNECT: \(statusLine)")
        }
        guard end + 4 == proxyIn.count else { return failConnect("proxy sent data before the TLS handshake") }
        proxyIn = []
        startTLS()
    }

    func failConnect(_ message: String) {
        let error = HTTP2ClientError.connectFailed(message)
        shutdown(error, inFlight: error, queued: error)
    }

    // MARK: TLS

    func startTLS() {
        ERR_clear_error()
        guard let newSSL = SSL_new(tls.context) else { return failTLS("SSL_new: \(openSSLErrors())") }
        ssl = newSSL
        SSL_set_fd(newSSL, fd)
        SSL_set_connect_state(newSSL)
        let name = tls.configuration.serverName ?? endpoint.host
        if Self.isIPAddress(name) {
            if tls.configuration.verifyPeer { X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(newSSL), name) }
        } else {
            _ = copenssl_set_tlsext_host_name(newSSL, name)
            if tls.configuration.verifyPeer { SSL_set1_host(newSSL, name) }
        }
        phase = .handshaking
        handshake()
    }

    static func isIPAddress(_ text: String) -> Bool {
        if text.contains(":") { return true }  // host names never contain a colon; IPv6 literals always do
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in UInt8(part) != nil }
    }

    func handshake() {
        guard let ssl else { return }
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 { return handshakeDone() }
        switch SSL_get_error(ssl, rc) {
        case SSL_ERROR_WANT_READ: setInterest(writable: false)
        case SSL_ERROR_WANT_WRITE: setInterest(writable: true)
        default:
            var message = openSSLErrors()
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK {
                message = "certificate verification failed: \(String(cString: X509_verify_cert_error_string(verify))) (\(message))"
            } else if message == "no OpenSSL error detail" {
                message = "handshake failed: connection closed (\(String(cString: strerror(errno))))"
            }
            failTLS(message)
        }
    }

    func failTLS(_ message: String) {
        let error = HTTP2ClientError.tlsFailed(message)
        shutdown(error, inFlight: error, queued: error)
    }

    func handshakeDone() {
        guard let ssl else { return }
        var protocolName: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &protocolName, &length)
        let selected = protocolName.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self) } ?? ""
        guard selected == "h2" else {
            return failTLS("server did not select HTTP/2 via ALPN (got \(selected.isEmpty ? "nothing" : selected))")
        }
        guard makeSession() else { return failTLS("nghttp2 session set-up failed") }
        phase = .awaitingSettings
        setInterest(writable: false)
        needsFlush = true
        readAvailable(hangup: false)
    }

    func makeSession() -> Bool {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return false }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeaderCallback)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunkCallback)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamCloseCallback)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameRecvCallback)
        nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks, onFrameNotSendCallback)
        var newSession: OpaquePointer?
        guard nghttp2_session_client_new(&newSession, callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0, let newSession else {
            return false
        }
        session = newSession
        // No push; windows big enough that answers never wait for WINDOW_UPDATE.
        let settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 24),
        ]
        guard nghttp2_submit_settings(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), settings, settings.count) == 0 else { return false }
        _ = nghttp2_session_set_local_window_size(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 30)
        lastReadAt = monotonicNanos()
        return true
    }
}

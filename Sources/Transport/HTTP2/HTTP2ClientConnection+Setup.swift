import CNghttp2
import Foundation
import Glibc
import Reactor
import TLS

/// Set-up of a connection: DNS, TCP (address by address), the CONNECT proxy, the TLS handshake and the
/// nghttp2 session. Runs on the loop's thread like the rest of the connection.
extension HTTP2ClientConnection {
    func resolved(_ result: Result<[SocketAddress], SystemError>) {
        entry {
            guard case let .resolving(deadline) = phase else { return }
            switch result {
            case let .failure(error):
                shutdown(.connectFailed("\(error)"), inFlight: .connectFailed("\(error)"), queued: .connectFailed("\(error)"))
            case let .success(list):
                if let check = addressCheck, let refusal = list.lazy.compactMap(check).first {
                    let error = HTTP2ClientError.addressRefused(refusal)
                    return shutdown(error, inFlight: error, queued: error)
                }
                connect(to: addressOrder?(list) ?? list, from: 0, lastError: "no address", deadline: deadline)
            }
        }
    }

    /// Starts TCP to the first address from `start` on that takes a connect; fails the connection when none does.
    func connect(to addresses: [SocketAddress], from start: Int, lastError: String, deadline: UInt64) {
        var lastError = lastError
        for index in addresses.indices where index >= start {
            do {
                let socket = SocketHandle(fd: try Sockets.startConnect(to: addresses[index]), loop: loop)
                try socket.register(self)  // on failure the handle closes the socket as it goes
                remoteAddress = addresses[index]
                phase = .connecting(TCPAttempt(addresses: addresses, index: index, socket: socket, deadline: deadline))
                return
            } catch {
                lastError = "\(addresses[index]): \(error)"
            }
        }
        let error = HTTP2ClientError.connectFailed("\(endpoint): \(lastError)")
        shutdown(error, inFlight: error, queued: error)
    }

    func tcpConnected(_ attempt: TCPAttempt) {
        if let error = Sockets.connectError(attempt.socket.fd) {
            attempt.socket.close()
            return connect(to: attempt.addresses, from: attempt.index + 1, lastError: "\(attempt.address): \(error)", deadline: attempt.deadline)
        }
        if endpoint.proxy != nil {
            let proxy = ProxyHandshake(socket: attempt.socket, authority: endpoint.authority, deadline: attempt.deadline)
            phase = .proxy(proxy)
            setInterest(writable: true)
            proxyIO(proxy, readable: false, writable: true)
        } else {
            startTLS(on: attempt.socket, deadline: attempt.deadline)
        }
    }

    func setInterest(writable: Bool) {
        guard let socket = phase.socket else { return }
        do { try socket.watchWritable(writable) } catch {
            lose("epoll: \(error)")
        }
    }

    // MARK: proxy

    func proxyIO(_ proxy: ProxyHandshake, readable: Bool, writable: Bool) {
        let fd = proxy.socket.fd
        if !proxy.unsent.isEmpty {
            do {
                if case let .bytes(count) = try SocketIO.write(fd, proxy.unsent) { proxy.unsent.removeFirst(count) }
            } catch {
                return failConnect("proxy write: \(String(cString: strerror(error.errno)))")
            }
            setInterest(writable: !proxy.unsent.isEmpty)
        }
        guard readable else { return }
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count: Int
        do {
            switch try SocketIO.read(fd, into: &chunk) {
            case let .bytes(read): count = read
            case .wouldBlock: return
            case .endOfFile: return failConnect("proxy closed the connection")
            }
        } catch {
            return failConnect("proxy read: \(String(cString: strerror(error.errno)))")
        }
        switch proxy.receive(chunk[0..<count]) {
        case .incomplete: return
        case let .failed(message): return failConnect(message)
        case .established: startTLS(on: proxy.socket, deadline: proxy.deadline)
        }
    }

    func failConnect(_ message: String) {
        let error = HTTP2ClientError.connectFailed(message)
        shutdown(error, inFlight: error, queued: error)
    }

    // MARK: TLS

    func startTLS(on socket: SocketHandle, deadline: UInt64) {
        let ssl: SSLHandle
        do { ssl = try SSLHandle(context: tls, fd: socket.fd, serverName: tls.configuration.serverName ?? endpoint.host) } catch {
            return failTLS(error.message)
        }
        let handshake = TLSHandshake(socket: socket, ssl: ssl, deadline: deadline)
        phase = .handshaking(handshake)
        self.handshake(handshake)
    }

    func handshake(_ handshake: TLSHandshake) {
        do {
            switch try handshake.ssl.handshake() {
            case .done: handshakeDone(handshake)
            case .wantRead: setInterest(writable: false)
            case .wantWrite: setInterest(writable: true)
            }
        } catch {
            failTLS(error.message)
        }
    }

    func failTLS(_ message: String) {
        let error = HTTP2ClientError.tlsFailed(message)
        shutdown(error, inFlight: error, queued: error)
    }

    func handshakeDone(_ handshake: TLSHandshake) {
        let selected = handshake.ssl.alpnSelected
        // A client that offered http/1.1 too learns the server's choice (none means HTTP/1.1, RFC 7301).
        if selected != "h2" && tls.alpn.contains("http/1.1") && (selected == "http/1.1" || selected.isEmpty) {
            let error = HTTP2ClientError.http1Only(selected.isEmpty ? "no ALPN protocol" : selected)
            return shutdown(error, inFlight: error, queued: error)
        }
        guard selected == "h2" else {
            return failTLS("server did not select HTTP/2 via ALPN (got \(selected.isEmpty ? "nothing" : selected))")
        }
        guard let session = makeSession() else { return failTLS("nghttp2 session set-up failed") }
        let live = LiveSession(socket: handshake.socket, ssl: handshake.ssl, session: session, now: monotonicNanos())
        phase = .awaitingSettings(live, deadline: handshake.deadline)
        setInterest(writable: false)
        output.needsFlush = true
        readAvailable(live, hangup: false)
    }

    /// A client session with our SETTINGS submitted, or nil (and nothing leaked) when nghttp2 refuses.
    func makeSession() -> SessionHandle? {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return nil }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeaderCallback)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunkCallback)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamCloseCallback)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameRecvCallback)
        nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks, onFrameNotSendCallback)
        var newSession: OpaquePointer?
        guard nghttp2_session_client_new(&newSession, callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0, let newSession else {
            return nil
        }
        let session = SessionHandle(newSession)
        // No push; windows big enough that answers never wait for WINDOW_UPDATE.
        let settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 24),
        ]
        guard nghttp2_submit_settings(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), settings, settings.count) == 0 else { return nil }
        _ = nghttp2_session_set_local_window_size(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 30)
        return session
    }
}

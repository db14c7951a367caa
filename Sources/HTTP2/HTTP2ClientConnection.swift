import CNghttp2
import COpenSSL
import Foundation
import Glibc
import Reactor
import Synchronization

/// One HTTP/2-over-TLS client connection on an `EventLoop`: TCP (optionally through a CONNECT proxy), TLS
/// with ALPN h2, and an nghttp2 client session driven through `mem_send`/`mem_recv`.
///
/// Owns the socket, the `SSL*` and the `nghttp2_session*` and frees them when it closes (or in `deinit`).
/// Loop-confined and not Sendable: create it, call every method and receive every completion and event on
/// the loop's thread. Nothing here locks. While its socket is registered the loop keeps it alive.
public final class HTTP2ClientConnection: FileDescriptorHandler {
    /// Coarse state for owners: `ready` takes requests, `draining` finishes its streams and then closes.
    public enum State: Sendable, Equatable { case idle, connecting, ready, draining, closed }

    /// Ids grow per process, so "a connection newer than N" is meaningful (see `HTTP2Response.connectionID`).
    private static let nextID = Atomic<Int>(0)

    public let id: Int
    public let endpoint: HTTP2Endpoint
    public let loop: EventLoop
    let tls: TLSContext
    let options: HTTP2ConnectionOptions
    /// Receives connection events (connected, capacity, GOAWAY, closed) on the loop's thread.
    public var onEvent: ((HTTP2ConnectionEvent) -> Void)?

    private enum Phase { case idle, resolving, tcpConnecting, proxy, handshaking, awaitingSettings, ready, draining, closed }
    private var phase = Phase.idle
    private var fd: Int32 = -1
    private var registered = false
    private var interestWritable = false
    private var ssl: OpaquePointer?
    private var session: OpaquePointer?
    private var addresses: [SocketAddress] = []
    private var addressIndex = 0
    private var lastConnectError = "no address"
    private var proxyOut: [UInt8] = []
    private var proxyIn: [UInt8] = []

    private var streams: [Int32: RequestContext] = [:]
    private var queue = FIFO<RequestContext>()
    private var toDeliver: [RequestContext] = []
    private var delivering: [RequestContext] = []
    private var pendingEvents: [HTTP2ConnectionEvent] = []
    private let readBuffer: UnsafeMutableRawPointer
    private static let readSize = 65_536
    private var outBuffer: [UInt8] = []
    private var outOffset = 0
    private var scratchBytes: [UInt8] = []
    private var scratchSpans: [(Int, Int, Int, Int, UInt8)] = []
    private var scratchNV: [nghttp2_nv] = []
    private var inEntry = false
    /// SSL_read asked for writability (TLS renegotiation or key update): retry the read when writable.
    private var readWantsWrite = false
    private var needsFlush = false
    private var flushScheduled = false
    private var capacityFreed = false
    private var goaway: (lastStreamID: Int32, errorCode: UInt32, reason: String?)?
    private var retiring = false
    private var sweepTimer: LoopTimer?
    private var connectDeadline: UInt64 = 0
    private var lastReadAt: UInt64 = 0
    private var pingSentAt: UInt64?
    private let defaultAuthority: String

    /// The most streams ever open at once: lets tests prove the server's limit was never exceeded.
    public private(set) var maxObservedOpenStreams = 0
    /// Streams submitted and not yet closed by nghttp2 (including ones cancelled by a timeout until the RST goes out).
    public var openStreams: Int { streams.count }
    public var queuedRequests: Int { queue.count }

    public var state: State {
        switch phase {
        case .idle: return .idle
        case .resolving, .tcpConnecting, .proxy, .handshaking, .awaitingSettings: return .connecting
        case .ready: return .ready
        case .draining: return .draining
        case .closed: return .closed
        }
    }

    /// The server's current SETTINGS_MAX_CONCURRENT_STREAMS, capped by the local limit; 0 until it is known.
    public var maxConcurrentStreams: Int {
        guard let session, phase == .ready || phase == .draining else { return 0 }
        let remote = Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
        return min(remote, options.maxConcurrentStreamsLimit)
    }

    /// How many more requests could be put on the wire right now.
    public var availableStreams: Int { phase == .ready ? max(0, maxConcurrentStreams - streams.count) : 0 }

    public init(loop: EventLoop, endpoint: HTTP2Endpoint, tls: TLSContext, options: HTTP2ConnectionOptions = .init()) {
        self.loop = loop
        self.endpoint = endpoint
        self.tls = tls
        self.options = options
        self.defaultAuthority = endpoint.port == 443 ? endpoint.host : endpoint.authority
        self.id = Self.nextID.wrappingAdd(1, ordering: .relaxed).newValue
        readBuffer = UnsafeMutableRawPointer.allocate(byteCount: Self.readSize, alignment: 16)
        outBuffer.reserveCapacity(Self.readSize + 16_384)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
        if let ssl { SSL_free(ssl) }
        if fd >= 0 { Glibc.close(fd) }
        readBuffer.deallocate()
    }

    // MARK: public operations

    /// Starts DNS (off the loop, uncached), TCP, proxy, TLS and HTTP/2 set-up. Requests sent before it is
    /// ready wait in the connection's queue.
    public func connect() {
        guard phase == .idle else { return }
        entry {
            phase = .resolving
            connectDeadline = monotonicNanos() &+ UInt64(max(1, options.connectTimeoutMilliseconds)) &* 1_000_000
            startSweep()
            let target: (host: String, port: Int)
            do {
                target = try endpoint.proxyHostPort() ?? (endpoint.host, endpoint.port)
            } catch let error as HTTP2ClientError {
                shutdown(error, inFlight: error, queued: error)
                return
            } catch {
                return
            }
            let box = WeakConnection(self)
            let loop = self.loop
            DispatchQueue.global().async {
                let result: Result<[SocketAddress], SystemError>
                do throws(SystemError) { result = .success(try Sockets.resolve(host: target.host, port: target.port)) } catch { result = .failure(error) }
                loop.execute { box.connection?.resolved(result) }
            }
        }
    }

    /// Sends `request`, or queues it while the stream limit is reached. Returns false (and never calls
    /// `completion`) when refused at once: closed, draining, or the queue is full. Otherwise `completion`
    /// runs exactly once, on the loop's thread, never from inside this call.
    public func send(_ request: HTTP2Request, completion: @escaping HTTP2Completion) -> Bool {
        enqueue(RequestContext(request: request, newerThanConnectionID: 0, completion: completion))
    }

    /// Stops taking requests, lets open streams finish, then sends GOAWAY and closes
    /// (used to replace a connection after ExpiredProviderToken / UnrelatedKeyIdInToken).
    public func closeGracefully() {
        entry {
            retiring = true
            switch phase {
            case .ready, .awaitingSettings:
                phase = .draining
                failQueued(.notSent("connection retired"))
            case .idle, .resolving, .tcpConnecting, .proxy, .handshaking:
                shutdown(nil, inFlight: .closed, queued: .closed)
            case .draining, .closed:
                break
            }
        }
    }

    /// Closes now: open streams fail with `.connectionLost`, queued ones with `.closed`.
    public func close() {
        entry { shutdown(nil, inFlight: .connectionLost("closed by client"), queued: .closed) }
    }

    // MARK: requests

    func enqueue(_ context: RequestContext) -> Bool {
        switch phase {
        case .closed, .draining: return false
        default: break
        }
        if phase == .ready && queue.isEmpty && streams.count < maxConcurrentStreams {
            submit(context)
        } else {
            guard queue.count < options.maxQueuedRequests else { return false }
            queue.append(context)
        }
        requestFlush()
        return true
    }

    private func requestFlush() {
        needsFlush = true
        if inEntry || flushScheduled { return }
        flushScheduled = true
        // A zero-delay timer runs after the current loop iteration: one SSL_write for a whole burst of sends.
        loop.schedule(afterNanoseconds: 0) { [weak self] in
            guard let self else { return }
            self.flushScheduled = false
            self.entry {}
        }
    }

    private func submit(_ context: RequestContext) {
        guard let session else { return }
        let request = context.request
        scratchBytes.removeAll(keepingCapacity: true)
        scratchSpans.removeAll(keepingCapacity: true)
        let noIndex = UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue)
        addHeader(":method", request.method, 0)
        addHeader(":scheme", "https", 0)
        addHeader(":authority", request.authority ?? defaultAuthority, 0)
        addHeader(":path", request.path, noIndex)
        for header in request.headers { addHeader(header.name, header.value, header.neverIndex ? noIndex : 0) }
        var provider = nghttp2_data_provider()
        provider.read_callback = bodyReadCallback
        let hasBody = !request.body.isEmpty
        let streamID: Int32 = scratchBytes.withUnsafeMutableBufferPointer { bytes in
            let base = bytes.baseAddress!
            scratchNV.removeAll(keepingCapacity: true)
            for span in scratchSpans {
                scratchNV.append(nghttp2_nv(name: base + span.0, value: base + span.2, namelen: span.1, valuelen: span.3, flags: span.4))
            }
            return scratchNV.withUnsafeBufferPointer { nva in
                hasBody
                    ? nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, &provider, nil)
                    : nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, nil, nil)
            }
        }
        if streamID < 0 {
            if context.decide(.failure(.notSent("nghttp2_submit_request: \(String(cString: nghttp2_strerror(streamID)))"))) {
                toDeliver.append(context)
            }
            if streamID == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue { startDraining() }
            return
        }
        context.streamID = streamID
        streams[streamID] = context
        if streams.count > maxObservedOpenStreams { maxObservedOpenStreams = streams.count }
        // Stream ids run out at 2^31: retire well before, the pool opens a fresh connection.
        if streamID > 0x7FF0_0000 { startDraining() }
    }

    private func addHeader(_ name: String, _ value: String, _ flags: UInt8) {
        let nameStart = scratchBytes.count
        scratchBytes.append(contentsOf: name.utf8)
        let valueStart = scratchBytes.count
        scratchBytes.append(contentsOf: value.utf8)
        scratchBytes.append(0)  // keeps the base address valid even when every header is empty
        scratchSpans.append((nameStart, valueStart - nameStart, valueStart, scratchBytes.count - 1 - valueStart, flags))
    }

    private func startDraining() {
        retiring = true
        if phase == .ready || phase == .awaitingSettings {
            phase = .draining
            failQueued(.notSent("connection retired"))
            pendingEvents.append(.draining(connectionID: id))
        }
    }

    private func failQueued(_ error: HTTP2ClientError) {
        for context in queue.removeAll() where context.decide(.failure(error)) { toDeliver.append(context) }
    }

    private func dispatchQueued() {
        while let context = queue.first {
            if context.done {
                _ = queue.popFirst()
                continue
            }
            guard phase == .ready, streams.count < maxConcurrentStreams else { return }
            _ = queue.popFirst()
            submit(context)
            needsFlush = true
        }
    }

    // MARK: nghttp2 callbacks (called only from inside mem_recv / mem_send)

    func receivedHeader(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let context = streams[streamID] else { return }
        if name.count == 7, name.elementsEqual(":status".utf8) {
            var status = 0
            for byte in value where byte >= 48 && byte <= 57 { status = status * 10 + Int(byte - 48) }
            context.status = status
            if status < 200 { context.headers.removeAll() }  // an interim 1xx answer: the final one follows
            return
        }
        context.headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
    }

    func receivedData(streamID: Int32, _ data: UnsafeBufferPointer<UInt8>) {
        streams[streamID]?.body.append(contentsOf: data)
    }

    func readBody(streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let context = streams[streamID] else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        let count = context.request.body.withUnsafeBufferPointer { body -> Int in
            let count = min(length, body.count - context.bodyOffset)
            if count > 0 { buffer.update(from: body.baseAddress! + context.bodyOffset, count: count) }
            return count
        }
        context.bodyOffset += count
        if context.bodyOffset >= context.request.body.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }

    func streamClosed(streamID: Int32, errorCode: UInt32) {
        guard let context = streams.removeValue(forKey: streamID) else { return }
        capacityFreed = true
        if context.done { return }
        let outcome: Result<HTTP2Response, HTTP2ClientError>
        if let goaway, streamID > goaway.lastStreamID {
            outcome = .failure(.goawayUnprocessed(lastStreamID: goaway.lastStreamID, errorCode: goaway.errorCode, reason: goaway.reason))
        } else if errorCode == NGHTTP2_NO_ERROR.rawValue && context.status >= 200 {
            outcome = .success(HTTP2Response(status: context.status, headers: context.headers, body: context.body, connectionID: id))
        } else if errorCode == NGHTTP2_REFUSED_STREAM.rawValue {
            outcome = .failure(.refusedStream)
        } else {
            outcome = .failure(.streamReset(errorCode: errorCode))
        }
        context.decide(outcome)
        toDeliver.append(context)
    }

    func requestNotSent(streamID: Int32, libError: Int32) {
        guard let context = streams.removeValue(forKey: streamID) else { return }
        capacityFreed = true
        let error: HTTP2ClientError
        if let goaway {
            error = .goawayUnprocessed(lastStreamID: goaway.lastStreamID, errorCode: goaway.errorCode, reason: goaway.reason)
        } else {
            error = .notSent(String(cString: nghttp2_strerror(libError)))
        }
        if context.decide(.failure(error)) { toDeliver.append(context) }
    }

    func receivedSettings() {
        if phase == .awaitingSettings {
            phase = .ready
            pendingEvents.append(.connected(connectionID: id, maxConcurrentStreams: maxConcurrentStreams))
        }
        capacityFreed = true
    }

    func receivedPingAck() { pingSentAt = nil }

    func receivedGoaway(lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) {
        let reason = Self.goawayReason(debugData)
        goaway = (lastStreamID, errorCode, reason)
        if phase == .ready || phase == .awaitingSettings { phase = .draining }
        failQueued(.goawayUnprocessed(lastStreamID: lastStreamID, errorCode: errorCode, reason: reason))
        pendingEvents.append(.goaway(connectionID: id, lastStreamID: lastStreamID, errorCode: errorCode, reason: reason))
    }

    /// APNs puts `{"reason":"..."}` in the debug data; anything else is passed on as text.
    static func goawayReason(_ data: [UInt8]) -> String? {
        guard !data.isEmpty else { return nil }
        if let object = try? JSONSerialization.jsonObject(with: Data(data)) as? [String: Any],
           let reason = object["reason"] as? String {
            return reason
        }
        return String(decoding: data, as: UTF8.self)
    }

    // MARK: the loop's entry points

    /// Every way into the connection goes through here: work first, then (once, outermost) flush the
    /// output, deliver decided completions and events. Completions may re-enter `send`/`close` safely.
    private func entry(_ body: () -> Void) {
        withExtendedLifetime(self) {
            if inEntry {
                body()
                return
            }
            inEntry = true
            body()
            finishEntry()
            inEntry = false
        }
    }

    private func finishEntry() {
        var rounds = 0
        repeat {
            rounds += 1
            dispatchQueued()
            if needsFlush || phase == .ready || phase == .draining || phase == .awaitingSettings { flush() }
            closeIfDrained()
            if !toDeliver.isEmpty {
                swap(&toDeliver, &delivering)
                for context in delivering { context.deliver() }
                delivering.removeAll(keepingCapacity: true)
            }
            if capacityFreed {
                capacityFreed = false
                dispatchQueued()
                if phase == .ready && availableStreams > 0 { pendingEvents.append(.capacityAvailable(connectionID: id)) }
            }
            if !pendingEvents.isEmpty {
                let events = pendingEvents
                pendingEvents.removeAll()
                for event in events { onEvent?(event) }
            }
        } while (!toDeliver.isEmpty || !pendingEvents.isEmpty || needsFlush || capacityFreed) && rounds < 64
        if needsFlush && phase != .closed && !flushScheduled {
            flushScheduled = true
            loop.schedule(afterNanoseconds: 0) { [weak self] in
                self?.flushScheduled = false
                self?.entry {}
            }
        }
    }

    public func handleIO(readable: Bool, writable: Bool, hangup: Bool) {
        entry {
            switch phase {
            case .tcpConnecting:
                if writable || hangup { tcpConnected() }
            case .proxy:
                proxyIO(readable: readable || hangup, writable: writable)
            case .handshaking:
                handshake()
            case .awaitingSettings, .ready, .draining:
                if readable || hangup || (writable && readWantsWrite) { readAvailable(hangup: hangup) }
                if writable { needsFlush = true }
            case .idle, .resolving, .closed:
                break
            }
        }
    }

    private func resolved(_ result: Result<[SocketAddress], SystemError>) {
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

    private func tryNextAddress() {
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

    private func tcpConnected() {
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

    private func closeSocket() {
        if fd >= 0 {
            if registered { loop.unregister(fd: fd) }
            Glibc.close(fd)
        }
        registered = false
        fd = -1
    }

    private func setInterest(writable: Bool) {
        guard registered, writable != interestWritable else { return }
        interestWritable = writable
        do { try loop.setInterest(fd: fd, readable: true, writable: writable) } catch {
            lose("epoll: \(error)")
        }
    }

    // MARK: proxy

    private func proxyIO(readable: Bool, writable: Bool) {
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

    private func failConnect(_ message: String) {
        let error = HTTP2ClientError.connectFailed(message)
        shutdown(error, inFlight: error, queued: error)
    }

    // MARK: TLS

    private func startTLS() {
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

    private func handshake() {
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

    private func failTLS(_ message: String) {
        let error = HTTP2ClientError.tlsFailed(message)
        shutdown(error, inFlight: error, queued: error)
    }

    private func handshakeDone() {
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

    private func makeSession() -> Bool {
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

    // MARK: I/O

    private func readAvailable(hangup: Bool) {
        guard let ssl, let session else { return }
        readWantsWrite = false
        while phase != .closed {
            ERR_clear_error()
            let count = SSL_read(ssl, readBuffer, Int32(Self.readSize))
            if count > 0 {
                lastReadAt = monotonicNanos()
                pingSentAt = nil
                let used = nghttp2_session_mem_recv(session, readBuffer.assumingMemoryBound(to: UInt8.self), Int(count))
                if used < 0 { return lose("HTTP/2 protocol error: \(String(cString: nghttp2_strerror(Int32(used))))") }
                needsFlush = true
                continue
            }
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_WANT_READ:
                if hangup { lose("server closed the connection") }
                return
            case SSL_ERROR_WANT_WRITE:
                readWantsWrite = true
                setInterest(writable: true)
                return
            case SSL_ERROR_ZERO_RETURN:
                return lose("server closed the connection")
            default:
                let detail = openSSLErrors()
                if phase == .awaitingSettings && detail != "no OpenSSL error detail" {
                    return failTLS("rejected after the handshake: \(detail)")  // TLS 1.3: e.g. a missing client certificate
                }
                return lose(detail == "no OpenSSL error detail" ? "server closed the connection" : "read failed: \(detail)")
            }
        }
    }

    private func flush() {
        needsFlush = false
        guard let ssl, let session, phase == .awaitingSettings || phase == .ready || phase == .draining else { return }
        while true {
            if outOffset >= outBuffer.count {
                outBuffer.removeAll(keepingCapacity: true)
                outOffset = 0
                while outBuffer.count < Self.readSize {
                    var data: UnsafePointer<UInt8>?
                    let count = nghttp2_session_mem_send(session, &data)
                    if count < 0 { return lose("HTTP/2 error: \(String(cString: nghttp2_strerror(Int32(count))))") }
                    guard count > 0, let data else { break }
                    outBuffer.append(contentsOf: UnsafeBufferPointer(start: data, count: count))
                }
                if outBuffer.isEmpty { break }
            }
            ERR_clear_error()
            let written = outBuffer.withUnsafeBytes { bytes in
                SSL_write(ssl, bytes.baseAddress! + outOffset, Int32(bytes.count - outOffset))
            }
            if written > 0 {
                outOffset += Int(written)
                continue
            }
            switch SSL_get_error(ssl, written) {
            case SSL_ERROR_WANT_WRITE:
                setInterest(writable: true)
                return
            case SSL_ERROR_WANT_READ:
                return
            default:
                let detail = openSSLErrors()
                return lose(detail == "no OpenSSL error detail" ? "write failed: \(String(cString: strerror(errno)))" : "write failed: \(detail)")
            }
        }
        setInterest(writable: readWantsWrite)
    }

    private func closeIfDrained() {
        guard phase == .draining, streams.isEmpty else { return }
        if let session, goaway == nil {
            _ = nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue)
            flush()
        }
        if phase == .draining { shutdown(nil, inFlight: .connectionLost("closed after draining"), queued: .closed) }
    }

    // MARK: timers

    private func startSweep() {
        sweepTimer = loop.schedule(afterMilliseconds: options.sweepIntervalMilliseconds) { [weak self] in
            guard let self, self.phase != .closed else { return }
            self.entry { self.sweep() }
            if self.phase != .closed { self.startSweep() }
        }
    }

    private func sweep() {
        let now = monotonicNanos()
        switch phase {
        case .resolving, .tcpConnecting, .proxy, .handshaking, .awaitingSettings:
            if now >= connectDeadline {
                let error = HTTP2ClientError.connectFailed("\(endpoint): no HTTP/2 connection within \(options.connectTimeoutMilliseconds) ms")
                return shutdown(error, inFlight: error, queued: error)
            }
        case .ready, .draining:
            if let sent = pingSentAt {
                if now &- sent >= UInt64(options.pingTimeoutMilliseconds) &* 1_000_000 {
                    return lose("no PING ACK within \(options.pingTimeoutMilliseconds) ms")
                }
            } else if now &- lastReadAt >= UInt64(options.pingIdleMilliseconds) &* 1_000_000, let session {
                if nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil) == 0 {
                    pingSentAt = now
                    needsFlush = true
                }
            }
        case .idle, .closed:
            break
        }
        for (streamID, context) in streams where !context.done && context.deadline <= now {
            context.decide(.failure(.timedOut))
            toDeliver.append(context)
            if let session { _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue) }
            needsFlush = true
        }
        queue.forEach { context in
            if !context.done && context.deadline <= now {
                context.decide(.failure(.queueTimedOut))
                toDeliver.append(context)
            }
        }
    }

    // MARK: closing

    private func lose(_ why: String) {
        let error = HTTP2ClientError.connectionLost(why)
        shutdown(error, inFlight: error, queued: .notSent(why))
    }

    /// The one way to `closed`: decides every open and queued request, frees the C objects, reports why.
    private func shutdown(_ error: HTTP2ClientError?, inFlight: HTTP2ClientError, queued: HTTP2ClientError) {
        guard phase != .closed else { return }
        phase = .closed
        sweepTimer?.cancel()
        sweepTimer = nil
        for context in streams.values where context.decide(.failure(inFlight)) { toDeliver.append(context) }
        streams.removeAll()
        failQueued(queued)
        if let ssl, error == nil { ERR_clear_error(); SSL_shutdown(ssl) }
        if let session { nghttp2_session_del(session) }
        session = nil
        if let ssl { SSL_free(ssl) }
        ssl = nil
        closeSocket()
        outBuffer.removeAll()
        outOffset = 0
        pendingEvents.append(.closed(connectionID: id, error: error))
    }
}

/// Carries a weak reference to a connection through the DNS thread and back. Only the loop's thread ever
/// dereferences it, which is why the unchecked conformance is sound.
private final class WeakConnection: @unchecked Sendable {
    weak var connection: HTTP2ClientConnection?
    init(_ connection: HTTP2ClientConnection) { self.connection = connection }
}

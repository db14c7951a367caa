import Basics
import CNghttp2
import COpenSSL
import Foundation
import Glibc
import HTTP1
import HTTP2Server
import Reactor

/// One client connection of any simulator: TLS (or cleartext), then HTTP/2 (an nghttp2 server session) or, where
/// the provider serves it, HTTP/1.1 (`HTTP1Parser`, one request answered at a time, in order), whichever ALPN chose;
/// the connection-level faults (drop, silence, GOAWAY, idle timeout) and the orderly close. What a request means
/// and how it is answered is the provider's `MockConnectionHandler`'s.
///
/// Owns its transport (socket and `SSL*`), the `nghttp2_session*` and its handler, and frees them in `close()`/`deinit`.
/// Confined to the server's loop thread; nghttp2 callbacks reach it through an unretained pointer while the
/// core's connection table keeps it alive.
final class MockServerConnection: FileDescriptorHandler, H2ServerStreamHandler {
    let id: Int
    let fd: Int32
    unowned let host: any MockConnectionHost
    private let settings: MockConnectionSettings
    private let transport: ServerTransport
    private var events: H2SessionEvents!
    private var session: OpaquePointer?
    /// The provider's side of this connection (set once, right after init).
    private(set) var handler: (any MockConnectionHandler)!

    /// What the connection does with input, stage by stage.
    private enum Phase {
        /// TLS accept in progress (TLS only).
        case handshaking
        /// Reading requests and answering them.
        case open
        /// A fault: reads and answers nothing more; closes when the client does.
        case silenced
        /// A fault: answers already given go out, then the connection closes without a word.
        case dropping
        /// Done (after GOAWAY, or the last HTTP/1.1 answer): our side is shut, the client's last bytes are being
        /// read and dropped.
        case lingering
        case closed
    }

    private var phase: Phase
    private var closed: Bool {
        if case .closed = phase { return true }
        return false
    }
    /// HTTP/2 (ALPN h2, or cleartext prior knowledge); else HTTP/1.1.
    private(set) var isHTTP2 = false
    /// `h2` or `http/1.1`.
    var protocolName: String { isHTTP2 ? "h2" : "http/1.1" }
    private var streams: [Int32: MockRequest] = [:]
    private var output = PendingOutput()
    private var watchingWritable = false
    private var lingerTimer: LoopTimer?
    /// The last-stream-id of the GOAWAY we sent; nil until then.
    private var goawayLastStream: Int32?
    /// Requests counted by the connection-level faults (`admit`).
    private var requestCount = 0
    private var highestStreamID: Int32 = 0
    private var lastActivity: UInt64 = monotonicNanos()
    private var idleTimer: LoopTimer?
    private var openStreams = 0

    // HTTP/1.1 state: unparsed input, the request being answered, whether to close after it.
    private var input: [UInt8] = []
    private var h1Busy = false
    private var h1CloseAfterAnswer = false
    private var h1ContinueSent = false

    /// `makeHandler` builds the provider's side, which keeps this connection unowned.
    init(id: Int, fd: Int32, host: any MockConnectionHost, settings: MockConnectionSettings,
         makeHandler: (MockServerConnection) -> any MockConnectionHandler) throws {
        self.id = id
        self.fd = fd
        self.host = host
        self.settings = settings
        transport = try ServerTransport(fd: fd, context: host.sslContext)
        phase = host.sslContext == nil ? .open : .handshaking
        isHTTP2 = host.sslContext == nil  // cleartext is HTTP/2 with prior knowledge
        events = H2SessionEvents(self)
        handler = makeHandler(self)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    func start() throws {
        try host.loop.register(fd: fd, handler: self, readable: true, writable: false)
        if case .open = phase {
            handler.connectionReady()
            try startSession()
        }
    }

    /// The TLS session (for a client certificate), nil on cleartext.
    var ssl: OpaquePointer? { transport.ssl }

    // MARK: I/O

    func handleIO(readable: Bool, writable: Bool, hangup: Bool) {
        switch phase {
        case .closed: return
        case .lingering: return discardInput()
        case .silenced:
            if hangup || readable { close() }
            return
        case .handshaking:
            guard handshake() else { return }
        case .open, .dropping: break
        }
        if hangup && !isHTTP2 && h1Busy { return close() }
        if readable || hangup { readAvailable() }
        if closed { return }
        flush()
        finishIteration()
    }

    private func handshake() -> Bool {
        switch transport.handshake() {
        case .done:
            phase = .open
            isHTTP2 = transport.selectedProtocol == "h2"
            if isHTTP2 {
                host.counters.http2Connections += 1
            } else if settings.servesHTTP1 {
                host.counters.http1Connections += 1
            } else {
                host.counters.handshakeFailures += 1
                close()
                return false
            }
            handler.connectionReady()
            if isHTTP2 {
                do { try startSession() } catch { close(); return false }
            }
            return true
        case .wantRead: setWritable(false); return false
        case .wantWrite: setWritable(true); return false
        case .failed:
            host.counters.handshakeFailures += 1
            close()
            return false
        }
    }

    private func startSession() throws {
        let newSession = try host.h2.makeSession(events)
        session = newSession
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: handler.initialMaxConcurrentStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        nghttp2_submit_settings(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        nghttp2_session_set_local_window_size(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
        if self.settings.watchesIdle { scheduleIdleCheck() }
    }

    /// One timer per connection, re-armed for the remaining time, instead of one per request.
    private func scheduleIdleCheck() {
        guard let idle = host.connectionFaults.idleTimeoutSeconds, idle > 0 else {
            // No idle rule now; look again later in case the config changes at run time.
            idleTimer = host.loop.schedule(afterMilliseconds: 1000) { [weak self] in
                guard let self, !self.closed else { return }
                self.scheduleIdleCheck()
            }
            return
        }
        let limit = UInt64(idle * 1e9)
        let elapsed = monotonicNanos() &- lastActivity
        if elapsed >= limit && goawayLastStream == nil && !closed {
            sendGoaway(lastStreamID: highestStreamID, reason: "IdleTimeout")
            flush()
            finishIteration()
            return
        }
        idleTimer = host.loop.schedule(afterNanoseconds: limit - min(elapsed, limit)) { [weak self] in
            guard let self, !self.closed else { return }
            self.scheduleIdleCheck()
        }
    }

    private func readAvailable() {
        let buffer = host.readBuffer
        while case .open = phase {
            // HTTP/1.1 reads no further while an answer is pending (one request at a time, in order).
            if !isHTTP2 && (h1Busy || h1CloseAfterAnswer) { break }
            var wantsWrite = false
            let count = transport.read(buffer.baseAddress!, buffer.count, wantsWrite: &wantsWrite)
            if wantsWrite { setWritable(true) }
            if count == 0 { break }
            if count < 0 { close(); return }
            if isHTTP2 {
                guard let session else { close(); return }
                if nghttp2_session_mem_recv(session, buffer.baseAddress!, count) < 0 { close(); return }
            } else {
                input.append(contentsOf: UnsafeBufferPointer(start: buffer.baseAddress!, count: count))
                processHTTP1()
            }
        }
        if case .dropping = phase {
            // Answers already given go out (best effort); the request that triggered the drop gets none.
            flush()
            close()
        }
    }

    /// Moves queued bytes (nghttp2's frames, or HTTP/1.1 answers) into TLS until the socket would block.
    func flush() {
        guard !closed else { return }
        switch output.flush(session: session, transport: transport) {
        case .done: setWritable(false)
        case .blocked: setWritable(true)
        case .failed: close()
        }
    }

    private func setWritable(_ on: Bool) {
        guard on != watchingWritable, !closed else { return }
        watchingWritable = on
        let silenced = if case .silenced = phase { true } else { false }
        try? host.loop.setInterest(fd: fd, readable: !silenced, writable: on)
    }

    /// Closes once nothing is left to do: nghttp2 is done (after GOAWAY, or the peer left), or an HTTP/1.1
    /// answer that said `Connection: close` is out.
    private func finishIteration() {
        guard !closed else { return }
        if case .dropping = phase { close(); return }
        guard output.isEmpty else { return }
        if let session {
            if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 { closeAfterLingering() }
        } else if !isHTTP2, h1CloseAfterAnswer, !h1Busy, case .open = phase {
            closeAfterLingering()
        }
    }

    /// Closing a socket that still holds unread input makes the kernel send RST and throw away what it had
    /// not yet transmitted: the last answers the client is waiting for (seen under load after GOAWAY). So the
    /// orderly way: close_notify and FIN, then read and drop what the client still sends until it closes
    /// its side (or a second passes), then close.
    private func closeAfterLingering() {
        switch phase {
        case .lingering, .closed: return
        case .handshaking, .open, .silenced, .dropping: phase = .lingering
        }
        transport.shutdownWrite()
        watchingWritable = false
        try? host.loop.setInterest(fd: fd, readable: true, writable: false)
        lingerTimer = host.loop.schedule(afterMilliseconds: 1_000) { [weak self] in self?.close() }
    }

    private func discardInput() {
        if !transport.discardInput(host.readBuffer) { close() }  // the client is gone too
    }

    func close() {
        guard !closed else { return }
        phase = .closed
        idleTimer?.cancel()
        idleTimer = nil
        lingerTimer?.cancel()
        lingerTimer = nil
        host.loop.unregister(fd: fd)
        // Freed here, not in deinit, so no nghttp2 callback can reach a connection that is going away.
        if let session { nghttp2_session_del(session) }
        session = nil
        transport.close()
        host.counters.streamsInUse -= openStreams
        openStreams = 0
        streams.removeAll()
        host.connectionClosed(self)
    }

    // MARK: what handlers use

    /// The request is still waiting for its answer on this connection (its stream was not reset or closed).
    func isPending(_ request: MockRequest) -> Bool {
        !isHTTP2 || streams[request.streamID] === request
    }

    /// What the connection-level faults say about one more provider request.
    enum Admission {
        /// The connection drops or goes silent instead (counted); the request gets nothing.
        case refused
        /// Serve it; `goawayDue`: it is the request after which the script wants GOAWAY.
        case admitted(goawayDue: Bool)
    }

    /// Counts a provider request (control paths are not counted) against `dropAfterRequests` and
    /// `silenceAfterRequests`, and says whether `goawayAfterRequests` falls on it.
    func admit(_ request: MockRequest) -> Admission {
        host.counters.requests += 1
        requestCount += 1
        let faults = host.connectionFaults
        if let limit = faults.dropAfterRequests, requestCount > limit {
            host.counters.connectionsDropped += 1
            drop()
            return .refused
        }
        if let limit = faults.silenceAfterRequests, requestCount > limit {
            host.counters.silencedRequests += 1
            silence()
            return .refused
        }
        return .admitted(goawayDue: faults.goawayAfterRequests == requestCount)
    }

    /// A fault that acts on the connection instead of answering (counted).
    enum Fault {
        /// RST_STREAM REFUSED_STREAM (HTTP/2).
        case refuseStream
        /// No answer: the stream stays open (HTTP/2), the connection stops reading (HTTP/1.1).
        case silence
        /// Close the connection abruptly.
        case drop
        /// No answer and GOAWAY below this stream (debug data `{"reason":...}` when given); HTTP/1.1: close.
        case goaway(reason: String?)
    }

    func apply(_ fault: Fault, to request: MockRequest) {
        switch fault {
        case .refuseStream:
            host.counters.refusedStreams += 1
            if let session { nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), request.streamID, UInt32(NGHTTP2_REFUSED_STREAM.rawValue)) }
        case .silence:
            host.counters.silencedRequests += 1
            if !isHTTP2 { silence() }
        case .drop:
            host.counters.connectionsDropped += 1
            drop()
        case .goaway(let reason):
            if isHTTP2 {
                sendGoaway(lastStreamID: request.streamID - 2, reason: reason)
            } else {
                host.counters.goawaysSent += 1
                h1Busy = false
                h1CloseAfterAnswer = true
                closeAfterLingering()
            }
        }
    }

    /// Runs `body` after `milliseconds` (at once for 0) unless the connection has closed meanwhile, then writes
    /// what it queued. HTTP/1.1 reads nothing meanwhile and goes on with the next request afterwards.
    func after(milliseconds delay: Int, _ body: @escaping () -> Void) {
        guard delay > 0 else { return body() }
        // Level-triggered epoll would report a pipelined HTTP/1.1 request again and again while this one waits.
        if !isHTTP2 { try? host.loop.setInterest(fd: fd, readable: false, writable: watchingWritable) }
        host.loop.schedule(afterMilliseconds: delay) { [weak self] in
            guard let self, !self.closed else { return }
            body()
            if !self.isHTTP2, case .open = self.phase {
                try? self.host.loop.setInterest(fd: self.fd, readable: true, writable: self.watchingWritable)
                // The next request may already be buffered (in `input` or inside TLS, where epoll cannot see it).
                self.processHTTP1()
                self.readAvailable()
            }
            self.flush()
            self.finishIteration()
        }
    }

    /// Answers `request` once: HTTP/2 HEADERS (and DATA for a non-empty `body`), or one HTTP/1.1 message.
    /// `thenGoaway`: the connection ends after this answer (HTTP/2 GOAWAY with last-stream-id = it, no debug
    /// data; HTTP/1.1 `connection: close`).
    func respond(_ request: MockRequest, status: Int, headers: [(String, String)], body: [UInt8]?, thenGoaway: Bool = false) {
        guard !request.answered else { return }
        if isHTTP2 {
            guard let session else { return }
            request.answered = true
            request.answerBody = body ?? []
            let hasBody = !request.answerBody.isEmpty
            let all = settings.sendsContentLength ? headers + [("content-length", String(request.answerBody.count))] : headers
            H2ServerCallbacks.submitResponse(session, streamID: request.streamID, status: status, headers: all, hasBody: hasBody)
            if thenGoaway { sendGoaway(lastStreamID: request.streamID, reason: nil) }
        } else {
            request.answered = true
            if thenGoaway { h1CloseAfterAnswer = true }
            respondHTTP1(status: status, headers: headers, body: body ?? [])
        }
    }

    /// GOAWAY (NO_ERROR) with `lastStreamID` and, given a reason, debug data `{"reason":"<reason>"}`; the streams
    /// above it that were not answered get RST_STREAM REFUSED_STREAM. Only the first call sends one.
    func sendGoaway(lastStreamID: Int32, reason: String?) {
        guard goawayLastStream == nil, let session else { return }
        host.counters.goawaysSent += 1
        let last = max(0, lastStreamID)
        goawayLastStream = last
        let debug = reason.map { Array(#"{"reason":"\#($0)"}"#.utf8) } ?? []
        nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, UInt32(NGHTTP2_NO_ERROR.rawValue), debug, debug.count)
        for (streamID, request) in streams where streamID > last && !request.answered {
            request.answered = true
            host.counters.refusedStreams += 1
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, UInt32(NGHTTP2_REFUSED_STREAM.rawValue))
        }
    }

    /// A new SETTINGS_MAX_CONCURRENT_STREAMS (HTTP/2).
    func submitMaxStreams(_ value: UInt32) {
        guard let session else { return }
        var entry = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: value)
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entry, 1)
    }

    /// The fault that ends the connection: from any stage but closed (it wins over silence and lingering).
    private func drop() {
        if !closed { phase = .dropping }
    }

    private func silence() {
        if case .open = phase { phase = .silenced }  // a drop decided earlier in this read still wins
        try? host.loop.setInterest(fd: fd, readable: false, writable: false)
    }

    // MARK: nghttp2 events

    func beginStream(_ streamID: Int32) {
        lastActivity = monotonicNanos()
        if streamID > highestStreamID { highestStreamID = streamID }
        streams[streamID] = handler.makeRequest(streamID: streamID)
        openStreams += 1
        host.counters.streamsInUse += 1
        if openStreams > host.counters.maxConcurrentStreamsInUse { host.counters.maxConcurrentStreamsInUse = openStreams }
    }

    func header(_ streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        streams[streamID]?.setHeader(name: name, value: value)
    }

    func data(_ streamID: Int32, _ chunk: UnsafeBufferPointer<UInt8>) {
        streams[streamID]?.append(body: chunk)
    }

    func streamClosed(_ streamID: Int32) {
        if streams.removeValue(forKey: streamID) != nil {
            openStreams -= 1
            host.counters.streamsInUse -= 1
        }
    }

    func requestComplete(_ streamID: Int32) {
        guard let request = streams[streamID], streamID <= goawayLastStream ?? Int32.max else { return }
        handler.requestComplete(request)
    }

    /// Copies the pending answer body into nghttp2's DATA frame buffer.
    func readBody(_ streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let request = streams[streamID] else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        return H2ServerCallbacks.copyBody(&request.answerBody, into: buffer, length: length, flags: flags)
    }

    // MARK: HTTP/1.1

    /// Parses the next request out of `input` with Herald's one HTTP/1.1 request parser (`HTTP1Parser`, fuzzed;
    /// the simulators check Herald's clients, and no client of Herald's parses requests, so sharing it costs no
    /// cross-check) and hands it to the handler. Framing fields are the parser's; the rest go to the handler.
    private func processHTTP1() {
        while !h1Busy, !h1CloseAfterAnswer, case .open = phase {
            switch HTTP1Parser.parse(input[...], limits: Self.http1Limits(body: settings.http1BodyLimit)) {
            case .incomplete(let expectsContinue):
                if expectsContinue && !h1ContinueSent {
                    h1ContinueSent = true
                    output.append(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
                }
                return
            case .failure(let failure):
                return answerBadHTTP1(failure.status, failure.message)
            case .request(let parsed, let end):
                // The simulators always asked for a length (411), and keep to it: a client's chunked body shows.
                if parsed.header("transfer-encoding") != nil { return answerBadHTTP1(411, "Length Required") }
                let request = handler.makeRequest(streamID: 0)
                request.setHeader(":method", parsed.method)
                request.setHeader(":path", parsed.query.isEmpty ? parsed.path : parsed.path + "?" + parsed.query)
                for (name, value) in parsed.headers where !Self.framingFields.contains(name) { request.setHeader(name, value) }
                parsed.body.withUnsafeBufferPointer { request.append(body: $0) }
                input.removeFirst(end)
                h1ContinueSent = false
                if !parsed.keepAlive { h1CloseAfterAnswer = true }
                h1Busy = true
                handler.requestComplete(request)
            }
        }
    }

    /// What frames a request or its connection: the parser's business, not the handler's.
    private static let framingFields: Set<String> = ["content-length", "transfer-encoding", "connection", "expect"]

    /// A head of up to 64 KiB (as the simulators always took) and the configured body limit.
    private static func http1Limits(body: Int) -> HTTP1Parser.Limits {
        var limits = HTTP1Parser.Limits()
        limits.maxHeadBytes = 64 * 1024
        limits.maxBodyBytes = body
        return limits
    }

    private func answerBadHTTP1(_ status: Int, _ text: String) {
        input.removeAll()
        h1CloseAfterAnswer = true
        h1Busy = true
        respondHTTP1(status: status, headers: [("content-type", "text/plain")], body: Array((text + "\n").utf8))
    }

    private func respondHTTP1(status: Int, headers: [(String, String)], body: [UInt8]) {
        var head = "HTTP/1.1 \(status) \(HTTPResponseHead.reasonPhrase(status))\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "content-length: \(body.count)\r\n"
        if h1CloseAfterAnswer { head += "connection: close\r\n" }
        head += "\r\n"
        output.append(Array(head.utf8) + body)
        h1Busy = false
    }
}

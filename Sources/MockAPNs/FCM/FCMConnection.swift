import CNghttp2
import COpenSSL
import Foundation
import Glibc
import Reactor

/// One client connection of the FCM simulator: TLS, then HTTP/2 (an nghttp2 server session) or HTTP/1.1
/// (a small request parser, one request answered at a time, in order), whichever ALPN chose.
///
/// Owns its transport (socket and `SSL*`) and the `nghttp2_session*` and frees them in `close()`/`deinit`.
/// Confined to the server's loop thread; nghttp2 callbacks reach it through an unretained pointer while
/// `FCMCore.connections` keeps it alive.
final class FCMConnection: FileDescriptorHandler, H2ServerStreamHandler {
    let id: Int
    let fd: Int32
    unowned let core: FCMCore
    private let transport: ServerTransport
    private var events: H2SessionEvents!
    private var session: OpaquePointer?

    private enum Phase {
        case handshaking
        case open
        /// A fault: reads and answers nothing more; closes when the client does.
        case silenced
        /// A fault: answers already given go out, then the connection closes without a word.
        case dropping
        /// Our side is shut; the client's last bytes are read and dropped until it closes too.
        case lingering
        case closed
    }

    private var phase: Phase = .handshaking
    private var closed: Bool {
        if case .closed = phase { return true }
        return false
    }
    private var isHTTP2 = false
    private var protocolName: String { isHTTP2 ? "h2" : "http/1.1" }
    private var streams: [Int32: FCMRequest] = [:]
    private var output = PendingOutput()
    private var watchingWritable = false
    private var lingerTimer: LoopTimer?
    private var goawayLastStream: Int32?
    private var sendCount = 0

    // HTTP/1.1 state: unparsed input, the request being answered, whether to close after it.
    private var input: [UInt8] = []
    private var h1Busy = false
    private var h1CloseAfterAnswer = false
    private var h1ContinueSent = false

    init(id: Int, fd: Int32, core: FCMCore) throws {
        self.id = id
        self.fd = fd
        self.core = core
        transport = try ServerTransport(fd: fd, context: core.sslContext)
        events = H2SessionEvents(self)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    func start() throws {
        try core.loop.register(fd: fd, handler: self, readable: true, writable: false)
    }

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
                core.stats.http2Connections += 1
                do { try startSession() } catch { close(); return false }
            } else {
                core.stats.http1Connections += 1
            }
            return true
        case .wantRead: setWritable(false); return false
        case .wantWrite: setWritable(true); return false
        case .failed:
            core.stats.handshakeFailures += 1
            close()
            return false
        }
    }

    private func startSession() throws {
        let newSession = try core.h2.makeSession(events)
        session = newSession
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: core.configuration.maxConcurrentStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        nghttp2_submit_settings(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        nghttp2_session_set_local_window_size(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
    }

    private func readAvailable() {
        let buffer = core.readBuffer
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
        try? core.loop.setInterest(fd: fd, readable: !silenced, writable: on)
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

    /// close_notify and FIN, then read and drop what the client still sends until it closes (or a second
    /// passes): closing with unread input would make the kernel send RST and lose the last answers.
    private func closeAfterLingering() {
        switch phase {
        case .lingering, .closed: return
        case .handshaking, .open, .silenced, .dropping: phase = .lingering
        }
        transport.shutdownWrite()
        watchingWritable = false
        try? core.loop.setInterest(fd: fd, readable: true, writable: false)
        lingerTimer = core.loop.schedule(afterMilliseconds: 1_000) { [weak self] in self?.close() }
    }

    private func discardInput() {
        if !transport.discardInput(core.readBuffer) { close() }
    }

    func close() {
        guard !closed else { return }
        phase = .closed
        lingerTimer?.cancel()
        lingerTimer = nil
        core.loop.unregister(fd: fd)
        // Freed here, not in deinit, so no nghttp2 callback can reach a connection that is going away.
        if let session { nghttp2_session_del(session) }
        session = nil
        transport.close()
        streams.removeAll()
        core.connectionClosed(self)
    }

    // MARK: requests (both protocols)

    /// Runs a complete request: connection-level faults for sends, then the core, then the answer (after any latency).
    private func dispatch(_ request: FCMRequest) {
        if FCMCore.isSend(request) {
            core.stats.requests += 1
            sendCount += 1
            let script = core.faults.script
            if let limit = script.dropAfterRequests, sendCount > limit {
                core.stats.connectionsDropped += 1
                return drop()
            }
            if let limit = script.silenceAfterRequests, sendCount > limit {
                core.stats.silencedRequests += 1
                return silence()
            }
        }
        let (outcome, delay) = core.handle(request, connection: id, transport: protocolName)
        let goawayAfter = FCMCore.isSend(request) && core.faults.script.goawayAfterRequests == sendCount
        if delay > 0 {
            // Level-triggered epoll would report a pipelined HTTP/1.1 request again and again while this one waits.
            if !isHTTP2 { try? core.loop.setInterest(fd: fd, readable: false, writable: watchingWritable) }
            core.loop.schedule(afterMilliseconds: delay) { [weak self] in
                guard let self, !self.closed else { return }
                self.apply(outcome, to: request, goawayAfter: goawayAfter)
                if !self.isHTTP2, case .open = self.phase {
                    try? self.core.loop.setInterest(fd: self.fd, readable: true, writable: self.watchingWritable)
                    // The next request may already be buffered (in `input` or inside TLS, where epoll cannot see it).
                    self.processHTTP1()
                    self.readAvailable()
                }
                self.flush()
                self.finishIteration()
            }
        } else {
            apply(outcome, to: request, goawayAfter: goawayAfter)
        }
    }

    private func apply(_ outcome: FCMOutcome, to request: FCMRequest, goawayAfter: Bool) {
        if isHTTP2 { guard streams[request.streamID] === request else { return } }
        switch outcome {
        case .answer(let answer):
            if !isHTTP2 && goawayAfter { h1CloseAfterAnswer = true }
            respond(request, answer)
            if isHTTP2 && goawayAfter { sendGoaway(lastStreamID: request.streamID) }
        case .silence:
            if !isHTTP2 { silence() }
        case .drop:
            drop()
        case .goaway:
            if isHTTP2 {
                sendGoaway(lastStreamID: request.streamID - 2)
            } else {
                core.stats.goawaysSent += 1
                h1Busy = false
                h1CloseAfterAnswer = true
                closeAfterLingering()
            }
        }
    }

    private func drop() {
        if !closed { phase = .dropping }
    }

    private func silence() {
        if case .open = phase { phase = .silenced }
        try? core.loop.setInterest(fd: fd, readable: false, writable: false)
    }

    private func respond(_ request: FCMRequest, _ answer: FCMAnswer) {
        guard !request.answered else { return }
        request.answered = true
        if isHTTP2 { respondHTTP2(request, answer) } else { respondHTTP1(answer) }
    }

    // MARK: HTTP/2

    private func sendGoaway(lastStreamID: Int32) {
        guard goawayLastStream == nil, let session else { return }
        core.stats.goawaysSent += 1
        let last = max(0, lastStreamID)
        goawayLastStream = last
        nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, UInt32(NGHTTP2_NO_ERROR.rawValue), nil, 0)
        for (streamID, request) in streams where streamID > last && !request.answered {
            request.answered = true
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, UInt32(NGHTTP2_REFUSED_STREAM.rawValue))
        }
    }

    private func respondHTTP2(_ request: FCMRequest, _ answer: FCMAnswer) {
        guard let session else { return }
        request.pendingBody = answer.body
        H2ServerCallbacks.submitResponse(session, streamID: request.streamID, status: answer.status,
                                         headers: answer.headers + [("content-length", String(answer.body.count))], hasBody: !answer.body.isEmpty)
    }

    func readBody(_ streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let request = streams[streamID] else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        return H2ServerCallbacks.copyBody(&request.pendingBody, into: buffer, length: length, flags: flags)
    }

    func beginStream(_ streamID: Int32) { streams[streamID] = FCMRequest(streamID: streamID) }

    func header(_ streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let request = streams[streamID] else { return }
        let text = String(decoding: value, as: UTF8.self)
        if RequestRules.equal(name, ":path") { request.path = text }
        else if RequestRules.equal(name, ":method") { request.method = text }
        else if RequestRules.equal(name, "authorization") { request.authorization = text }
    }

    func data(_ streamID: Int32, _ chunk: UnsafeBufferPointer<UInt8>) { streams[streamID]?.append(chunk) }

    func streamClosed(_ streamID: Int32) { streams.removeValue(forKey: streamID) }

    func requestComplete(_ streamID: Int32) {
        guard let request = streams[streamID], streamID <= goawayLastStream ?? Int32.max else { return }
        dispatch(request)
    }

    // MARK: HTTP/1.1

    /// Parses the next request out of `input` when it is complete, and dispatches it.
    private func processHTTP1() {
        while !h1Busy, !h1CloseAfterAnswer, case .open = phase {
            guard let headerEnd = Self.find(input, "\r\n\r\n") else {
                if input.count > 64 * 1024 { return answerBadHTTP1(431, "Request Header Fields Too Large") }
                return
            }
            let head = String(decoding: input[0..<headerEnd], as: UTF8.self)
            var lines = head.components(separatedBy: "\r\n")
            let requestLine = lines.removeFirst().split(separator: " ")
            guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else { return answerBadHTTP1(400, "Bad Request") }
            let request = FCMRequest(streamID: 0)
            request.method = String(requestLine[0])
            request.path = String(requestLine[1])
            var length = 0
            var keepAlive = requestLine[2] == "HTTP/1.1"
            var expectContinue = false
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { return answerBadHTTP1(400, "Bad Request") }
                let name = line[..<colon].lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                switch name {
                case "content-length":
                    guard let number = Int(value), number >= 0 else { return answerBadHTTP1(400, "Bad Request") }
                    length = number
                case "transfer-encoding":
                    return answerBadHTTP1(411, "Length Required")
                case "authorization": request.authorization = value
                case "connection":
                    if value.lowercased().contains("close") { keepAlive = false }
                    if value.lowercased().contains("keep-alive") { keepAlive = true }
                case "expect": expectContinue = value.lowercased() == "100-continue"
                default: break
                }
            }
            if length > FCMMessageRules.bodyLimit { return answerBadHTTP1(413, "Payload Too Large") }
            let bodyStart = headerEnd + 4
            guard input.count >= bodyStart + length else {
                if expectContinue && !h1ContinueSent {
                    h1ContinueSent = true
                    output.append(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
                }
                return
            }
            request.body = Array(input[bodyStart..<(bodyStart + length)])
            input.removeFirst(bodyStart + length)
            h1ContinueSent = false
            if !keepAlive { h1CloseAfterAnswer = true }
            h1Busy = true
            dispatch(request)
        }
    }

    private static func find(_ haystack: [UInt8], _ needle: StaticString) -> Int? {
        let pattern = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
        guard haystack.count >= pattern.count else { return nil }
        for start in 0...(haystack.count - pattern.count) where haystack[start] == pattern[0] {
            var match = true
            for offset in 1..<pattern.count where haystack[start + offset] != pattern[offset] { match = false; break }
            if match { return start }
        }
        return nil
    }

    private func answerBadHTTP1(_ status: Int, _ text: String) {
        input.removeAll()
        h1CloseAfterAnswer = true
        h1Busy = true
        respondHTTP1(FCMAnswer(status: status, headers: [("content-type", "text/plain")], body: Array((text + "\n").utf8)))
    }

    private func respondHTTP1(_ answer: FCMAnswer) {
        var head = "HTTP/1.1 \(answer.status) \(Self.reasonPhrase(answer.status))\r\n"
        for (name, value) in answer.headers { head += "\(name): \(value)\r\n" }
        head += "content-length: \(answer.body.count)\r\n"
        if h1CloseAfterAnswer { head += "connection: close\r\n" }
        head += "\r\n"
        output.append(Array(head.utf8) + answer.body)
        h1Busy = false
    }

    private static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 411: return "Length Required"
        case 413: return "Payload Too Large"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        default: return "Status"
        }
    }
}

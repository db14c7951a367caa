import CNghttp2
import COpenSSL
import Foundation
import Glibc
import Reactor

/// One client connection: TLS (or cleartext) plus an nghttp2 server session, and its APNs auth state.
///
/// Owns its transport (socket and `SSL*`) and the `nghttp2_session*` and frees them in `close()`/`deinit`.
/// Confined to the server's loop thread; nghttp2 callbacks reach it through an unretained pointer while
/// `ServerCore.connections` keeps it alive.
final class ServerConnection: FileDescriptorHandler, H2ServerStreamHandler {
    let id: Int
    let fd: Int32
    unowned let core: ServerCore
    private let transport: ServerTransport
    private var events: H2SessionEvents!
    private var session: OpaquePointer?

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
        /// Done after GOAWAY: our side is shut, the client's last bytes are being read and dropped.
        case lingering
        case closed
    }

    private var phase: Phase
    private var closed: Bool {
        if case .closed = phase { return true }
        return false
    }
    private var streams: [Int32: IncomingRequest] = [:]
    private var output = PendingOutput()
    private var watchingWritable = false
    private var lingerTimer: LoopTimer?
    /// The last-stream-id of the GOAWAY we sent; nil until then.
    private var goawayLastStream: Int32?
    private var requestCount = 0
    private var highestStreamID: Int32 = 0
    private var lastActivity: UInt64 = monotonicNanos()
    private var idleTimer: LoopTimer?
    private var openStreams = 0

    // Auth state, as APNs binds it to a connection.
    private var currentToken: VerifiedProviderToken?
    private var tokenAdoptedAt: UInt64 = 0
    private var boundKeyID: String?
    private var certificateTopics: [String]?
    private var streamsRaised = false

    /// The API this connection's port answers.
    let role: ListenerRole

    init(id: Int, fd: Int32, core: ServerCore, role: ListenerRole = .both) throws {
        self.role = role
        self.id = id
        self.fd = fd
        self.core = core
        transport = try ServerTransport(fd: fd, context: core.sslContext)
        phase = core.sslContext == nil ? .open : .handshaking
        events = H2SessionEvents(self)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    func start() throws {
        try core.loop.register(fd: fd, handler: self, readable: true, writable: false)
        if case .open = phase { try startSession() }
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
        if readable || hangup { readAvailable() }
        if closed { return }
        flush()
        finishIteration()
    }

    private func handshake() -> Bool {
        switch transport.handshake() {
        case .done:
            phase = .open
            guard transport.selectedProtocol == "h2" else {
                core.stats.handshakeFailures += 1
                close()
                return false
            }
            certificateTopics = transport.ssl.flatMap { core.certificateTopics(for: $0) }
            do { try startSession() } catch { close(); return false }
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
        let initial: UInt32 = core.configuration.requireAuthentication ? 1 : core.configuration.maxConcurrentStreams
        streamsRaised = !core.configuration.requireAuthentication
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: initial),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        nghttp2_submit_settings(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        nghttp2_session_set_local_window_size(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
        scheduleIdleCheck()
    }

    /// One timer per connection, re-armed for the remaining time, instead of one per request.
    private func scheduleIdleCheck() {
        guard let idle = core.faults.script.idleTimeoutSeconds, idle > 0 else {
            // No idle rule now; look again later in case the config changes at run time.
            idleTimer = core.loop.schedule(afterMilliseconds: 1000) { [weak self] in
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
        idleTimer = core.loop.schedule(afterNanoseconds: limit - min(elapsed, limit)) { [weak self] in
            guard let self, !self.closed else { return }
            self.scheduleIdleCheck()
        }
    }

    private func readAvailable() {
        let buffer = core.readBuffer
        while case .open = phase {
            var wantsWrite = false
            let count = transport.read(buffer.baseAddress!, buffer.count, wantsWrite: &wantsWrite)
            if wantsWrite { setWritable(true) }
            if count == 0 { break }
            if count < 0 { close(); return }
            guard let session else { close(); return }
            let consumed = nghttp2_session_mem_recv(session, buffer.baseAddress!, count)
            if consumed < 0 { close(); return }
        }
        if case .dropping = phase {
            // Answers already given go out (best effort); the request that triggered the drop gets none.
            flush()
            close()
        }
    }

    /// Moves nghttp2's queued frames into TLS until the socket would block.
    func flush() {
        guard session != nil, !closed else { return }
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

    /// Closes once nghttp2 has nothing left to do (after GOAWAY, or when the peer went away).
    private func finishIteration() {
        guard !closed, let session else { return }
        if case .dropping = phase { close(); return }
        if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 && output.isEmpty {
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
        try? core.loop.setInterest(fd: fd, readable: true, writable: false)
        lingerTimer = core.loop.schedule(afterMilliseconds: 1_000) { [weak self] in self?.close() }
    }

    private func discardInput() {
        if !transport.discardInput(core.readBuffer) { close() }  // the client is gone too
    }

    func close() {
        guard !closed else { return }
        phase = .closed
        idleTimer?.cancel()
        idleTimer = nil
        lingerTimer?.cancel()
        lingerTimer = nil
        core.loop.unregister(fd: fd)
        // Freed here, not in deinit, so no nghttp2 callback can reach a connection that is going away.
        if let session { nghttp2_session_del(session) }
        session = nil
        transport.close()
        core.stats.streamsInUse -= openStreams
        openStreams = 0
        streams.removeAll()
        core.connectionClosed(self)
    }

    // MARK: nghttp2 events

    func beginStream(_ streamID: Int32) {
        lastActivity = monotonicNanos()
        if streamID > highestStreamID { highestStreamID = streamID }
        let request = IncomingRequest(streamID: streamID)
        if core.configuration.recordRequests { request.headerLog = [] }
        streams[streamID] = request
        openStreams += 1
        core.stats.streamsInUse += 1
        if openStreams > core.stats.maxConcurrentStreamsInUse { core.stats.maxConcurrentStreamsInUse = openStreams }
    }

    func header(_ streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        streams[streamID]?.setHeader(name: name, value: value)
    }

    func data(_ streamID: Int32, _ chunk: UnsafeBufferPointer<UInt8>) {
        guard let request = streams[streamID] else { return }
        if request.isControl {
            if request.body.count + chunk.count <= 4 << 20 { request.body.append(contentsOf: chunk) }
        } else {
            request.append(body: chunk)
        }
    }

    func streamClosed(_ streamID: Int32) {
        if streams.removeValue(forKey: streamID) != nil {
            openStreams -= 1
            core.stats.streamsInUse -= 1
        }
    }

    /// The body (if any) of an answer still being sent, for the data provider.
    func pendingBody(_ streamID: Int32) -> IncomingRequest? { streams[streamID] }

    func requestComplete(_ streamID: Int32) {
        guard let request = streams[streamID], streamID <= goawayLastStream ?? Int32.max else { return }
        if request.isControl {
            let (status, body) = core.control(request)
            respond(request, status: status, headers: [("content-type", "application/json")], body: body)
            return
        }
        core.stats.requests += 1
        core.recordRequest(request)
        requestCount += 1
        let script = core.faults.script
        if let limit = script.dropAfterRequests, requestCount > limit {
            core.stats.connectionsDropped += 1
            drop()
            return
        }
        if let limit = script.silenceAfterRequests, requestCount > limit {
            core.stats.silencedRequests += 1
            if case .open = phase { phase = .silenced }  // a drop decided earlier in this read still wins
            try? core.loop.setInterest(fd: fd, readable: false, writable: false)
            return
        }
        process(request)
        if let limit = script.goawayAfterRequests, requestCount == limit {
            sendGoaway(lastStreamID: streamID, reason: script.goawayReason ?? "Shutdown")
        }
    }

    private func process(_ request: IncomingRequest) {
        let isManagement = request.path.map { UTF8Matching.hasPrefix($0, BroadcastRules.managementPrefix) } ?? false
        if (role == .push && isManagement) || (role == .management && !isManagement) {
            request.usesRequestID = role == .management
            return reject(request, Rejection(status: 404, reason: "BadPath"))
        }
        if let path = request.path {
            if UTF8Matching.hasPrefix(path, BroadcastRules.broadcastPrefix) { return processBroadcast(request, path: path) }
            if isManagement { return processManagement(request, path: path) }
        }
        let token: String
        switch RequestRules.deviceToken(method: request.method, path: request.path) {
        case .failure(let rejection): return reject(request, rejection)
        case .success(let value): token = value
        }
        var topic = request.topic
        let key: MockProviderKey?
        switch authenticate(request) {
        case .failure(let rejection): return reject(request, rejection)
        case .success(let value): key = value
        }
        if topic == nil, key == nil, let certificateTopics, let first = certificateTopics.first { topic = first }
        if let rejection = RequestRules.validate(request, topic: topic, requirePushType: core.configuration.requirePushType) {
            return reject(request, rejection)
        }
        let effectiveTopic = topic ?? ""
        if let rejection = topicRefusal(key, topic: effectiveTopic) { return reject(request, rejection) }
        applyFaults(request, token: token, topic: effectiveTopic) { [unowned self] in
            self.accept(request, token: token, topic: effectiveTopic)
        }
    }

    /// The fault script's verdict for a request that passed Apple's checks (`token`: the device token or channel ID),
    /// after its latency; `accept` answers it when the verdict is to accept.
    func applyFaults(_ request: IncomingRequest, token: String, topic: String, accept: @escaping () -> Void) {
        let (verdict, delay) = core.faults.decide(token: token, topic: topic)
        if delay > 0 {
            core.loop.schedule(afterMilliseconds: delay) { [weak self] in
                guard let self, !self.closed else { return }
                self.apply(verdict, to: request, accept: accept)
                self.flush()
                self.finishIteration()
            }
        } else {
            apply(verdict, to: request, accept: accept)
        }
    }

    private func apply(_ verdict: FaultVerdict, to request: IncomingRequest, accept: () -> Void) {
        guard streams[request.streamID] === request else { return }
        switch verdict {
        case .accept:
            accept()
        case .reject(let status, let reason, let timestamp):
            reject(request, Rejection(status: status, reason: reason), timestamp: timestamp)
        case .refuseStream:
            core.stats.refusedStreams += 1
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), request.streamID, UInt32(NGHTTP2_REFUSED_STREAM.rawValue))
        case .silence:
            core.stats.silencedRequests += 1
        case .drop:
            core.stats.connectionsDropped += 1
            drop()
        case .goaway(let reason):
            sendGoaway(lastStreamID: request.streamID - 2, reason: reason)
        }
    }

    /// The fault that ends the connection: from any stage but closed (it wins over silence and lingering).
    private func drop() {
        if !closed { phase = .dropping }
    }

    private func sendGoaway(lastStreamID: Int32, reason: String) {
        guard goawayLastStream == nil, let session else { return }
        core.stats.goawaysSent += 1
        let last = max(0, lastStreamID)
        goawayLastStream = last
        let debug = Array(#"{"reason":"\#(reason)"}"#.utf8)
        nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, UInt32(NGHTTP2_NO_ERROR.rawValue), debug, debug.count)
        for (streamID, request) in streams where streamID > last && !request.answered {
            request.answered = true
            core.stats.refusedStreams += 1
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, UInt32(NGHTTP2_REFUSED_STREAM.rawValue))
        }
    }

    // MARK: auth

    /// TopicDisallowed when the provider key may not push to `topic`, TopicMismatch when the client certificate
    /// does not cover it; nil when allowed (or authentication is off).
    func topicRefusal(_ key: MockProviderKey?, topic: String) -> Rejection? {
        guard core.configuration.requireAuthentication else { return nil }
        if let key {
            if !key.allows(topic: topic) { return Rejection(status: 400, reason: "TopicDisallowed") }
        } else if let certificateTopics, !certificateTopics.contains(where: { topic == $0 || UTF8Matching.hasPrefix(topic, $0 + ".") }) {
            return Rejection(status: 403, reason: "TopicMismatch")
        }
        return nil
    }

    func authenticate(_ request: IncomingRequest) -> Result<MockProviderKey?, Rejection> {
        guard core.configuration.requireAuthentication else { return .success(nil) }
        guard let header = request.authorization else {
            if certificateTopics != nil {
                if !streamsRaised { raiseStreams() }
                return .success(nil)
            }
            return .failure(Rejection(status: 403, reason: "MissingProviderToken"))
        }
        let now = wallClockMillis() / 1000
        let verified: VerifiedProviderToken
        if let current = currentToken, current.authorization == header {
            verified = current
        } else {
            guard header.utf8.count > 7, UTF8Matching.hasPrefixIgnoringCase(header, "bearer ") else {
                return .failure(Rejection(status: 403, reason: "InvalidProviderToken"))
            }
            let jwt = String(decoding: header.utf8.dropFirst(7), as: UTF8.self)
            core.stats.tokenVerifications += 1
            guard case .success(var candidate) = core.verifier.verify(jwt) else {
                return .failure(Rejection(status: 403, reason: "InvalidProviderToken"))
            }
            let environment = candidate.key.environment
            if environment != .both && environment != core.configuration.environment && core.configuration.environment != .both {
                return .failure(Rejection(status: 403, reason: "BadEnvironmentKeyIdInToken"))
            }
            if let boundKeyID, boundKeyID != candidate.key.keyID {
                return .failure(Rejection(status: 403, reason: "UnrelatedKeyIdInToken"))
            }
            if now - candidate.issuedAt > core.configuration.tokenLifetimeSeconds {
                return .failure(Rejection(status: 403, reason: "ExpiredProviderToken"))
            }
            let clock = monotonicNanos()
            if currentToken != nil, Double(clock &- tokenAdoptedAt) / 1e9 < core.configuration.tokenUpdateWindowSeconds {
                return .failure(Rejection(status: 429, reason: "TooManyProviderTokenUpdates"))
            }
            candidate.authorization = header
            currentToken = candidate
            tokenAdoptedAt = clock
            boundKeyID = candidate.key.keyID
            verified = candidate
        }
        if now - verified.issuedAt > core.configuration.tokenLifetimeSeconds {
            return .failure(Rejection(status: 403, reason: "ExpiredProviderToken"))
        }
        if !streamsRaised { raiseStreams() }
        return .success(verified.key)
    }

    private func raiseStreams() {
        streamsRaised = true
        submitMaxStreams(core.configuration.maxConcurrentStreams)
    }

    private func submitMaxStreams(_ value: UInt32) {
        guard let session else { return }
        var entry = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: value)
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entry, 1)
    }

    // MARK: answers

    private func accept(_ request: IncomingRequest, token: String, topic: String) {
        let apnsID = request.apnsID ?? core.makeUUID()
        var headers = [("apns-id", apnsID)]
        if core.configuration.environment == .sandbox { headers.append(("apns-unique-id", core.makeUUID())) }
        core.recordAccepted(request, token: token, topic: topic, apnsID: apnsID, connection: id)
        respond(request, status: 200, headers: headers, body: nil)
        core.answered(status: 200, reason: nil)
        if core.faults.script.dropStreamsAfterRejection == true && !streamsRaised && (currentToken != nil || certificateTopics != nil) { raiseStreams() }
    }

    func reject(_ request: IncomingRequest, _ rejection: Rejection, timestamp: Int64? = nil) {
        var body = #"{"reason":"\#(rejection.reason)""#
        if let timestamp { body += #","timestamp":\#(timestamp)"# }
        body += "}"
        // Broadcast and channel management answer with `apns-request-id`, device pushes with `apns-id`.
        let idHeader = request.usesRequestID ? "apns-request-id" : "apns-id"
        let given = request.usesRequestID ? request.requestID : request.apnsID
        let apnsID = given.flatMap { RequestRules.isUUID($0) ? $0 : nil } ?? core.makeUUID()
        respond(request, status: rejection.status, headers: [(idHeader, apnsID), ("content-type", "application/json; charset=utf-8")], body: Array(body.utf8))
        core.answered(status: rejection.status, reason: rejection.reason)
        if core.faults.script.dropStreamsAfterRejection == true && streamsRaised {
            streamsRaised = false
            submitMaxStreams(1)
        }
    }

    func respond(_ request: IncomingRequest, status: Int, headers: [(String, String)], body: [UInt8]?) {
        guard let session, !request.answered else { return }
        request.answered = true
        request.body = body ?? []
        request.bodyTruncated = false
        H2ServerCallbacks.submitResponse(session, streamID: request.streamID, status: status, headers: headers, hasBody: body != nil)
    }

    /// Copies the pending answer body into nghttp2's DATA frame buffer.
    func readBody(_ streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let request = streams[streamID] else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        return H2ServerCallbacks.copyBody(&request.body, into: buffer, length: length, flags: flags)
    }
}

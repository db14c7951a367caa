import Basics
import Glibc
import HTTP1
import HTTP2Server
import Reactor
import TLS

/// The HTTP server on a Reactor event loop for `herald api`. HTTP/1.1: keep-alive, pipelined requests answered in
/// order (one at a time per connection), `100 Continue`. HTTP/2 (`HTTP2Framing`): over TLS when ALPN chose `h2`,
/// and on cleartext when the client opens with the HTTP/2 preface (h2c with prior knowledge). Both framings give
/// the same `HTTP1Parser.Request` to the same handler under the same limits. Everything non-blocking.
///
/// It faces producers over the network, so nothing a client sends can hurt the loop: the request head and body
/// are bounded (`HTTP1Parser.Limits`), at most `maxConnections` are open (a newcomer past that gets a 503 and is
/// closed), a request must arrive whole within `requestTimeoutMilliseconds` of its first byte and an answer be
/// taken within as long, and an idle keep-alive connection is closed after `idleTimeoutMilliseconds`.
/// Loop-confined.
public final class HTTP1Server: FileDescriptorHandler {
    public struct Response: Sendable {
        public var status: Int
        public var contentType: String
        public var body: [UInt8]
        public var headers: [(String, String)]

        public init(status: Int, contentType: String = "application/json", body: [UInt8], headers: [(String, String)] = []) {
            self.status = status
            self.contentType = contentType
            self.body = body
            self.headers = headers
        }
    }

    /// Answers one request; call `respond` exactly once, on the loop, now or later.
    public typealias Handler = (HTTP1Parser.Request, @escaping (Response) -> Void) -> Void
    /// Decides on a request from its head (the body empty) before any of its body is read: a response refuses it
    /// (answered at once, no `100 Continue`, the connection closed after it), nil lets it be read whole.
    public typealias HeadCheck = (HTTP1Parser.Request) -> Response?

    public struct Limits: Sendable {
        public var parser = HTTP1Parser.Limits()
        public var maxConnections = 1024
        public var requestTimeoutMilliseconds = 10_000
        public var idleTimeoutMilliseconds = 60_000
        /// HTTP/2 streams a connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
        public var maxConcurrentStreams = 100
        public init() {}
    }

    public let loop: EventLoop
    public private(set) var port: Int
    public let limits: Limits
    private let handler: Handler
    fileprivate let headCheck: HeadCheck?
    /// HTTPS when set.
    private let tls: TLSServerContext?
    /// Turns a refusal of the parser (or of the server) into the body the API answers with.
    private let errorBody: (Int, String) -> Response
    private var fd: Int32
    private var connections: [Int32: Connection] = [:]
    private var sweepTimer: LoopTimer?
    private let acceptBackoff = AcceptBackoff()
    /// One read buffer for every connection (they take turns on the loop): 10,000 idle connections cost no
    /// 16 KiB each.
    fileprivate var readBuffer = [UInt8](repeating: 0, count: 16 * 1024)
    /// nghttp2's server callbacks, one set for every HTTP/2 connection (nil only if nghttp2 had no memory).
    fileprivate lazy var h2Callbacks: H2ServerCallbacks? = try? H2ServerCallbacks()
    /// What an h2c client sends first (RFC 9113 3.4).
    fileprivate static let h2Preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    public init(loop: EventLoop, host: String, port: Int, limits: Limits = Limits(), tls: TLSServerContext? = nil,
                errorBody: @escaping (Int, String) -> Response, headCheck: HeadCheck? = nil, handler: @escaping Handler) throws(SystemError) {
        loop.preconditionInLoop()
        self.loop = loop
        self.tls = tls
        self.limits = limits
        self.handler = handler
        self.headCheck = headCheck
        self.errorBody = errorBody
        fd = -1
        self.port = 0
        (fd, self.port) = try loop.listen(host: host, port: port, backlog: 1024, handler: self)
        scheduleSweep()
    }

    deinit { close() }

    public var openConnections: Int { connections.count }

    /// Stops listening and drops every open connection.
    public func close() {
        guard fd >= 0 else { return }
        loop.preconditionInLoop()
        sweepTimer?.cancel()
        acceptBackoff.cancel()
        loop.unregister(fd: fd)
        Glibc.close(fd)
        fd = -1
        for connection in Array(connections.values) { connection.close() }
    }

    public func handleIO(readable: Bool, writable: Bool, hangup: Bool) {
        var round = 64
        while fd >= 0 && round > 0 {
            round -= 1
            let accepted: Int32?
            do {
                accepted = try Sockets.accept(fd)
            } catch {
                acceptBackoff.failed(listener: fd, on: loop)
                // Counted and logged (at a bounded rate) with the refusals; the body goes nowhere.
                _ = errorBody(503, "accept failed (\(error)), not listening for \(acceptBackoff.pauseMilliseconds) ms")
                return
            }
            guard let client = accepted else { return }
            acceptBackoff.succeeded()
            // Full: the connection that has been silent longest makes room (issue 51: 1,000 sockets that send
            // nothing must not keep out a producer, nor the probes); only with none silent is the newcomer refused.
            while connections.count >= limits.maxConnections, let silent = longestSilent() { silent.close() }
            if connections.count >= limits.maxConnections + Self.probeSlots {
                // Best effort, the socket's buffer takes it whole; then the slot stays free for the others.
                // (Over TLS the refusal would need a handshake first: such a newcomer is just closed.)
                if tls == nil {
                    let answer = HTTP1Server.serialize(errorBody(503, "too many open connections (\(limits.maxConnections))"), keepAlive: false)
                    _ = try? SocketIO.write(client, answer)
                }
                Glibc.close(client)
                continue
            }
            let connection: Connection
            do {
                connection = try Connection(fd: client, server: self, tls: tls)
                try loop.register(fd: client, handler: connection)
            } catch {
                Glibc.close(client)
                continue
            }
            // Past max_connections: one of the few slots kept for the probes (issue 51: with every slot held,
            // /healthz answered 503 too).
            connection.probeOnly = connections.count >= limits.maxConnections
            connections[client] = connection
        }
    }

    /// A connection this long without a byte may be closed for a newcomer. A real client sends its request (or its
    /// TLS hello) right behind the handshake's last packet, in the same flight, so even over a slow link its first
    /// bytes are in within this; the ones accepted in the same turn of the loop (up to 64) are never taken for
    /// silent. Longer, a burst of silent sockets filled every slot with ones too young to close, and a producer
    /// arriving then was answered 503 (issue 51's hostile run, at 250 ms: one job and one probe of about a hundred, in CI).
    static let silentEnoughNanoseconds: UInt64 = 50_000_000

    /// The open connection that has sent nothing (no request begun, none answered) for longest, if that is at
    /// least `silentEnoughNanoseconds`.
    private func longestSilent() -> Connection? {
        var oldest: (connection: Connection, since: UInt64)?
        let cutoff = monotonicNanos() &- Self.silentEnoughNanoseconds
        for connection in connections.values {
            guard let since = connection.silentSince, since <= cutoff, since < oldest?.since ?? .max else { continue }
            oldest = (connection, since)
        }
        return oldest?.connection
    }

    /// Connections taken past `maxConnections` for `/healthz` and `/readyz` only (any other request on one is
    /// answered 503, and each is closed after its answer).
    public static let probeSlots = 8
    static let probePaths: Set<String> = ["/healthz", "/readyz"]

    fileprivate func closed(_ fd: Int32) { connections[fd] = nil }

    /// Closes connections past their deadline, once a quarter second: one timer for all of them.
    private func scheduleSweep() {
        sweepTimer = loop.schedule(afterMilliseconds: 250) { [weak self] in
            guard let self, self.fd >= 0 else { return }
            let now = monotonicNanos()
            for connection in Array(self.connections.values) where connection.deadline < now { connection.close() }
            self.scheduleSweep()
        }
    }

    static func serialize(_ response: Response, keepAlive: Bool, omitBody: Bool = false) -> [UInt8] {
        // One allocation for the head and the body together.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128 + response.headers.count * 64 + (omitBody ? 0 : response.body.count))
        HTTPResponseHead.append(status: response.status, contentType: response.contentType, contentLength: response.body.count,
                                keepAlive: keepAlive, extra: response.headers, to: &bytes)
        if !omitBody { bytes.append(contentsOf: response.body) }
        return bytes
    }

    /// One client connection: parse, answer, keep alive.
    private final class Connection: FileDescriptorHandler {
        /// Where the connection is in its life; each case carries what only that stage has.
        private enum Phase {
            /// The TLS handshake, since `startedAt`: it counts as the start of the first request, so a silent TLS
            /// client meets the request timeout.
            case handshaking(startedAt: UInt64)
            /// Cleartext and nothing read yet that tells HTTP/1.1 from h2c with prior knowledge (the HTTP/2 preface).
            case awaitingPreface(Reading)
            /// HTTP/1.1 between requests, or reading one into `input`.
            case reading(Reading)
            /// HTTP/1.1: a request is with the handler; the next (pipelined) one's bytes wait in `input`.
            case answering(Answering)
            /// HTTP/1.1: the last answer (a refusal, or one without keep-alive) is being written, then it closes.
            case closing
            /// HTTP/2 once ALPN chose it or the client sent the preface: the framing reads straight from the shared
            /// buffer (no `input`). `pumpScheduled`: a write of its answers is queued for the end of the loop's turn.
            case http2(HTTP2Framing, pumpScheduled: Bool)
            case closed
        }

        private struct Reading {
            /// When the first byte of the request being read arrived; nil while none has.
            var startedAt: UInt64?
            /// `100 Continue` went out for the request being read.
            var sentContinue = false
            /// The server's `headCheck` let the request being read through on its head.
            var headPassed = false
            /// The peer sent its end of file: the requests already in are answered, in order, then it is closed.
            var peerClosed = false
        }

        private struct Answering {
            /// When the first byte of the next request arrived, if one has.
            var nextStartedAt: UInt64?
            /// The peer half-closed meanwhile: epoll would report that on every round until the answer is ready, so
            /// the socket is off the loop until then (`unpark`).
            var parked = false
            var peerClosed = false
        }

        let fd: Int32
        unowned let server: HTTP1Server
        /// Taken in a probe slot (`HTTP1Server.probeSlots`): it may ask for the probes only, once.
        var probeOnly = false
        /// Monotonic nanoseconds after which the sweep closes it.
        var deadline: UInt64 = 0
        /// When it was accepted: until its first answer, silence counts against the request timeout, not the idle
        /// one (issue 51: 200 sockets that sent nothing held every slot for the 60 s idle timeout).
        private let openedAt = monotonicNanos()
        private var answeredOne = false
        /// Bytes (or its end) came during the TLS handshake: a client mid-handshake is not a silent one.
        private var heardInHandshake = false
        private var phase: Phase
        private var input: [UInt8] = []
        /// Bytes of `input` already taken by answered requests.
        private var consumed = 0
        private var output: [UInt8] = []
        private var written = 0
        /// The TLS session over `fd` (HTTPS).
        private let ssl: SSLHandle?

        /// When it was accepted, while it has sent nothing: no request begun, none answered (a TLS handshake is
        /// not a request). Nil once it has.
        var silentSince: UInt64? {
            switch phase {
            case .handshaking: return heardInHandshake ? nil : openedAt
            case .awaitingPreface(let reading), .reading(let reading): return reading.startedAt == nil && !answeredOne ? openedAt : nil
            default: return nil
            }
        }

        private var isOpen: Bool {
            if case .closed = phase { return false }
            return true
        }

        init(fd: Int32, server: HTTP1Server, tls: TLSServerContext?) throws {
            self.fd = fd
            self.server = server
            ssl = try tls.map { tls throws(TLSError) in try SSLHandle(accepting: fd, serverContext: tls.context) }
            phase = ssl != nil ? .handshaking(startedAt: monotonicNanos()) : .awaitingPreface(Reading())
            refreshDeadline()
        }

        func handleIO(readable: Bool, writable: Bool, hangup: Bool) {
            if case .handshaking = phase {
                if readable { heardInHandshake = true }
                return handshake()
            }
            // Read while the handler has a request too (pipelined bytes wait in `input`): keeping the interest
            // as it is saves two epoll_ctl calls per request; `read` stops at the buffer's bound.
            if readable {
                switch phase {
                case .closing, .closed: break
                default: read()
                }
            }
            if isOpen && writable && written < output.count {
                flush()
                if case .http2 = phase { pumpH2() }
            }
            guard hangup else { return }
            switch phase {
            case .answering(var answering):
                // The peer half-closed while the handler has its request: off the loop until the answer is ready.
                guard !answering.parked else { return }
                answering.parked = true
                phase = .answering(answering)
                server.loop.unregister(fd: fd)
            case .closed: return
            default:
                if written >= output.count { close() }
            }
        }

        /// Back on the loop to write the answer.
        private func unpark() {
            guard case .answering(var answering) = phase, answering.parked else { return }
            answering.parked = false
            phase = .answering(answering)
            interested = (false, true)
            do { try server.loop.register(fd: fd, handler: self, readable: false, writable: true) } catch { close() }
        }

        private func handshake() {
            guard let ssl else { return }
            do {
                switch try ssl.handshake() {
                case .done:
                    phase = .reading(Reading())
                    if ssl.alpnSelected == "h2" {
                        startH2()
                        guard isOpen else { return }
                    }
                    refreshDeadline()
                    interest(readable: true, writable: false)
                    pumpH2()
                    read()
                case .wantRead: interest(readable: true, writable: false)
                case .wantWrite: interest(readable: false, writable: true)
                }
            } catch {
                close()
            }
        }

        private func receive() throws -> IOProgress {
            guard let ssl else { return try SocketIO.read(fd, into: &server.readBuffer) }
            let count = server.readBuffer.count
            return try server.readBuffer.withUnsafeMutableBytes { buffer throws(TLSError) in try ssl.read(into: buffer.baseAddress!, count: count) }
        }

        private func send() throws -> IOProgress {
            guard let ssl else { return try SocketIO.write(fd, output, from: written) }
            let offset = written
            return try output.withUnsafeBytes { buffer throws(TLSError) in try ssl.write(from: buffer.baseAddress! + offset, count: buffer.count - offset) }
        }

        /// The epoll interest, changed only when it differs (each change is a system call).
        private var interested = (readable: true, writable: false)

        private func interest(readable: Bool, writable: Bool) {
            guard interested != (readable, writable) else { return }
            interested = (readable, writable)
            try? server.loop.setInterest(fd: fd, readable: readable, writable: writable)
        }

        private func read() {
            let bound = server.limits.parser.maxHeadBytes + server.limits.parser.maxBodyBytes + 64 * 1024
            defer {
                // A full buffer: no more reads until the handler is done (the level-triggered loop must not spin).
                if isOpen && input.count - consumed >= bound { interest(readable: false, writable: interested.writable) }
            }
            while isOpen && input.count - consumed < bound {
                do {
                    switch try receive() {
                    case .bytes(let n):
                        if case .http2(let h2, _) = phase {
                            // Straight from the shared buffer into nghttp2: an HTTP/2 connection keeps no input.
                            guard server.readBuffer.withUnsafeBufferPointer({ h2.receive($0.baseAddress!, count: n) }) else { return close() }
                            if n < server.readBuffer.count { return pumpH2() }
                            continue
                        }
                        noteRequestBytes()
                        input.append(contentsOf: server.readBuffer[0..<n])
                        if n < server.readBuffer.count { return process() }
                        if awaitsHeadCheck {
                            // A head still to decide on: decided now, before more of its body is read.
                            process()
                            if case .closing = phase { return }
                        }
                    case .wouldBlock: return process()
                    case .endOfFile:
                        // A half-close after a whole request still gets its answer.
                        notePeerClosed()
                        process()
                        switch phase {
                        case .answering(let answering):
                            if !answering.parked { interest(readable: false, writable: interested.writable) }
                        case .closed: break
                        default:
                            if written >= output.count { return close() }
                            interest(readable: false, writable: interested.writable)
                        }
                        return
                    }
                } catch {
                    return close()
                }
            }
            process()
        }

        /// A request is being read whose head the server has not let through yet.
        private var awaitsHeadCheck: Bool {
            guard server.headCheck != nil else { return false }
            switch phase {
            case .awaitingPreface: return true
            case .reading(let reading): return !reading.headPassed
            default: return false
            }
        }

        /// Bytes of a request arrived: the request timeout runs from the first of them.
        private func noteRequestBytes() {
            switch phase {
            case .awaitingPreface(var reading) where reading.startedAt == nil:
                reading.startedAt = monotonicNanos()
                phase = .awaitingPreface(reading)
            case .reading(var reading) where reading.startedAt == nil:
                reading.startedAt = monotonicNanos()
                phase = .reading(reading)
            case .answering(var answering) where answering.nextStartedAt == nil:
                answering.nextStartedAt = monotonicNanos()
                phase = .answering(answering)
            default: break
            }
        }

        private func notePeerClosed() {
            switch phase {
            case .awaitingPreface(var reading):
                reading.peerClosed = true
                phase = .awaitingPreface(reading)
            case .reading(var reading):
                reading.peerClosed = true
                phase = .reading(reading)
            case .answering(var answering):
                answering.peerClosed = true
                phase = .answering(answering)
            case .handshaking, .closing, .http2, .closed: break
            }
        }

        /// Takes the next whole request from the input, if any, while none is with the handler.
        private func process() {
            switch phase {
            case .http2: return pumpH2()
            case .awaitingPreface(let reading):
                let preface = HTTP1Server.h2Preface
                let count = min(input.count - consumed, preface.count)
                if input[consumed..<(consumed + count)].elementsEqual(preface[0..<count]) {
                    // A prefix of the preface: wait for the rest (the request timeout runs).
                    guard count == preface.count else { return refreshDeadline() }
                    startH2()
                    guard case .http2(let h2, _) = phase else { return }
                    let ok = input[consumed...].withUnsafeBufferPointer { h2.receive($0.baseAddress!, count: $0.count) }
                    input = []
                    consumed = 0
                    return ok ? pumpH2() : close()
                }
                phase = .reading(reading)
                parseRequest(reading)
            case .reading(let reading): parseRequest(reading)
            case .handshaking, .answering, .closing, .closed: return
            }
        }

        private func parseRequest(_ reading: Reading) {
            switch HTTP1Parser.parse(input[consumed...], limits: server.limits.parser) {
            case .incomplete(let expectsContinue):
                var reading = reading
                if input.count == consumed { reading.startedAt = nil }
                if !reading.headPassed, let check = server.headCheck, let head = HTTP1Parser.head(input[consumed...], limits: server.limits.parser) {
                    if let refusal = check(head) {
                        // Refused on its head: answered before any more of its body is read, and closed after.
                        phase = .closing
                        return queue(HTTP1Server.serialize(refusal, keepAlive: false))
                    }
                    reading.headPassed = true
                }
                let sendsContinue = expectsContinue && !reading.sentContinue
                if sendsContinue { reading.sentContinue = true }
                phase = .reading(reading)
                if sendsContinue { queue(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) }
                refreshDeadline()
            case .failure(let failure):
                phase = .closing
                queue(HTTP1Server.serialize(server.errorBody(failure.status, failure.message), keepAlive: false))
            case .request(let request, let end):
                consumed = end
                if probeOnly && !HTTP1Server.probePaths.contains(request.path) {
                    phase = .closing
                    return queue(HTTP1Server.serialize(server.errorBody(503, "too many open connections (\(server.limits.maxConnections))"), keepAlive: false))
                }
                phase = .answering(Answering(peerClosed: reading.peerClosed))
                let keepAlive = request.keepAlive && !probeOnly
                let head = request.method == "HEAD"
                refreshDeadline()
                server.handler(request) { [weak self] response in
                    guard let self, case .answering(let answering) = self.phase else { return }
                    self.unpark()
                    guard self.isOpen else { return }
                    self.answeredOne = true
                    self.phase = keepAlive ? .reading(Reading(startedAt: answering.nextStartedAt, peerClosed: answering.peerClosed)) : .closing
                    self.queue(HTTP1Server.serialize(response, keepAlive: keepAlive, omitBody: head))
                    if case .reading = self.phase {
                        if self.consumed > 0 {
                            if self.consumed == self.input.count { self.input = [] } else { self.input.removeFirst(self.consumed) }
                            self.consumed = 0
                        }
                        self.process()
                    }
                    if answering.peerClosed && self.written >= self.output.count {
                        switch self.phase {
                        case .answering, .closed: break
                        default: self.close()
                        }
                    }
                }
            }
        }

        private func startH2() {
            // The probe slots serve HTTP/1.1 probes only.
            guard !probeOnly else { return close() }
            guard let callbacks = server.h2Callbacks,
                  let framing = HTTP2Framing(callbacks: callbacks, limits: server.limits, handler: server.handler, headCheck: server.headCheck, errorBody: server.errorBody,
                                             answered: { [weak self] in self?.schedulePump() })
            else { return close() }
            phase = .http2(framing, pumpScheduled: false)
        }

        /// Answers that come back from Redis one by one (a reply each, read together) are written together at
        /// the end of the loop's turn: one write for all the streams answered in it, not one each.
        private func schedulePump() {
            guard case .http2(let h2, pumpScheduled: false) = phase else { return }
            phase = .http2(h2, pumpScheduled: true)
            server.loop.schedule(afterNanoseconds: 0) { [weak self] in
                guard let self else { return }
                if case .http2(let h2, pumpScheduled: true) = self.phase { self.phase = .http2(h2, pumpScheduled: false) }
                self.pumpH2()
            }
        }

        /// Writes what nghttp2 has to send, as long as the socket takes it; closes once both sides are done.
        private func pumpH2() {
            guard case .http2(let h2, _) = phase else { return }
            while isOpen && written >= output.count {
                var bytes: [UInt8] = []
                guard h2.output(into: &bytes) else { return close() }
                if bytes.isEmpty { break }
                queue(bytes)
            }
            guard isOpen else { return }
            if written >= output.count && h2.isFinished { return close() }
            refreshDeadline()
        }

        private func queue(_ bytes: [UInt8]) {
            if written >= output.count {
                output = bytes
                written = 0
            } else {
                output += bytes
            }
            flush()
        }

        private func flush() {
            while isOpen && written < output.count {
                do {
                    switch try send() {
                    case .bytes(let n): written += n
                    case .wouldBlock:
                        refreshDeadline()
                        interest(readable: false, writable: true)
                        return
                    case .endOfFile: return close()
                    }
                } catch {
                    return close()
                }
            }
            if case .closing = phase { return close() }
            // Released, not kept: an idle keep-alive connection should hold no buffer.
            output = []
            written = 0
            refreshDeadline()
            interest(readable: true, writable: false)
        }

        /// A partial request or an unwritten answer: the request timeout; idle: the idle timeout; with the
        /// handler: the handler answers (its Redis calls have their own timeouts).
        private func refreshDeadline() {
            let now = monotonicNanos()
            let requestTimeout = UInt64(server.limits.requestTimeoutMilliseconds) * 1_000_000
            let started: UInt64?
            switch phase {
            case .http2(let h2, _):
                if written < output.count {
                    deadline = now &+ requestTimeout
                } else if let started = h2.oldestPartialRequest {
                    deadline = started &+ requestTimeout
                } else {
                    deadline = h2.hasRequestInHand ? UInt64.max : now &+ UInt64(server.limits.idleTimeoutMilliseconds) * 1_000_000
                }
                return
            case .answering:
                deadline = UInt64.max
                return
            case .handshaking(let startedAt): started = startedAt
            case .awaitingPreface(let reading), .reading(let reading): started = reading.startedAt ?? (answeredOne ? nil : openedAt)
            case .closing, .closed: started = nil
            }
            if written < output.count {
                deadline = now &+ requestTimeout
            } else if let started {
                deadline = started &+ requestTimeout
            } else {
                deadline = now &+ UInt64(server.limits.idleTimeoutMilliseconds) * 1_000_000
            }
        }

        func close() {
            guard isOpen else { return }
            phase = .closed
            ssl?.shutdown()
            server.loop.unregister(fd: fd)
            Glibc.close(fd)
            server.closed(fd)
        }
    }
}

import Basics
import Glibc
import HTTP1
import Reactor

/// A small HTTP/1.1 server on an event loop, for `/metrics`, health checks and the dashboard: GET and HEAD
/// only, one request per connection (`Connection: close`), everything non-blocking through the Reactor.
///
/// It faces whatever connects to the port, so nothing a client sends can hurt the loop it shares with the
/// worker: a request head is at most `maxRequestBytes` (else 431), a connection gets `timeoutMilliseconds`
/// from accept to its last byte written (a slow or silent client is closed), at most `maxConnections` are
/// open, and requests are read by `herald api`'s `HTTP1Parser`, whose refusals (400, 413, 431, 501, 505) are
/// answered as it words them. When all are open, a newcomer takes the place of the oldest one
/// still without a whole request head (else it is closed at once): slow sockets holding every slot (a
/// slowloris) cannot starve the health probes, which send their head at once. A round accepts at most a
/// quarter of the slots, so a newcomer is read before newer ones can push it out. Loop-confined (checked).
public final class HTTPListener: FileDescriptorHandler {
    /// The request as the one HTTP/1.1 parser reads it (method, path without its query, query, fields).
    public typealias Request = HTTP1Parser.Request

    public struct Response: Sendable {
        public var status: Int
        public var contentType: String
        public var body: [UInt8]
        public var headers: [(String, String)] = []

        public init(status: Int, contentType: String = "text/plain; charset=utf-8", body: String, headers: [(String, String)] = []) {
            self.status = status
            self.contentType = contentType
            self.body = Array(body.utf8)
            self.headers = headers
        }
    }

    /// Answers one request; call `respond` exactly once, on the loop, now or later.
    public typealias Handler = (Request, @escaping (Response) -> Void) -> Void

    public struct Limits: Sendable {
        /// The request head, and the body a request other than GET or HEAD may carry before its 405.
        public var maxRequestBytes = 8192
        public var timeoutMilliseconds = 10_000
        public var maxConnections = 64
        public init() {}
    }

    public let loop: EventLoop
    public private(set) var port: Int
    private let limits: Limits
    /// `limits` as the parser takes them.
    private let parserLimits: HTTP1Parser.Limits
    private let handler: Handler
    private var fd: Int32
    private var connections: [Int32: Connection] = [:]
    private let acceptBackoff = AcceptBackoff()

    public init(loop: EventLoop, host: String, port: Int, limits: Limits = Limits(), handler: @escaping Handler) throws(SystemError) {
        loop.preconditionInLoop()
        self.loop = loop
        self.limits = limits
        var parserLimits = HTTP1Parser.Limits()
        parserLimits.maxHeadBytes = limits.maxRequestBytes
        parserLimits.maxBodyBytes = limits.maxRequestBytes
        self.parserLimits = parserLimits
        self.handler = handler
        fd = -1
        self.port = 0
        (fd, self.port) = try loop.listen(host: host, port: port, backlog: 128, handler: self)
    }

    deinit { close() }

    /// Stops listening and drops every open connection.
    public func close() {
        guard fd >= 0 else { return }
        loop.preconditionInLoop()
        acceptBackoff.cancel()
        loop.unregister(fd: fd)
        Glibc.close(fd)
        fd = -1
        for connection in Array(connections.values) { connection.close() }
    }

    public var openConnections: Int { connections.count }

    public func handleIO(readable: Bool, writable: Bool, hangup: Bool) {
        // The rest wait in the kernel's backlog for the next round (the loop is level-triggered).
        var round = max(1, limits.maxConnections / 4)
        while fd >= 0 && round > 0 {
            round -= 1
            let accepted: Int32?
            do {
                accepted = try Sockets.accept(fd)
            } catch {
                acceptBackoff.failed(listener: fd, on: loop)  // EMFILE and the like: the worker goes on.
                return
            }
            guard let client = accepted else { return }
            acceptBackoff.succeeded()
            let now = monotonicNanos()
            if connections.count >= limits.maxConnections {
                guard let slow = oldestWithoutHead() else {
                    Glibc.close(client)
                    continue
                }
                slow.close()
            }
            let connection = Connection(fd: client, listener: self, acceptedAt: now)
            do {
                try loop.register(fd: client, handler: connection)
            } catch {
                Glibc.close(client)
                continue
            }
            connections[client] = connection
            connection.timer = loop.schedule(afterMilliseconds: limits.timeoutMilliseconds) { [weak connection] in connection?.close() }
        }
    }

    fileprivate func closed(_ fd: Int32) { connections[fd] = nil }

    private func oldestWithoutHead() -> Connection? {
        var oldest: Connection?
        for connection in connections.values where !connection.answered {
            if oldest.map({ connection.acceptedAt < $0.acceptedAt }) ?? true { oldest = connection }
        }
        return oldest
    }

    /// The whole answer: never kept alive (one request per connection), never cached.
    static func serialize(_ response: Response, omitBody: Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        HTTPResponseHead.append(status: response.status, contentType: response.contentType, contentLength: response.body.count,
                                keepAlive: false, extra: [("Cache-Control", "no-store")] + response.headers, to: &bytes)
        if !omitBody { bytes += response.body }
        return bytes
    }

    /// One accepted client: reads the request head, asks the handler, writes the answer, closes.
    private final class Connection: FileDescriptorHandler {
        let fd: Int32
        unowned let listener: HTTPListener
        /// Monotonic nanoseconds.
        let acceptedAt: UInt64
        var timer: LoopTimer?
        private var input: [UInt8] = []
        private var output: [UInt8] = []
        private var written = 0
        /// True once the whole head is in (or an error answer is on its way).
        private(set) var answered = false
        private var isOpen = true

        init(fd: Int32, listener: HTTPListener, acceptedAt: UInt64) {
            self.fd = fd
            self.listener = listener
            self.acceptedAt = acceptedAt
        }

        func handleIO(readable: Bool, writable: Bool, hangup: Bool) {
            if readable && !answered { read() }
            if isOpen && writable && !output.isEmpty { flush() }
            // Gone before its answer was written (a half-close counts: nobody needs one answer per byte).
            if isOpen && hangup && output.isEmpty { return close() }
            // Waiting for the handler: more bytes (pipelining) must not make the level-triggered loop spin.
            if isOpen && answered && output.isEmpty { try? listener.loop.setInterest(fd: fd, readable: false, writable: false) }
        }

        private func read() {
            var chunk = [UInt8](repeating: 0, count: 2048)
            while isOpen && !answered {
                do {
                    switch try SocketIO.read(fd, into: &chunk) {
                    case .bytes(let n): input.append(contentsOf: chunk[0..<n])
                    case .wouldBlock: return
                    case .endOfFile: return close()
                    }
                } catch {
                    return close()
                }
                // Bytes past the request (pipelined ones) are never read: one request per connection.
                switch HTTP1Parser.parse(input[...], limits: listener.parserLimits) {
                case .incomplete: continue
                case .failure(let failure): return answer(Response(status: failure.status, body: failure.message + "\n"), head: false)
                case .request(let request, _): return dispatch(request)
                }
            }
        }

        private func dispatch(_ request: Request) {
            guard request.method == "GET" || request.method == "HEAD" else {
                return answer(Response(status: 405, body: "only GET and HEAD\n", headers: [("Allow", "GET, HEAD")]), head: false)
            }
            answered = true
            listener.handler(request) { [weak self] response in
                self?.answer(response, head: request.method == "HEAD")
            }
        }

        private func answer(_ response: Response, head: Bool) {
            guard isOpen, output.isEmpty else { return }
            answered = true
            output = HTTPListener.serialize(response, omitBody: head)
            flush()
        }

        private func flush() {
            while isOpen && written < output.count {
                do {
                    switch try SocketIO.write(fd, output, from: written) {
                    case .bytes(let n): written += n
                    case .wouldBlock:
                        try? listener.loop.setInterest(fd: fd, readable: false, writable: true)
                        return
                    case .endOfFile: return close()
                    }
                } catch {
                    return close()
                }
            }
            if written >= output.count { close() }
        }

        func close() {
            guard isOpen else { return }
            isOpen = false
            timer?.cancel()
            timer = nil
            listener.loop.unregister(fd: fd)
            Glibc.shutdown(fd, Int32(SHUT_RDWR))
            Glibc.close(fd)
            listener.closed(fd)
        }
    }
}

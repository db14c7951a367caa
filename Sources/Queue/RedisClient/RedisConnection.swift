import Basics
import Glibc
import Reactor
import TLS

/// A pipelined Redis client on a Reactor event loop: its own non-blocking socket, hiredis's reader for replies.
///
/// Loop-confined, not Sendable: create it anywhere, then call every method (and read every property) on
/// `loop`'s thread; completions run there too, in the order the commands were sent. Its state is one
/// `RedisConnectionPhase` whose cases own what only that stage has (socket, transport, reader, replies awaited):
/// leaving a stage, or `close()`, frees them.
///
/// Reconnects by itself with back-off (100 ms doubling to 5 s, with jitter) and runs AUTH and SELECT on every
/// (re)connect. Commands in flight when the connection drops fail with `.connectionLost` (outcome unknown);
/// commands sent while disconnected wait in a bounded queue (`Options.waitingLimit`) and go out once connected,
/// or fail with `.notConnected` when the queue is full or they waited longer than the command timeout. A
/// command without a reply after the command timeout fails with `.timeout` and the connection is re-made
/// (the replies can no longer be matched to commands otherwise).
public final class RedisConnection: FileDescriptorHandler {
    public enum State: Sendable, Equatable {
        case connecting
        case connected
        /// Lost or failed, with why; a reconnect is scheduled after `retryInMilliseconds`.
        case disconnected(reason: String, retryInMilliseconds: Int)
        case closed
    }

    public struct Options: Sendable {
        public var connectTimeoutMilliseconds = 2_000
        public var commandTimeoutMilliseconds = 5_000
        /// Commands that may wait for a connection; more fail fast with `.notConnected`.
        public var waitingLimit = 10_000
        public var reconnectInitialMilliseconds = 100
        public var reconnectMaxMilliseconds = 5_000
        /// CA, client certificate, server name and verification for `rediss://` URLs; nil verifies against the
        /// system trust store. Ignored for `redis://` and `unix://`.
        public var tls: TLSContext?
        public init() {}
    }

    public typealias Completion = (Result<RESPValue, RedisError>) -> Void

    private struct Waiting {
        /// The command already encoded as RESP.
        let command: [UInt8]
        let completion: Completion
        let deadline: UInt64
    }

    public let loop: EventLoop
    public let url: RedisURL
    public let options: Options
    /// Called on the loop on every state change, for logs and metrics.
    public var onStateChange: ((State) -> Void)?
    public private(set) var state: State = RedisConnectionPhase.idle.state
    /// Round trips, failures and connects so far, for metrics.
    public private(set) var stats = RedisConnectionStats()
    /// Where to connect instead of `url`'s host and port (Sentinel), asked before every (re)connect; set before
    /// `start()`. Held strongly: the source holds this connection weakly.
    public var addressSource: (any RedisAddressSource)? {
        didSet { addressSource?.attach(to: self) }
    }

    /// The stage of the connection's life and what only that stage has (socket, transport, replies awaited).
    private(set) var phase = RedisConnectionPhase.idle
    /// Commands sent while no link carries commands; they go out once one does.
    private var waiting = FIFO<Waiting>()
    private var flushScheduled = false
    /// Connects that failed in a row, for the back-off.
    private var failures = 0
    private var tickTimer: LoopTimer?
    private var started = false
    private var readBuffer = [UInt8](repeating: 0, count: 65_536)

    public init(url: RedisURL, loop: EventLoop, options: Options = Options()) {
        self.url = url
        self.loop = loop
        self.options = options
    }

    // The socket closes itself with the phase that holds it.

    /// Starts connecting (idempotent). Commands sent before this wait for the connection.
    public func start() {
        guard !started else { return }
        started = true
        scheduleTick()
        connect()
    }

    /// True when commands go straight out.
    public var isConnected: Bool { state == .connected }

    /// Commands sent and not yet answered, plus those waiting for a connection.
    public var pendingCount: Int { (phase.link?.inFlight.count ?? 0) + waiting.count }

    /// Closes for good: everything pending fails with `.closed`.
    public func close() {
        guard !phase.isClosed else { return }
        tickTimer?.cancel()
        let lost = dropLink().map(\.completion) + waiting.removeAll().map(\.completion)
        transition(to: .closed)
        addressSource?.detach()
        for completion in lost { completion(.failure(.closed)) }
    }

    // MARK: sending

    /// Sends one command; `completion` gets the reply (top-level error replies as `.failure(.server)`).
    public func send(_ args: [[UInt8]], completion: @escaping Completion) {
        send(encoded: RESPEncoder.encode(args), completion: completion)
    }

    /// Sends a command already encoded as RESP (see `RESPArguments`).
    func send(encoded command: [UInt8], completion: @escaping Completion) {
        let deadline = monotonicNanos() &+ UInt64(options.commandTimeoutMilliseconds) * 1_000_000
        switch phase {
        case .connected(let link):
            link.output.append(contentsOf: command)
            link.inFlight.append(PendingReply(completion: completion, deadline: deadline))
            scheduleFlush(link)
        case .closed:
            completion(.failure(.closed))
        default:
            guard waiting.count < options.waitingLimit else {
                completion(.failure(.notConnected))
                return
            }
            waiting.append(Waiting(command: command, completion: completion, deadline: deadline))
            if !started { start() }
        }
    }

    public func send(_ args: [String], completion: @escaping Completion) {
        send(args.map { Array($0.utf8) }, completion: completion)
    }

    /// EVALSHA, falling back to EVAL (which also caches the script) when Redis answers NOSCRIPT.
    public func evalScript(_ script: RedisScript, keys: [[UInt8]], args: [[UInt8]], completion: @escaping Completion) {
        send(script.evalsha(keys: keys, args: args)) { [weak self] result in
            if case .failure(.server(let message)) = result, message.hasPrefix("NOSCRIPT"), let self {
                self.send(script.eval(keys: keys, args: args), completion: completion)
            } else {
                completion(result)
            }
        }
    }

    /// EVALSHA with arguments encoded in place (the hot path), falling back to EVAL on NOSCRIPT.
    public func evalScript(_ script: RedisScript, keys: [[UInt8]], arguments: RESPArguments, completion: @escaping Completion) {
        let prefix = [Array("EVALSHA".utf8), Array(script.sha1.utf8), Array(String(keys.count).utf8)] + keys
        send(encoded: arguments.command(prefix: prefix)) { [weak self] result in
            if case .failure(.server(let message)) = result, message.hasPrefix("NOSCRIPT"), let self {
                let evalPrefix = [Array("EVAL".utf8), Array(script.source.utf8), Array(String(keys.count).utf8)] + keys
                self.send(encoded: arguments.command(prefix: evalPrefix), completion: completion)
            } else {
                completion(result)
            }
        }
    }

    /// One write per loop iteration for a burst of sends; none while writability is awaited (it flushes then).
    private func scheduleFlush(_ link: RedisLink) {
        guard !flushScheduled, !link.socket.watchingWritable else { return }
        flushScheduled = true
        loop.schedule(afterNanoseconds: 0) { [weak self] in
            guard let self else { return }
            self.flushScheduled = false
            if let link = self.phase.commandLink { self.flush(link) }
        }
    }

    private func flush(_ link: RedisLink) {
        write: while link.outputOffset < link.output.count {
            do {
                switch try link.transport.write(link.socket.fd, link.output, from: link.outputOffset) {
                case .bytes(let written): link.outputOffset += written
                case .wouldBlock, .endOfFile: break write
                }
            } catch {
                connectionLost(error.description)
                return
            }
        }
        if link.outputOffset == link.output.count {
            link.output.removeAll(keepingCapacity: link.output.count < 1 << 20)
            link.outputOffset = 0
            try? link.socket.watchWritable(false)
        } else {
            try? link.socket.watchWritable(true)
        }
    }

    // MARK: connecting

    /// Asks the address source (or takes `url`'s endpoint) and tries its addresses in turn.
    private func connect() {
        guard !phase.isClosed else { return }
        transition(to: .resolving)
        if let source = addressSource {
            source.resolve { [weak self] result in self?.resolved(result) }
        } else {
            connect(to: url.endpoint)
        }
    }

    /// The address source answered: connect there, or back off and ask again.
    private func resolved(_ result: Result<RedisURL.Endpoint, RedisError>) {
        guard case .resolving = phase else { return }
        switch result {
        case .success(let endpoint): connect(to: endpoint)
        case .failure(let error): connectFailed(error.description)
        }
    }

    private func connect(to endpoint: RedisURL.Endpoint) {
        let addresses: [SocketAddress]
        switch endpoint {
        case .unix(let path):
            addresses = [SocketAddress(unixPath: path)]
        case .tcp(let host, let port):
            do { addresses = try Sockets.resolve(host: host, port: port) } catch {
                connectFailed(error.description)
                return
            }
        }
        guard let first = addresses.first else { return connectFailed("\(endpoint): no address") }
        tryAddress(first, then: Array(addresses.dropFirst()), of: endpoint)
    }

    private func tryAddress(_ address: SocketAddress, then remaining: [SocketAddress], of endpoint: RedisURL.Endpoint) {
        let deadline = monotonicNanos() &+ UInt64(options.connectTimeoutMilliseconds) * 1_000_000
        let attempt = ConnectAttempt(endpoint: endpoint, address: address, remaining: remaining, deadline: deadline)
        let socket: SocketHandle
        do { socket = SocketHandle(fd: try Sockets.startConnect(to: address), loop: loop) } catch {
            return connectFailed("\(address): \(error)", after: attempt)
        }
        do { try socket.register(self) } catch {
            socket.close()
            return connectFailed("\(address): \(error)", after: attempt)
        }
        transition(to: .connecting(attempt, socket))
    }

    /// A connect failed before `connected`: the attempt's next address, or back-off when none is left.
    private func connectFailed(_ reason: String, after failed: ConnectAttempt? = nil) {
        let attempt = failed ?? phase.attempt
        let lost = dropLink()
        // Phase first: completions that re-send must find the connection down, not write into a dead socket.
        if let attempt, let next = attempt.remaining.first {
            transition(to: .resolving)
            fail(lost)
            if case .resolving = phase { tryAddress(next, then: Array(attempt.remaining.dropFirst()), of: attempt.endpoint) }
            return
        }
        scheduleReconnect(reason)
        fail(lost)
    }

    private func scheduleReconnect(_ reason: String) {
        guard !phase.isClosed else { return }
        let base = min(options.reconnectMaxMilliseconds, options.reconnectInitialMilliseconds << min(failures, 16))
        failures += 1
        let delay = max(1, Int(Double(base) * Double.random(in: 0.5...1.0)))
        let timer = loop.schedule(afterMilliseconds: delay) { [weak self] in
            guard let self, case .backingOff = self.phase else { return }
            self.connect()
        }
        transition(to: .backingOff(reason: reason, retryInMilliseconds: delay, timer: timer))
    }

    /// TCP is up: the transport (TLS named for the host actually reached, a sentinel's answer, unless
    /// server_name is set), then its handshake.
    private func tcpConnected(_ attempt: ConnectAttempt, _ socket: SocketHandle) {
        if let error = Sockets.connectError(socket.fd) { return connectFailed(error.description) }
        var reached = url
        reached.endpoint = attempt.endpoint
        let link: RedisLink
        do { link = RedisLink(socket: socket, transport: try RedisTransport.start(for: reached, tls: options.tls, fd: socket.fd)) } catch {
            return connectFailed(error.description)
        }
        transition(to: .securing(attempt, link))
        secure(attempt, link)
    }

    private func secure(_ attempt: ConnectAttempt, _ link: RedisLink) {
        do {
            switch try link.transport.handshake() {
            case .done: handshake(attempt, link)
            case .wantRead: try? link.socket.watchWritable(false)
            case .wantWrite: try? link.socket.watchWritable(true)
            }
        } catch {
            connectFailed(error.description)
        }
    }

    /// AUTH, SELECT and the address source's check, pipelined ahead of every waiting command.
    private func handshake(_ attempt: ConnectAttempt, _ link: RedisLink) {
        try? link.socket.watchWritable(false)
        var commands: [(command: [[UInt8]], check: ((RESPValue) -> String?)?)] = url.handshake.map { ($0, nil) }
        if let check = addressSource?.handshakeCheck { commands.append(check) }
        if commands.isEmpty { return handshakeDone(link) }
        transition(to: .handshaking(attempt, link))
        var remaining = commands.count
        for (command, check) in commands {
            RESPEncoder.append(command, to: &link.output)
            let name = String(decoding: command[0], as: UTF8.self)
            link.inFlight.append(PendingReply(completion: { [weak self] result in
                guard let self, case .handshaking(_, let current) = self.phase, current === link else { return }
                switch result {
                case .success(let reply):
                    if let problem = check?(reply) { return self.connectionLost(problem) }
                    remaining -= 1
                    if remaining == 0 { self.handshakeDone(link) }
                case .failure(let error):
                    if case .server(let message) = error { self.connectionLost("\(name) refused: \(message)") }
                }
            }, deadline: attempt.deadline))
        }
        flush(link)
    }

    private func handshakeDone(_ link: RedisLink) {
        failures = 0
        stats.connects &+= 1
        transition(to: .connected(link))
        let now = monotonicNanos()
        var expired: [Completion] = []
        while let item = waiting.popFirst() {
            if item.deadline < now {
                expired.append(item.completion)
                continue
            }
            link.output.append(contentsOf: item.command)
            link.inFlight.append(PendingReply(completion: item.completion, deadline: item.deadline))
        }
        flush(link)
        for completion in expired { completion(.failure(.notConnected)) }
    }

    // MARK: I/O

    public func handleIO(readable: Bool, writable: Bool, hangup: Bool) {
        switch phase {
        case let .connecting(attempt, socket):
            if readable || writable || hangup { tcpConnected(attempt, socket) }
        case let .securing(attempt, link):
            secure(attempt, link)
        case let .handshaking(_, link), let .connected(link):
            if readable || hangup { readAvailable(link) }
            if writable, phase.commandLink === link { flush(link) }
        case .idle, .resolving, .backingOff, .closed:
            break
        }
    }

    private func readAvailable(_ link: RedisLink) {
        while phase.commandLink === link {
            let count: Int
            do {
                switch try link.transport.read(link.socket.fd, into: &readBuffer) {
                case .bytes(let n): count = n
                case .wouldBlock: return
                case .endOfFile:
                    connectionLost("Redis closed the connection")
                    return
                }
            } catch {
                connectionLost(error.description)
                return
            }
            do {
                try link.reader.feed(readBuffer, count: count)
                while let reply = try link.reader.next() {
                    guard let pending = link.inFlight.popFirst() else {
                        connectionLost("reply without a command")
                        return
                    }
                    stats.roundTrips &+= 1
                    if case .error(let message) = reply {
                        // NOSCRIPT is the normal first call of a script (EVAL follows), not a failure.
                        if !message.hasPrefix("NOSCRIPT") { stats.errors &+= 1 }
                        pending.completion(.failure(.server(message)))
                        // A demoted master refuses writes: drop it and ask the address source again.
                        if addressSource != nil, message.hasPrefix("READONLY") {
                            connectionLost("the server became a replica (READONLY); asking for the master again")
                            return
                        }
                    } else {
                        pending.completion(.success(reply))
                    }
                    if phase.commandLink !== link { return }
                }
            } catch {
                connectionLost("\(error)")
                return
            }
            if count < readBuffer.count { return }
        }
    }

    /// Drops the connection and connects again (the address source said the master moved). Commands in
    /// flight fail with `.connectionLost`, as on any lost connection.
    public func reconnect(reason: String) {
        connectionLost(reason)
    }

    /// A socket that was up (or trying) is gone: back off, then connect afresh (the address source asked again,
    /// no other address of this attempt tried).
    private func connectionLost(_ reason: String) {
        guard phase.socket != nil else { return }
        if case .connected = phase { failures = 0 }
        let lost = dropLink()
        scheduleReconnect(reason)
        fail(lost)
    }

    private func fail(_ lost: [PendingReply]) {
        stats.errors &+= UInt64(lost.count)
        for pending in lost { pending.completion(.failure(.connectionLost)) }
    }

    /// Closes the socket (after a close_notify when TLS is up) and hands back what was in flight on it; the
    /// caller moves to the next phase, which frees the rest.
    private func dropLink() -> [PendingReply] {
        if case let .backingOff(_, _, timer) = phase { timer.cancel() }
        if let link = phase.link { return link.close() }
        phase.socket?.close()
        return []
    }

    private func transition(to next: RedisConnectionPhase) {
        phase = next
        let new = next.state
        guard new != state else { return }
        state = new
        onStateChange?(new)
    }

    // MARK: timeouts

    private func scheduleTick() {
        let interval = max(10, min(250, options.commandTimeoutMilliseconds / 4))
        tickTimer = loop.schedule(afterMilliseconds: interval) { [weak self] in
            guard let self, !self.phase.isClosed else { return }
            self.checkDeadlines()
            self.scheduleTick()
        }
    }

    private func checkDeadlines() {
        let now = monotonicNanos()
        if let attempt = phase.attempt, now > attempt.deadline {
            let hint = phase.link?.transport.timeoutHint ?? ""
            connectFailed("connect timed out after \(options.connectTimeoutMilliseconds) ms\(hint)")
        } else if let link = phase.commandLink, let head = link.inFlight.first, head.deadline < now {
            let timedOut = link.inFlight.popFirst()!
            stats.errors &+= 1
            connectionLost("no reply within \(options.commandTimeoutMilliseconds) ms")
            timedOut.completion(.failure(.timeout))
        }
        if state != .connected {
            while let head = waiting.first, head.deadline < now {
                _ = waiting.popFirst()
                stats.errors &+= 1
                head.completion(.failure(.notConnected))
            }
        }
    }
}

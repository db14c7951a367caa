import Basics
import Glibc
import Reactor
import TLS

/// A pipelined Redis client on a Reactor event loop: its own non-blocking socket, hiredis's reader for replies.
///
/// Loop-confined, not Sendable: create it anywhere, then call every method (and read every property) on
/// `loop`'s thread; completions run there too, in the order the commands were sent. It owns its socket and
/// `RESPReader` (closed/freed on `close()` and in `deinit`).
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

    private struct Pending {
        let completion: Completion
        let deadline: UInt64
    }

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
    public private(set) var state: State = .disconnected(reason: "not started", retryInMilliseconds: 0)
    /// Round trips, failures and connects so far, for metrics.
    public private(set) var stats = RedisConnectionStats()
    /// Where to connect instead of `url`'s host and port (Sentinel), asked before every (re)connect; set before
    /// `start()`. Held strongly: the source holds this connection weakly.
    public var addressSource: (any RedisAddressSource)? {
        didSet { addressSource?.attach(to: self) }
    }

    private var fd: Int32 = -1
    /// The bytes' way across `fd`: plain or TLS, set once TCP connects (`RedisTransport`).
    private var transport = RedisTransport.pending
    private var reader = RESPReader()
    private var output: [UInt8] = []
    private var outputOffset = 0
    private var writeInterest = false
    private var flushScheduled = false
    private var inFlight = FIFO<Pending>()
    private var waiting = FIFO<Waiting>()
    private var handshaking = false
    /// The socket finished connecting (handshake may still be running).
    private var socketReady = false
    private var connectDeadline: UInt64 = 0
    /// The endpoint `addresses` came from: `url`'s, or the address source's answer.
    private var connectingTo: RedisURL.Endpoint
    private var addresses: [SocketAddress] = []
    private var failures = 0
    private var reconnectTimer: LoopTimer?
    private var tickTimer: LoopTimer?
    private var started = false
    private var readBuffer = [UInt8](repeating: 0, count: 65_536)

    public init(url: RedisURL, loop: EventLoop, options: Options = Options()) {
        self.url = url
        connectingTo = url.endpoint
        self.loop = loop
        self.options = options
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

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
    public var pendingCount: Int { inFlight.count + waiting.count }

    /// Closes for good: everything pending fails with `.closed`.
    public func close() {
        guard state != .closed else { return }
        reconnectTimer?.cancel()
        tickTimer?.cancel()
        dropSocket()
        let lost = inFlight.removeAll().map(\.completion) + waiting.removeAll().map(\.completion)
        setState(.closed)
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
        switch state {
        case .connected where !handshaking && fd >= 0:
            output.append(contentsOf: command)
            inFlight.append(Pending(completion: completion, deadline: deadline))
            scheduleFlush()
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

    private func scheduleFlush() {
        guard !flushScheduled, !writeInterest else { return }
        flushScheduled = true
        loop.schedule(afterNanoseconds: 0) { [weak self] in
            guard let self else { return }
            self.flushScheduled = false
            self.flush()
        }
    }

    private func flush() {
        guard fd >= 0, socketReady else { return }
        write: while outputOffset < output.count {
            do {
                switch try transport.write(fd, output, from: outputOffset) {
                case .bytes(let written): outputOffset += written
                case .wouldBlock, .endOfFile: break write
                }
            } catch {
                connectionLost(error.description)
                return
            }
        }
        if outputOffset == output.count {
            output.removeAll(keepingCapacity: output.count < 1 << 20)
            outputOffset = 0
            if writeInterest { setWriteInterest(false) }
        } else if !writeInterest {
            setWriteInterest(true)
        }
    }

    private func setWriteInterest(_ on: Bool) {
        writeInterest = on
        try? loop.setInterest(fd: fd, readable: true, writable: on)
    }

    // MARK: connecting

    private func connect() {
        reconnectTimer = nil
        guard state != .closed else { return }
        setState(.connecting)
        if addresses.isEmpty, let source = addressSource {
            source.resolve { [weak self] result in self?.resolved(result) }
            return
        }
        connectNext()
    }

    /// The address source answered: connect there, or back off and ask again.
    private func resolved(_ result: Result<RedisURL.Endpoint, RedisError>) {
        guard state == .connecting, fd < 0 else { return }
        switch result {
        case .success(let endpoint): connectNext(endpoint)
        case .failure(let error): connectFailed(error.description)
        }
    }

    private func connectNext(_ resolvedEndpoint: RedisURL.Endpoint? = nil) {
        if addresses.isEmpty {
            connectingTo = resolvedEndpoint ?? url.endpoint
            switch connectingTo {
            case .unix(let path):
                addresses = [SocketAddress(unixPath: path)]
            case .tcp(let host, let port):
                do {
                    addresses = try Sockets.resolve(host: host, port: port)
                } catch {
                    connectFailed(error.description)
                    return
                }
            }
        }
        let address = addresses.removeFirst()
        do {
            fd = try Sockets.startConnect(to: address)
            try loop.register(fd: fd, handler: self, readable: false, writable: true)
            writeInterest = true
        } catch {
            if fd >= 0 { Glibc.close(fd); fd = -1 }
            connectFailed("\(address): \(error)")
            return
        }
        connectDeadline = monotonicNanos() &+ UInt64(options.connectTimeoutMilliseconds) * 1_000_000
        handshaking = true
    }

    private func connectFailed(_ reason: String) {
        dropSocket()
        // State first: completions that re-send must find the connection down, not write into a dead socket.
        if !addresses.isEmpty {
            failInFlight(reason)
            connect()
            return
        }
        scheduleReconnect(reason)
        failInFlight(reason)
    }

    private func scheduleReconnect(_ reason: String) {
        guard state != .closed else { return }
        let base = min(options.reconnectMaxMilliseconds, options.reconnectInitialMilliseconds << min(failures, 16))
        failures += 1
        let delay = max(1, Int(Double(base) * Double.random(in: 0.5...1.0)))
        setState(.disconnected(reason: reason, retryInMilliseconds: delay))
        reconnectTimer = loop.schedule(afterMilliseconds: delay) { [weak self] in self?.connect() }
    }

    private func connected() {
        socketReady = true
        setWriteInterest(false)
        reader = RESPReader()
        var handshake: [(command: [[UInt8]], check: ((RESPValue) -> String?)?)] = url.handshake.map { ($0, nil) }
        if let check = addressSource?.handshakeCheck { handshake.append(check) }
        if handshake.isEmpty {
            handshakeDone()
            return
        }
        var remaining = handshake.count
        for (command, check) in handshake {
            RESPEncoder.append(command, to: &output)
            let name = String(decoding: command[0], as: UTF8.self)
            inFlight.append(Pending(completion: { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let reply):
                    if let problem = check?(reply) {
                        self.connectionLost(problem)
                        return
                    }
                    remaining -= 1
                    if remaining == 0 { self.handshakeDone() }
                case .failure(let error):
                    if case .server(let message) = error { self.connectionLost("\(name) refused: \(message)") }
                }
            }, deadline: connectDeadline))
        }
        flush()
    }

    private func handshakeDone() {
        handshaking = false
        failures = 0
        addresses = []
        stats.connects &+= 1
        setState(.connected)
        let now = monotonicNanos()
        var expired: [Completion] = []
        while let item = waiting.popFirst() {
            if item.deadline < now {
                expired.append(item.completion)
                continue
            }
            output.append(contentsOf: item.command)
            inFlight.append(Pending(completion: item.completion, deadline: item.deadline))
        }
        flush()
        for completion in expired { completion(.failure(.notConnected)) }
    }

    // MARK: I/O

    public func handleIO(readable: Bool, writable: Bool, hangup: Bool) {
        guard fd >= 0 else { return }
        if !socketReady {
            guard readable || writable || hangup else { return }
            if case .pending = transport {
                if let error = Sockets.connectError(fd) {
                    connectFailed(error.description)
                    return
                }
                // TLS names the host actually reached (a sentinel's answer), as the tools do, unless server_name is set.
                var reached = url
                reached.endpoint = connectingTo
                do { transport = try RedisTransport.start(for: reached, tls: options.tls, fd: fd) } catch {
                    connectFailed(error.description)
                    return
                }
            }
            do {
                switch try transport.handshake() {
                case .done: connected()
                case .wantRead: setWriteInterest(false)
                case .wantWrite: setWriteInterest(true)
                }
            } catch {
                connectFailed(error.description)
            }
            return
        }
        if readable || hangup { readAvailable() }
        if writable, fd >= 0 { flush() }
    }

    private func readAvailable() {
        while fd >= 0 {
            let count: Int
            do {
                switch try transport.read(fd, into: &readBuffer) {
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
                try reader.feed(readBuffer, count: count)
                while let reply = try reader.next() {
                    guard let pending = inFlight.popFirst() else {
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
                    if fd < 0 { return }
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

    private func connectionLost(_ reason: String) {
        guard fd >= 0 else { return }
        let wasConnected = state == .connected
        dropSocket()
        if wasConnected { failures = 0 }
        addresses = []
        scheduleReconnect(reason)
        failInFlight(reason)
    }

    private func failInFlight(_ reason: String) {
        let lost = inFlight.removeAll()
        stats.errors &+= UInt64(lost.count)
        for pending in lost { pending.completion(.failure(.connectionLost)) }
    }

    private func dropSocket() {
        transport.shutdown()
        transport = .pending
        if fd >= 0 {
            loop.unregister(fd: fd)
            Glibc.close(fd)
            fd = -1
        }
        output.removeAll()
        outputOffset = 0
        writeInterest = false
        handshaking = false
        socketReady = false
    }

    private func setState(_ new: State) {
        guard new != state else { return }
        state = new
        onStateChange?(new)
    }

    // MARK: timeouts

    private func scheduleTick() {
        let interval = max(10, min(250, options.commandTimeoutMilliseconds / 4))
        tickTimer = loop.schedule(afterMilliseconds: interval) { [weak self] in
            guard let self, self.state != .closed else { return }
            self.checkDeadlines()
            self.scheduleTick()
        }
    }

    private func checkDeadlines() {
        let now = monotonicNanos()
        if state == .connecting, fd >= 0, now > connectDeadline {
            connectFailed("connect timed out after \(options.connectTimeoutMilliseconds) ms\(transport.timeoutHint)")
        } else if let head = inFlight.first, head.deadline < now, fd >= 0 {
            let timedOut = inFlight.popFirst()!
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

import Basics
import CNghttp2
import Foundation
import Glibc
import Reactor
import TLS
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
    /// Judges every address the host resolved to before any connect: a reason refuses the connection
    /// (`.addressRefused`). Checking the very addresses connected to leaves no room for DNS rebinding.
    public var addressCheck: ((SocketAddress) -> String?)?
    /// Looks the host up, off the loop, afresh for every connection: Herald keeps no DNS cache, so each
    /// connection may land on another of the provider's hosts (Apple's advice). Tests may map a name themselves.
    public var resolver: Resolver = Sockets.resolve(host:port:)
    /// A host lookup (host, port): runs off the loop, so it must be Sendable.
    public typealias Resolver = @Sendable (String, Int) throws(SystemError) -> [SocketAddress]
    /// Orders the resolved addresses (after `addressCheck` passed them all) before TCP tries them in turn;
    /// a pool puts the addresses its other connections do not use first.
    public var addressOrder: (([SocketAddress]) -> [SocketAddress])?
    /// The address TCP connects or connected to (the proxy's, through one); nil before the first attempt.
    public internal(set) var remoteAddress: SocketAddress?

    /// The stage of the connection's life and the data only that stage has (socket, TLS, session, GOAWAY).
    var phase = ConnectionPhase.idle
    var streams: [Int32: RequestContext] = [:]
    var queue = FIFO<RequestContext>()
    let batch = DeliveryBatch()
    var output = OutputBuffer(capacity: LiveSession.writeBatch + 16_384)
    let headerBlock = HeaderBlock()
    /// From `connect()` until closed the connection keeps itself alive (as the loop does while its socket is
    /// registered), so an owner that drops its reference cannot make queued or open requests vanish.
    var keepAlive: HTTP2ClientConnection?
    var sweepTimer: LoopTimer?
    let defaultAuthority: String

    /// Responses received on this connection: a connection that answered anything was healthy, whatever ended it.
    public internal(set) var responsesReceived = 0
    /// The most streams ever open at once: lets tests prove the server's limit was never exceeded.
    public internal(set) var maxObservedOpenStreams = 0
    /// Streams submitted and not yet closed by nghttp2 (including ones cancelled by a timeout until the RST goes out).
    public var openStreams: Int { streams.count }
    public var queuedRequests: Int { queue.count }

    public var state: State { phase.state }

    /// The server's current SETTINGS_MAX_CONCURRENT_STREAMS, capped by the local limit; 0 until it is known.
    public var maxConcurrentStreams: Int {
        switch phase {
        case let .ready(live), let .draining(live, _): return live.streamLimit(cappedAt: options.maxConcurrentStreamsLimit)
        default: return 0
        }
    }

    /// How many more requests could be put on the wire right now.
    public var availableStreams: Int {
        guard case let .ready(live) = phase else { return 0 }
        return max(0, live.streamLimit(cappedAt: options.maxConcurrentStreamsLimit) - streams.count)
    }

    public init(loop: EventLoop, endpoint: HTTP2Endpoint, tls: TLSContext, options: HTTP2ConnectionOptions = .init()) {
        self.loop = loop
        self.endpoint = endpoint
        self.tls = tls
        self.options = options
        self.defaultAuthority = endpoint.port == 443 ? endpoint.host : endpoint.authority
        self.id = Self.nextID.wrappingAdd(1, ordering: .relaxed).newValue
    }

    deinit {
        // Only a connection that was never connected can die with requests queued: they still complete once.
        // The socket, SSL and session handles free themselves with the phase.
        for context in queue.removeAll() where context.decide(.failure(.closed)) { context.deliver() }
    }

    // MARK: public operations

    /// Starts DNS (off the loop, uncached), TCP, proxy, TLS and HTTP/2 set-up. Requests sent before it is
    /// ready wait in the connection's queue.
    public func connect() {
        guard case .idle = phase else { return }
        entry {
            keepAlive = self
            phase = .resolving(deadline: monotonicNanos() &+ UInt64(max(1, options.connectTimeoutMilliseconds)) &* 1_000_000)
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
            let box = LoopBound(self, loop: loop)  // the DNS thread only carries it back
            let loop = self.loop
            let resolver = self.resolver
            DispatchQueue.global().async {
                let result: Result<[SocketAddress], SystemError>
                do throws(SystemError) { result = .success(try resolver(target.host, target.port)) } catch { result = .failure(error) }
                loop.execute { box.value.resolved(result) }
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
            switch phase {
            case .ready, .awaitingSettings:
                enterDraining(goaway: nil)
                failQueued(.notSent("connection retired"))
            case .idle, .resolving, .connecting, .proxy, .handshaking:
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

    // MARK: the loop's entry points

    /// Every way into the connection goes through here: work first, then (outermost; a long read also after
    /// each chunk) flush the output, deliver decided completions and events. Completions may re-enter `send`/`close` safely.
    func entry(_ body: () -> Void) {
        withExtendedLifetime(self) {
            if batch.inEntry {
                body()
                return
            }
            batch.inEntry = true
            body()
            finishEntry()
            batch.inEntry = false
        }
    }

    func finishEntry() {
        var rounds = 0
        repeat {
            rounds += 1
            dispatchQueued()
            if output.needsFlush || phase.session != nil { flush() }
            closeIfDrained()
            if !batch.decided.isEmpty {
                swap(&batch.decided, &batch.delivering)
                for context in batch.delivering { context.deliver() }
                batch.delivering.removeAll(keepingCapacity: true)
            }
            if batch.capacityFreed {
                batch.capacityFreed = false
                dispatchQueued()
                if availableStreams > 0 { batch.events.append(.capacityAvailable(connectionID: id)) }
            }
            if !batch.events.isEmpty {
                let events = batch.events
                batch.events.removeAll()
                for event in events { onEvent?(event) }
            }
        } while (!batch.decided.isEmpty || !batch.events.isEmpty || output.needsFlush || batch.capacityFreed) && rounds < 64
        if output.needsFlush && !phase.isClosed { scheduleFlush() }
    }

    public func handleIO(readable: Bool, writable: Bool, hangup: Bool) {
        entry {
            switch phase {
            case let .connecting(attempt):
                if writable || hangup { tcpConnected(attempt) }
            case let .proxy(proxy):
                proxyIO(proxy, readable: readable || hangup, writable: writable)
            case let .handshaking(handshake):
                self.handshake(handshake)
            case let .awaitingSettings(live, _), let .ready(live), let .draining(live, _):
                if readable || hangup || (writable && live.readWantsWrite) { readAvailable(live, hangup: hangup) }
                if writable { output.needsFlush = true }
            case .idle, .resolving, .closed:
                break
            }
        }
    }

    // MARK: I/O

    /// Reads through `SSLHandle.read` (a chunk at a time into the read buffer) and feeds nghttp2; a short read
    /// means nothing more is waiting (after a hangup it reads on to the end). After each full chunk the entry's
    /// work runs (`finishEntry`): completions delivered, new requests flushed, while the server's other answers
    /// still wait in the socket. Not after a hangup: new requests would go to a connection about to be lost, and
    /// fail as possibly processed instead of going to another one as never sent. At most
    /// `LiveSession.chunksPerWake` chunks, then the rest in the loop's next turn, so timers and the other sockets
    /// get theirs (a timer, not epoll: OpenSSL may already hold the rest of a record).
    func readAvailable(_ live: LiveSession, hangup: Bool) {
        live.readWantsWrite = false
        var chunks = 0
        while !phase.isClosed {
            if chunks == LiveSession.chunksPerWake && !hangup { return scheduleRead() }
            chunks += 1
            let progress: IOProgress
            do { progress = try live.ssl.read(into: live.readBuffer, count: LiveSession.readChunk) } catch {
                if case .awaitingSettings = phase {
                    return failTLS("rejected after the handshake: \(error.message)")  // TLS 1.3: e.g. a missing client certificate
                }
                return lose("read failed: \(error.message)")
            }
            switch progress {
            case .bytes(let count):
                live.liveness.received(at: monotonicNanos())
                let used = nghttp2_session_mem_recv(live.session.pointer, live.readBuffer.assumingMemoryBound(to: UInt8.self), count)
                if used < 0 { return lose("HTTP/2 protocol error: \(String(cString: nghttp2_strerror(Int32(used))))") }
                output.needsFlush = true
                if count < LiveSession.readChunk && !hangup { return waitForReadable(live) }
                if !hangup { finishEntry() }
            case .wouldBlock:
                if hangup && !live.ssl.wantsWritable { lose("server closed the connection") }
                return waitForReadable(live)
            case .endOfFile:
                return lose("server closed the connection")
            }
        }
    }

    /// After a read that stopped: when TLS must write first (a key update), the read is retried once writable.
    private func waitForReadable(_ live: LiveSession) {
        guard live.ssl.wantsWritable else { return }
        live.readWantsWrite = true
        setInterest(writable: true)
    }

    func flush() {
        output.needsFlush = false
        guard let live = phase.session else { return }
        let ssl = live.ssl
        let session = live.session.pointer
        while true {
            if output.isDrained {
                output.startBatch()
                while output.bytes.count < LiveSession.writeBatch {
                    var data: UnsafePointer<UInt8>?
                    let count = nghttp2_session_mem_send(session, &data)
                    if count < 0 { return lose("HTTP/2 error: \(String(cString: nghttp2_strerror(Int32(count))))") }
                    guard count > 0, let data else { break }
                    output.append(UnsafeBufferPointer(start: data, count: count))
                }
                if output.bytes.isEmpty { break }
            }
            let offset = output.offset
            let result = output.bytes.withUnsafeBytes { bytes in
                Result { () throws(TLSError) in try ssl.write(from: bytes.baseAddress! + offset, count: bytes.count - offset) }
            }
            switch result {
            case .success(.bytes(let written)):
                output.wrote(written)
            case .success:
                if ssl.wantsWritable { setInterest(writable: true) }  // else TLS waits to read first: the next read flushes
                return
            case .failure(let error):
                return lose("write failed: \(error.message)")
            }
        }
        setInterest(writable: live.readWantsWrite)
    }

    /// A zero-delay timer runs after the current loop iteration: one SSL_write for a whole burst of sends.
    /// Strong captures throughout: weak references would put every retain of the connection on Swift's slow
    /// side-table path, and the connection lives until closed anyway (`keepAlive`).
    func scheduleFlush() {
        guard !output.flushScheduled else { return }
        output.flushScheduled = true
        loop.schedule(afterNanoseconds: 0) { [self] in
            output.flushScheduled = false
            entry {}
        }
    }

    /// The rest of a long read, after the loop's other work (`readAvailable`).
    func scheduleRead() {
        loop.schedule(afterNanoseconds: 0) { [self] in
            entry {
                guard let live = phase.session else { return }
                readAvailable(live, hangup: false)
            }
        }
    }

    func closeIfDrained() {
        guard case let .draining(live, goaway) = phase, streams.isEmpty else { return }
        if goaway == nil {
            _ = nghttp2_session_terminate_session(live.session.pointer, NGHTTP2_NO_ERROR.rawValue)
            flush()
        }
        if case .draining = phase { shutdown(nil, inFlight: .connectionLost("closed after draining"), queued: .closed) }
    }

    // MARK: closing

    func lose(_ why: String) {
        let error = HTTP2ClientError.connectionLost(why)
        shutdown(error, inFlight: error, queued: .notSent(why))
    }

    /// The one way to `closed`: decides every open and queued request, closes the socket, reports why. The
    /// `SSL*` and the session are freed with the last reference to the phase that held them.
    func shutdown(_ error: HTTP2ClientError?, inFlight: HTTP2ClientError, queued: HTTP2ClientError) {
        if phase.isClosed { return }
        let goaway = phase.goaway
        let ssl = phase.ssl
        let socket = phase.socket
        phase = .closed(error)
        sweepTimer?.cancel()
        sweepTimer = nil
        for (streamID, context) in streams {
            // Above a received GOAWAY's last-stream-id the server never processed it, however the connection
            // ended (such requests may still sit unsent in nghttp2's queue when the server closes right after).
            var error = inFlight
            if let goaway, streamID > goaway.lastStreamID { error = goaway.unprocessed }
            if context.decide(.failure(error)) { batch.decided.append(context) }
        }
        streams.removeAll()
        failQueued(queued)
        if let ssl, error == nil { ssl.shutdown() }
        socket?.close()
        output.release()
        batch.events.append(.closed(connectionID: id, error: error))
        keepAlive = nil  // safe: `entry` holds the connection until this turn's completions and events are out
    }
}


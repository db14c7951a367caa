import Basics
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

    enum Phase { case idle, resolving, tcpConnecting, proxy, handshaking, awaitingSettings, ready, draining, closed }
    var phase = Phase.idle
    var fd: Int32 = -1
    var registered = false
    var interestWritable = false
    var ssl: OpaquePointer?
    var session: OpaquePointer?
    var addresses: [SocketAddress] = []
    var addressIndex = 0
    var lastConnectError = "no address"
    var proxyOut: [UInt8] = []
    var proxyIn: [UInt8] = []

    var streams: [Int32: RequestContext] = [:]
    var queue = FIFO<RequestContext>()
    var toDeliver: [RequestContext] = []
    var delivering: [RequestContext] = []
    var pendingEvents: [HTTP2ConnectionEvent] = []
    let readBuffer: UnsafeMutableRawPointer
    static let readSize = 65_536
    var outBuffer: [UInt8] = []
    var outOffset = 0
    var scratchBytes: [UInt8] = []
    var scratchSpans: [(Int, Int, Int, Int, UInt8)] = []
    var scratchNV: [nghttp2_nv] = []
    var inEntry = false
    /// From `connect()` until closed the connection keeps itself alive (as the loop does while its socket is
    /// registered), so an owner that drops its reference cannot make queued or open requests vanish.
    var keepAlive: HTTP2ClientConnection?
    /// SSL_read asked for writability (TLS renegotiation or key update): retry the read when writable.
    var readWantsWrite = false
    var needsFlush = false
    var flushScheduled = false
    var capacityFreed = false
    var goaway: (lastStreamID: Int32, errorCode: UInt32, reason: String?)?
    var retiring = false
    var sweepTimer: LoopTimer?
    var connectDeadline: UInt64 = 0
    var lastReadAt: UInt64 = 0
    var pingSentAt: UInt64?
    let defaultAuthority: String

    /// Responses received on this connection: a connection that answered anything was healthy, whatever ended it.
    public internal(set) var responsesReceived = 0
    /// The most streams ever open at once: lets tests prove the server's limit was never exceeded.
    public internal(set) var maxObservedOpenStreams = 0
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
        // Only a connection that was never connected can die with requests queued: they still complete once.
        for context in queue.removeAll() where context.decide(.failure(.closed)) { context.deliver() }
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
            keepAlive = self
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
            let box = ConnectionBox(self)
            let loop = self.loop
            DispatchQueue.global().async {
                let result: Result<[SocketAddress], SystemError>
                do throws(SystemError) { result = .success(try Sockets.resolve(host: target.host, port: target.port)) } catch { result = .failure(error) }
                loop.execute { box.connection.resolved(result) }
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

    // MARK: the loop's entry points

    /// Every way into the connection goes through here: work first, then (once, outermost) flush the
    /// output, deliver decided completions and events. Completions may re-enter `send`/`close` safely.
    func entry(_ body: () -> Void) {
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

    func finishEntry() {
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
            loop.schedule(afterNanoseconds: 0) { [self] in
                flushScheduled = false
                entry {}
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

    // MARK: I/O

    func readAvailable(hangup: Bool) {
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

    func flush() {
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

    func closeIfDrained() {
        guard phase == .draining, streams.isEmpty else { return }
        if let session, goaway == nil {
            _ = nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue)
            flush()
        }
        if phase == .draining { shutdown(nil, inFlight: .connectionLost("closed after draining"), queued: .closed) }
    }

    // MARK: closing

    func lose(_ why: String) {
        let error = HTTP2ClientError.connectionLost(why)
        shutdown(error, inFlight: error, queued: .notSent(why))
    }

    /// The one way to `closed`: decides every open and queued request, frees the C objects, reports why.
    func shutdown(_ error: HTTP2ClientError?, inFlight: HTTP2ClientError, queued: HTTP2ClientError) {
        guard phase != .closed else { return }
        phase = .closed
        sweepTimer?.cancel()
        sweepTimer = nil
        for (streamID, context) in streams {
            // Above a received GOAWAY's last-stream-id the server never processed it, however the connection
            // ended (such requests may still sit unsent in nghttp2's queue when the server closes right after).
            var error = inFlight
            if let goaway, streamID > goaway.lastStreamID {
                error = .goawayUnprocessed(lastStreamID: goaway.lastStreamID, errorCode: goaway.errorCode, reason: goaway.reason)
            }
            if context.decide(.failure(error)) { toDeliver.append(context) }
        }
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
        keepAlive = nil  // safe: `entry` holds the connection until this turn's completions and events are out
    }
}

/// Carries the connection through the DNS thread and back. Only the loop's thread ever touches the
/// connection itself (the DNS thread merely holds the reference), which is why the unchecked conformance is sound.
private final class ConnectionBox: @unchecked Sendable {
    let connection: HTTP2ClientConnection
    init(_ connection: HTTP2ClientConnection) { self.connection = connection }
}

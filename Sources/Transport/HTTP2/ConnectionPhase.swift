import CNghttp2
import Reactor
import TLS

/// Where a connection is in its life, with the data only that stage has: a socket exists only once TCP is
/// tried, a session only after ALPN, a GOAWAY only while draining. Leaving a stage drops (and so frees) what
/// only it held. Set-up stages carry the connect deadline that the sweep enforces.
enum ConnectionPhase {
    case idle
    case resolving(deadline: UInt64)
    case connecting(TCPAttempt)
    case proxy(ProxyHandshake)
    case handshaking(TLSHandshake)
    /// TLS and h2 are up; nothing is submitted before the server's first SETTINGS.
    case awaitingSettings(LiveSession, deadline: UInt64)
    case ready(LiveSession)
    /// Takes no new requests; open streams finish. `goaway` is the server's, nil when we retired it.
    case draining(LiveSession, goaway: Goaway?)
    /// Why it closed (nil when closed on request or after draining).
    case closed(HTTP2ClientError?)

    var state: HTTP2ClientConnection.State {
        switch self {
        case .idle: return .idle
        case .resolving, .connecting, .proxy, .handshaking, .awaitingSettings: return .connecting
        case .ready: return .ready
        case .draining: return .draining
        case .closed: return .closed
        }
    }

    var isClosed: Bool {
        if case .closed = self { return true }
        return false
    }

    /// The TLS + HTTP/2 session, in the stages that have one.
    var session: LiveSession? {
        switch self {
        case let .awaitingSettings(live, _), let .ready(live), let .draining(live, _): return live
        case .idle, .resolving, .connecting, .proxy, .handshaking, .closed: return nil
        }
    }

    var socket: SocketHandle? {
        switch self {
        case let .connecting(attempt): return attempt.socket
        case let .proxy(handshake): return handshake.socket
        case let .handshaking(handshake): return handshake.socket
        case let .awaitingSettings(live, _), let .ready(live), let .draining(live, _): return live.socket
        case .idle, .resolving, .closed: return nil
        }
    }

    var ssl: SSLHandle? {
        if case let .handshaking(handshake) = self { return handshake.ssl }
        return session?.ssl
    }

    /// Until the server's first SETTINGS, the whole set-up must fit in the connect timeout.
    var connectDeadline: UInt64? {
        switch self {
        case let .resolving(deadline), let .awaitingSettings(_, deadline): return deadline
        case let .connecting(attempt): return attempt.deadline
        case let .proxy(handshake): return handshake.deadline
        case let .handshaking(handshake): return handshake.deadline
        case .idle, .ready, .draining, .closed: return nil
        }
    }

    var goaway: Goaway? {
        if case let .draining(_, goaway) = self { return goaway }
        return nil
    }
}

/// TCP to one of the resolved addresses; on failure the next one is tried.
struct TCPAttempt {
    let addresses: [SocketAddress]
    /// The address `socket` is connecting to.
    let index: Int
    let socket: SocketHandle
    let deadline: UInt64

    var address: SocketAddress { addresses[index] }
}

/// An HTTP/1.1 CONNECT exchange with a proxy. A class, so the buffers grow in place inside the phase.
final class ProxyHandshake {
    let socket: SocketHandle
    let deadline: UInt64
    /// The CONNECT request not yet written.
    var unsent: [UInt8]
    /// The proxy's answer so far.
    private(set) var received: [UInt8] = []

    /// What the proxy said so far.
    enum Reply: Equatable {
        case incomplete
        case established
        case failed(String)
    }

    init(socket: SocketHandle, authority: String, deadline: UInt64) {
        self.socket = socket
        self.deadline = deadline
        unsent = Array("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n".utf8)
    }

    /// Adds bytes read from the proxy and judges the answer so far.
    func receive(_ bytes: ArraySlice<UInt8>) -> Reply {
        received.append(contentsOf: bytes)
        return Self.judge(received)
    }

    /// A 2xx status line ending the head, and nothing after it (TLS must start on a clean tunnel).
    static func judge(_ received: [UInt8]) -> Reply {
        let terminator: [UInt8] = [13, 10, 13, 10]
        guard let end = received.indices.first(where: { received[$0...].starts(with: terminator) }) else {
            return received.count > 16_384 ? .failed("proxy answer too long") : .incomplete
        }
        let head = String(decoding: received[..<end], as: UTF8.self)
        let statusLine = head.split(separator: "\r\n").first.map(String.init) ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let code = Int(parts[1]), (200..<300).contains(code) else {
            return .failed("proxy refused CONNECT: \(statusLine)")
        }
        guard end + 4 == received.count else { return .failed("proxy sent data before the TLS handshake") }
        return .established
    }
}

/// The TLS client handshake in progress.
struct TLSHandshake {
    let socket: SocketHandle
    let ssl: SSLHandle
    let deadline: UInt64
}

/// A GOAWAY from the server: streams above `lastStreamID` were never processed.
struct Goaway {
    let lastStreamID: Int32
    let errorCode: UInt32
    let reason: String?

    var unprocessed: HTTP2ClientError {
        .goawayUnprocessed(lastStreamID: lastStreamID, errorCode: errorCode, reason: reason)
    }
}

/// The TLS + HTTP/2 session of a connection that completed its set-up: the socket, the `SSL*`, the nghttp2
/// session, the read buffer and the liveness clock. A class, so the clock ticks in place inside the phase.
final class LiveSession {
    /// How many bytes of frames one flush gathers from nghttp2 before an SSL_write.
    static let writeBatch = 65_536
    /// What one SSL_read takes before the answers it completed are delivered and the requests they start are
    /// sent (`readAvailable`). Reading everything that waits first made client and server take turns over whole
    /// windows of streams: 8 KiB, as h2load reads, keeps both busy (one connection: median 0.64x of h2load -> 1.08x).
    static let readChunk = 8_192
    /// Chunks one wake reads before the loop's other work runs (about what one window of answers took before).
    static let chunksPerWake = 16
    let socket: SocketHandle
    let ssl: SSLHandle
    let session: SessionHandle
    let readBuffer = UnsafeMutableRawPointer.allocate(byteCount: LiveSession.readChunk, alignment: 16)
    var liveness: Liveness
    /// SSL_read asked for writability (TLS renegotiation or key update): retry the read when writable.
    var readWantsWrite = false

    init(socket: SocketHandle, ssl: SSLHandle, session: SessionHandle, now: UInt64) {
        self.socket = socket
        self.ssl = ssl
        self.session = session
        liveness = Liveness(lastReadAt: now)
    }

    /// The server's current SETTINGS_MAX_CONCURRENT_STREAMS (0 is possible), capped by the local limit.
    func streamLimit(cappedAt limit: Int) -> Int {
        min(Int(nghttp2_session_get_remote_settings(session.pointer, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)), limit)
    }

    deinit { readBuffer.deallocate() }
}

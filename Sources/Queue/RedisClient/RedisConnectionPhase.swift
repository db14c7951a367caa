import Basics
import Reactor

/// Where a `RedisConnection` is in its life, with the data only that stage has: a socket only once TCP is
/// tried, a transport (plain or TLS) once TCP is up, replies awaited only on a link that can carry commands, a
/// reconnect timer only while backing off. Leaving a stage drops (and so frees) what only it held.
enum RedisConnectionPhase {
    /// `start()` not called yet.
    case idle
    /// Asking DNS, or the address source (Sentinel), where to connect.
    case resolving
    /// TCP connect to `attempt.address` under way.
    case connecting(ConnectAttempt, SocketHandle)
    /// TCP up; the TLS handshake running (a plain transport leaves at once).
    case securing(ConnectAttempt, RedisLink)
    /// AUTH, SELECT and the address source's check in flight on `link`; commands wait until they pass.
    case handshaking(ConnectAttempt, RedisLink)
    case connected(RedisLink)
    /// Lost or failed, with why; `timer` reconnects after `retryInMilliseconds`.
    case backingOff(reason: String, retryInMilliseconds: Int, timer: LoopTimer)
    case closed

    var state: RedisConnection.State {
        switch self {
        case .idle: return .disconnected(reason: "not started", retryInMilliseconds: 0)
        case .resolving, .connecting, .securing, .handshaking: return .connecting
        case .connected: return .connected
        case let .backingOff(reason, retry, _): return .disconnected(reason: reason, retryInMilliseconds: retry)
        case .closed: return .closed
        }
    }

    var isClosed: Bool {
        if case .closed = self { return true }
        return false
    }

    /// The attempt under way, in the stages before `connected`.
    var attempt: ConnectAttempt? {
        switch self {
        case let .connecting(attempt, _), let .securing(attempt, _), let .handshaking(attempt, _): return attempt
        case .idle, .resolving, .connected, .backingOff, .closed: return nil
        }
    }

    var socket: SocketHandle? {
        if case let .connecting(_, socket) = self { return socket }
        return link?.socket
    }

    /// The link, from TCP up to its loss.
    var link: RedisLink? {
        switch self {
        case let .securing(_, link), let .handshaking(_, link), let .connected(link): return link
        case .idle, .resolving, .connecting, .backingOff, .closed: return nil
        }
    }

    /// The link that carries commands (the handshake's, then everyone's): TLS, if any, is up.
    var commandLink: RedisLink? {
        switch self {
        case let .handshaking(_, link), let .connected(link): return link
        case .idle, .resolving, .connecting, .securing, .backingOff, .closed: return nil
        }
    }
}

/// One try at one address of the endpoint; on failure before `connected` the next address is tried.
struct ConnectAttempt {
    /// `url`'s endpoint or the address source's answer: TLS names its host, as the tools do.
    let endpoint: RedisURL.Endpoint
    let address: SocketAddress
    /// Addresses of `endpoint` still to try after this one.
    let remaining: [SocketAddress]
    /// TCP, TLS and the handshake commands must all fit before it.
    let deadline: UInt64
}

/// A command sent on a link whose reply has not come back yet.
struct PendingReply {
    let completion: RedisConnection.Completion
    let deadline: UInt64
}

/// A TCP connection to Redis and what goes over it: the transport, the reply reader, the bytes not yet
/// written and the commands awaiting replies (FIFO, as Redis answers). A class, so the buffers grow in place
/// inside the phase.
final class RedisLink {
    let socket: SocketHandle
    var transport: RedisTransport
    var reader = RESPReader()
    var output: [UInt8] = []
    var outputOffset = 0
    var inFlight = FIFO<PendingReply>()

    init(socket: SocketHandle, transport: RedisTransport) {
        self.socket = socket
        self.transport = transport
    }

    /// A close_notify if TLS is up, then the socket closed; what was in flight is handed back to be failed.
    func close() -> [PendingReply] {
        transport.shutdown()
        socket.close()
        return inFlight.removeAll()
    }
}

import Reactor
import TLS

/// How one Redis connection's bytes cross its socket: as they are (`redis://`, `unix://`) or through a TLS session
/// (`rediss://`). The socket belongs to the connection (`RedisConnection`, `BlockingRedis`), which closes it; the
/// TLS session (`SSLHandle`, freed in its `deinit`) belongs to the transport value and goes with it.
enum RedisTransport {
    /// The socket is not connected yet.
    case pending
    /// `received`: a byte came back on this connection. A failure before the first byte is most often a
    /// set-up mistake (a TLS port in plain, a client certificate missing), and its message says which.
    case plain(received: Bool)
    case tls(SSLHandle, received: Bool)

    /// Why a read or write failed, in words for the connection's state and errors.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The transport for `fd`, which just finished its TCP connect to `url`. `tls` is the configured context;
    /// a `rediss://` URL without one verifies against the system trust store.
    static func start(for url: RedisURL, tls: TLSContext?, fd: Int32) throws(Failure) -> RedisTransport {
        guard url.tls else { return .plain(received: false) }
        guard case .tcp(let host, _) = url.endpoint else { throw Failure(description: "TLS needs a TCP endpoint, not a Unix socket") }
        do throws(TLSError) {
            let context = if let tls { tls } else { try systemTrustContext.get() }
            return .tls(try SSLHandle(context: context, fd: fd, serverName: context.configuration.serverName ?? host), received: false)
        } catch {
            throw Failure(description: "TLS: \(error.message)")
        }
    }

    /// One `rediss://` default shared by every connection: built once, the system store loaded once.
    private static let systemTrustContext = Result { () throws(TLSError) in try TLSContext(TLSConfiguration(), alpn: []) }

    /// Advances the TLS handshake; a plain socket is ready at once.
    func handshake() throws(Failure) -> SSLHandle.HandshakeStep {
        guard case .tls(let ssl, _) = self else { return .done }
        do { return try ssl.handshake() } catch { throw Failure(description: "TLS handshake: \(error.message)") }
    }

    /// Reads into `buffer` from its start (through TLS, `SSLHandle.read`: record after record, so fewer bytes
    /// than the buffer holds means nothing more is waiting).
    mutating func read(_ fd: Int32, into buffer: inout [UInt8]) throws(Failure) -> IOProgress {
        let progress: IOProgress
        switch self {
        case .pending: return .wouldBlock
        case .plain(let received):
            do { progress = try SocketIO.read(fd, into: &buffer) } catch { throw failure(error.description) }
            // 0x15 0x03 / 0x16 0x03: a TLS alert or handshake record where RESP was expected.
            if !received, case .bytes = progress, buffer[0] == 0x15 || buffer[0] == 0x16, buffer.count > 1, buffer[1] == 0x03 {
                throw Failure(description: "the server answered in TLS: this is a TLS port, use a rediss:// URL")
            }
        case .tls(let ssl, _):
            let capacity = buffer.count
            let result = buffer.withUnsafeMutableBytes { raw in
                Result { () throws(TLSError) in try ssl.read(into: raw.baseAddress!, count: capacity) }
            }
            do { progress = try result.get() } catch { throw failure("TLS: \(error.message)") }
        }
        switch progress {
        case .bytes: markReceived()
        case .endOfFile where !hasReceived: throw failure("Redis closed the connection")
        default: break
        }
        return progress
    }

    /// Writes `bytes[offset...]`; after `.wouldBlock` the caller retries from the same offset.
    func write(_ fd: Int32, _ bytes: [UInt8], from offset: Int = 0) throws(Failure) -> IOProgress {
        switch self {
        case .pending: return .wouldBlock
        case .plain:
            do { return try SocketIO.write(fd, bytes, from: offset) } catch { throw failure(error.description) }
        case .tls(let ssl, _):
            guard offset < bytes.count else { return .bytes(0) }
            let result = bytes.withUnsafeBytes { raw in
                Result { () throws(TLSError) in try ssl.write(from: raw.baseAddress! + offset, count: raw.count - offset) }
            }
            do { return try result.get() } catch { throw failure("TLS: \(error.message)") }
        }
    }

    private var hasReceived: Bool {
        switch self {
        case .pending: return false
        case .plain(let received), .tls(_, let received): return received
        }
    }

    private mutating func markReceived() {
        switch self {
        case .plain(false): self = .plain(received: true)
        case .tls(let ssl, false): self = .tls(ssl, received: true)
        default: break
        }
    }

    /// `reason`, with what a failure before the first reply byte most likely means.
    private func failure(_ reason: String) -> Failure {
        if hasReceived { return Failure(description: reason) }
        switch self {
        case .tls where reason.contains("client certificate"):
            return Failure(description: reason)
        case .tls:
            return Failure(description: "\(reason): the server dropped the TLS connection before any reply; it may require a client"
                                     + " certificate (redis.tls.cert_file and key_file) or refuse the one sent")
        default:
            return Failure(description: "\(reason) before any reply (a TLS port needs a rediss:// URL)")
        }
    }

    /// A close_notify for a TLS session that finished its handshake; the caller closes the socket after.
    func shutdown() {
        if case .tls(let ssl, _) = self { ssl.shutdown() }
    }

    /// Added to a connect timeout: a TLS handshake that never finishes is most often a plain-TCP port.
    var timeoutHint: String {
        if case .tls = self { return " (TLS handshake unfinished: is this port serving TLS?)" }
        return ""
    }
}

import Basics
import COpenSSL
import Glibc
import Reactor
import TLS

/// What a simulator's core offers its listener and its `stop()`.
protocol ListeningCore: AnyObject, SendableMetatype {
    /// A new connection on the listener at `listener` in the ports given to `ServerLoop.start` (0 for a one-port server).
    func accepted(fd: Int32, listener: Int)
    func closeAll()
}

/// Starting and stopping a simulator (any provider): a loop thread, a core made on it, listening sockets whose
/// connections go to the core. The core and listener stay on the loop, reachable only through the `LoopBound`.
enum ServerLoop {
    /// The host of `https://<host>:<port>` for a server listening on `listenHost`: a wildcard is reached on
    /// loopback, an IPv6 literal goes in brackets.
    static func urlHost(_ listenHost: String) -> String {
        switch listenHost {
        case "0.0.0.0", "": return "127.0.0.1"
        case "::": return "[::1]"
        case let name where name.contains(":"): return "[\(name)]"
        case let name: return name
        }
    }

    /// Starts the loop thread, makes the core on it, binds and listens on each of `ports` (0: a free one).
    /// Returns the loop, the bound state and the ports bound, in order.
    static func start<Core: ListeningCore>(name: String, host: String, ports: [Int], makeCore: @escaping @Sendable (EventLoop) throws -> Core)
        throws -> (EventLoop, LoopBound<(core: Core, listeners: [ServerListener])>, [Int]) {
        let loop = try EventLoop.startThread(name: name)
        do {
            let (state, bound) = try loop.submit { () throws -> (LoopBound<(core: Core, listeners: [ServerListener])>, [Int]) in
                let core = try makeCore(loop)
                var listeners: [ServerListener] = []
                do {
                    for (index, port) in ports.enumerated() {
                        let fd = try Sockets.listen(host: host, port: port)
                        let listener = ServerListener(fd: fd, index: index, core: core, loop: loop)
                        do { try loop.register(fd: fd, handler: listener) } catch {
                            Glibc.close(fd)
                            throw error
                        }
                        listeners.append(listener)
                    }
                } catch {
                    close(listeners, on: loop)
                    throw error
                }
                return (LoopBound((core, listeners), loop: loop), listeners.map { Sockets.localPort($0.fd) })
            }
            return (loop, state, bound)
        } catch {
            loop.stop()
            loop.waitUntilStopped()
            throw error
        }
    }

    private static func close(_ listeners: [ServerListener], on loop: EventLoop) {
        for listener in listeners {
            listener.acceptBackoff.cancel()
            loop.unregister(fd: listener.fd)
            Glibc.close(listener.fd)
        }
    }

    /// Closes every connection and the listeners, and ends the loop thread; only the first call does anything.
    static func stop<Core: ListeningCore>(loop: EventLoop, state: LoopBound<(core: Core, listeners: [ServerListener])>, isStopped: LockedValue<Bool>) {
        let already = isStopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        if already { return }
        try? loop.submit { [state, loop] in
            let (core, listeners) = state.value
            close(listeners, on: loop)
            core.closeAll()
        }
        loop.stop()
        loop.waitUntilStopped()
    }

    /// A server-side TLS context with the certificate chain and key loaded (TLS 1.2+, partial writes); the caller
    /// adds its ALPN choice and owns the result (SSL_CTX_free).
    /// The context of a TLS-only provider whose front end serves h2 and HTTP/1.1 (FCM, Push Kit): ALPN picks
    /// h2, else http/1.1. `service` names the provider in the error when there is no certificate.
    static func makeH2OrHTTP1Context(_ tls: MockTLSFiles?, service: String) throws -> OpaquePointer {
        guard let tls else { throw SimulatorError.configuration("\(service) is TLS only: give a certificate and key (or generate them)") }
        let context = try makeTLSContext(tls)
        SSL_CTX_set_alpn_select_cb(context, selectH2OrHTTP1, nil)
        return context
    }

    static func makeTLSContext(_ tls: MockTLSFiles) throws -> OpaquePointer {
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw OpenSSLSupport.lastError("SSL_CTX_new") }
        var ok = false
        defer { if !ok { SSL_CTX_free(context) } }
        _ = copenssl_set_min_proto_version(context, TLS1_2_VERSION)
        _ = copenssl_ctx_set_mode(context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS))
        guard SSL_CTX_use_certificate_chain_file(context, tls.certificateFile) == 1 else { throw OpenSSLSupport.lastError("certificate \(tls.certificateFile)") }
        guard SSL_CTX_use_PrivateKey_file(context, tls.privateKeyFile, SSL_FILETYPE_PEM) == 1 else { throw OpenSSLSupport.lastError("private key \(tls.privateKeyFile)") }
        guard SSL_CTX_check_private_key(context) == 1 else { throw OpenSSLSupport.lastError("key does not match certificate") }
        ok = true
        return context
    }
}

/// Accepts connections and hands them to the core. Loop-confined; the listening descriptor is closed by `stop`.
final class ServerListener: FileDescriptorHandler {
    let fd: Int32
    /// Its place in the ports the server was started with (which API it serves, for a core with several).
    let index: Int
    unowned let core: any ListeningCore
    let loop: EventLoop
    let acceptBackoff = AcceptBackoff()

    init(fd: Int32, index: Int, core: any ListeningCore, loop: EventLoop) {
        self.loop = loop
        self.fd = fd
        self.index = index
        self.core = core
    }

    func handleIO(readable: Bool, writable: Bool, hangup: Bool) {
        for _ in 0..<64 {
            let accepted: Int32?
            do { accepted = try Sockets.accept(fd) } catch {
                return acceptBackoff.failed(listener: fd, on: loop)
            }
            guard let client = accepted else { return }
            acceptBackoff.succeeded()
            core.accepted(fd: client, listener: index)
        }
    }
}

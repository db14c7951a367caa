import COpenSSL
import Glibc
import HTTP2Server
import Reactor

/// A provider's simulator as the shared server runs it: what its connections speak and how each is handled.
/// APNs (`APNsCore`), FCM and Push Kit (each a `SendAPICore` with its handler) and Web Push (`WebPushCore`); a next
/// provider is one more.
/// Loop-confined.
protocol MockProvider: AnyObject, SendableMetatype {
    /// The server-side TLS context (ALPN choice included), owned by the caller; nil: cleartext HTTP/2.
    func makeTLSContext() throws -> OpaquePointer?
    /// How its connections differ on the wire.
    var connectionSettings: MockConnectionSettings { get }
    /// Its fault script's connection-level rules now.
    var connectionFaults: ConnectionFaults { get }
    /// The provider's side of a new connection that came in on `listener` (its index in the ports served).
    func makeHandler(for connection: MockServerConnection, listener: Int) -> any MockConnectionHandler
    /// The server is stopping: write out what is buffered (logs).
    func stopping()
}

/// The simulator's state on its loop: the TLS context, the nghttp2 callbacks, the read buffer, the connection
/// counters and the connections, around one provider.
///
/// Owns the `SSL_CTX*`, the nghttp2 callbacks (through `h2`) and the read buffer, freed in `deinit`.
/// Confined to the loop thread; the public server reaches it only through a `LoopBound`, inside `loop.submit`.
final class MockServerCore<Provider: MockProvider>: ListeningCore, MockConnectionHost {
    let loop: EventLoop
    let provider: Provider
    let sslContext: OpaquePointer?
    let h2: H2ServerCallbacks
    let readBuffer: UnsafeMutableBufferPointer<UInt8>
    let counters: ConnectionCounters
    private var connections: [Int: MockServerConnection] = [:]
    private var nextConnectionID = 0

    /// `provider` keeps `counters` for its stats.
    init(loop: EventLoop, provider: Provider, counters: ConnectionCounters) throws {
        self.loop = loop
        self.provider = provider
        self.counters = counters
        let context = try provider.makeTLSContext()
        do { h2 = try H2ServerCallbacks() } catch {
            if let context { SSL_CTX_free(context) }
            throw error
        }
        sslContext = context
        readBuffer = .allocate(capacity: 65_536)
    }

    deinit {
        if let sslContext { SSL_CTX_free(sslContext) }
        readBuffer.deallocate()
    }

    var connectionFaults: ConnectionFaults { provider.connectionFaults }

    func accepted(fd: Int32, listener: Int) {
        nextConnectionID += 1
        do {
            let connection = try MockServerConnection(id: nextConnectionID, fd: fd, host: self, settings: provider.connectionSettings) {
                provider.makeHandler(for: $0, listener: listener)
            }
            connections[connection.id] = connection
            counters.connectionsAccepted += 1
            counters.connectionsOpen += 1
            try connection.start()
            connection.flush()
        } catch {
            if let connection = connections[nextConnectionID] { connection.close() } else { Glibc.close(fd) }
        }
    }

    func connectionClosed(_ connection: MockServerConnection) {
        if connections.removeValue(forKey: connection.id) != nil { counters.connectionsOpen -= 1 }
    }

    func closeAll() {
        for connection in Array(connections.values) { connection.close() }
        provider.stopping()
    }
}

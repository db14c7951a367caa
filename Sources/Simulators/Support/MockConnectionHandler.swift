import HTTP2Server
import Reactor

/// One request as a simulator connection collects it (an HTTP/2 stream, or an HTTP/1.1 message with stream 0).
/// A provider subclasses it for the headers and body it reads. Loop-confined, inside its connection.
class MockRequest {
    let streamID: Int32
    /// Answered, reset or refused: nothing more goes out for it.
    var answered = false
    /// The answer body still being handed to nghttp2 (HTTP/2).
    var answerBody: [UInt8] = []

    required init(streamID: Int32) { self.streamID = streamID }

    /// A header as received; pseudo-headers (`:method`, `:path`) included, names lowercase.
    func setHeader(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {}

    /// A piece of the body as received; the provider decides how much it keeps.
    func append(body chunk: UnsafeBufferPointer<UInt8>) {}

    /// `setHeader` for text (HTTP/1.1 and tests).
    final func setHeader(_ name: String, _ value: String) {
        var name = name, value = value
        name.withUTF8 { n in value.withUTF8 { v in setHeader(name: n, value: v) } }
    }
}

/// A provider's side of one simulator connection: its requests, and what it answers. Made by the provider for
/// each connection; keeps its `MockServerConnection` unowned (the connection owns it). Loop-confined.
protocol MockConnectionHandler: AnyObject {
    /// SETTINGS_MAX_CONCURRENT_STREAMS in the connection's first SETTINGS frame (HTTP/2).
    var initialMaxConcurrentStreams: UInt32 { get }
    /// TLS (if any) is done and the protocol chosen; the session is not started yet.
    func connectionReady()
    /// A new, empty request for `streamID` (0 for HTTP/1.1).
    func makeRequest(streamID: Int32) -> MockRequest
    /// A complete request. The handler counts it with `admit` (unless it is a control request), answers it with
    /// `respond` or `apply`, now or in `after`.
    func requestComplete(_ request: MockRequest)
}

/// How a provider's connections differ on the wire.
struct MockConnectionSettings {
    /// Serve HTTP/1.1 when ALPN did not choose h2 (else such a connection is a handshake failure).
    var servesHTTP1 = false
    /// HTTP/1.1 requests with a longer body get 413.
    var http1BodyLimit = 0
    /// HTTP/2 answers carry `content-length`.
    var sendsContentLength = false
    /// Honour the script's `idleTimeoutSeconds` (GOAWAY `IdleTimeout`).
    var watchesIdle = false
}

/// The connection-level part of a fault script: counted per connection by `MockServerConnection.admit`.
struct ConnectionFaults {
    var goawayAfterRequests: Int?
    var dropAfterRequests: Int?
    var silenceAfterRequests: Int?
    var idleTimeoutSeconds: Double?
}

/// The counters every simulator keeps about its connections; each provider's stats report the ones it documents.
/// Loop-confined.
final class ConnectionCounters {
    /// Provider requests counted by `admit` (control paths are not).
    var requests = 0
    var connectionsAccepted = 0
    var connectionsOpen = 0
    var http2Connections = 0
    var http1Connections = 0
    /// Connections closed by a `drop` fault.
    var connectionsDropped = 0
    var goawaysSent = 0
    /// RST_STREAM REFUSED_STREAM sent by faults and GOAWAYs.
    var refusedStreams = 0
    /// Requests never answered (silence).
    var silencedRequests = 0
    var handshakeFailures = 0
    /// Streams open now, across connections.
    var streamsInUse = 0
    /// The most streams open at once on one connection.
    var maxConcurrentStreamsInUse = 0

    /// Zeroes the counters; the gauges (connections and streams open now) stay.
    func reset() {
        let open = connectionsOpen, inUse = streamsInUse
        requests = 0
        connectionsAccepted = 0
        http2Connections = 0
        http1Connections = 0
        connectionsDropped = 0
        goawaysSent = 0
        refusedStreams = 0
        silencedRequests = 0
        handshakeFailures = 0
        maxConcurrentStreamsInUse = 0
        connectionsOpen = open
        streamsInUse = inUse
    }
}

/// The connection counters every provider's stats report (each adds the ones it documents besides).
protocol ReportsConnectionCounters {
    var requests: Int { get set }
    var connectionsAccepted: Int { get set }
    var connectionsOpen: Int { get set }
    var connectionsDropped: Int { get set }
    var goawaysSent: Int { get set }
    var silencedRequests: Int { get set }
    var handshakeFailures: Int { get set }
}

extension ConnectionCounters {
    /// Copies the counters every provider reports into its stats.
    func report<Stats: ReportsConnectionCounters>(into stats: inout Stats) {
        stats.requests = requests
        stats.connectionsAccepted = connectionsAccepted
        stats.connectionsOpen = connectionsOpen
        stats.connectionsDropped = connectionsDropped
        stats.goawaysSent = goawaysSent
        stats.silencedRequests = silencedRequests
        stats.handshakeFailures = handshakeFailures
    }
}

/// What a simulator's core gives its connections.
protocol MockConnectionHost: AnyObject {
    var loop: EventLoop { get }
    /// nil: cleartext (HTTP/2 with prior knowledge).
    var sslContext: OpaquePointer? { get }
    var h2: H2ServerCallbacks { get }
    /// One read buffer for every connection on the loop.
    var readBuffer: UnsafeMutableBufferPointer<UInt8> { get }
    var counters: ConnectionCounters { get }
    /// The fault script's connection-level rules now (they can change at run time).
    var connectionFaults: ConnectionFaults { get }
    func connectionClosed(_ connection: MockServerConnection)
}

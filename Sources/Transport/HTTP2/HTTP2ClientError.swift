/// Why a request did not get an answer, and whether the server may have acted on it.
///
/// The worker's promise to lose nothing rests on this split: `safeToResend` errors were certainly not
/// processed (resending cannot duplicate a push); the others may have been (resend means a possible duplicate).
public enum HTTP2ClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// RST_STREAM REFUSED_STREAM: the server did not process it.
    case refusedStream
    /// The stream's id was above the GOAWAY's last-stream-id: not processed.
    case goawayUnprocessed(lastStreamID: Int32, errorCode: UInt32, reason: String?)
    /// The connection died with the stream open: outcome unknown.
    case connectionLost(String)
    /// The per-request deadline passed after the request was sent (stream cancelled): outcome unknown.
    case timedOut
    /// The deadline passed while the request still waited in a queue: never sent.
    case queueTimedOut
    /// The server reset the stream with another error code: outcome unknown.
    case streamReset(errorCode: UInt32)
    /// The connection failed or drained before this request was handed to the server: never sent.
    case notSent(String)
    /// TCP connect, DNS or proxy failure: never sent.
    case connectFailed(String)
    /// Handshake, certificate verification or ALPN (no h2) failure: never sent.
    case tlsFailed(String)
    /// The owner's address check refused every address the host resolved to, or one of them (a push service's
    /// name resolving to a private address): never connected, never sent, and no retry will change it.
    case addressRefused(String)
    /// The server chose HTTP/1.1 (or no protocol) by ALPN, for a client that offered it: never sent; its owner
    /// speaks HTTP/1.1 to that server instead.
    case http1Only(String)
    /// Back-pressure: the bounded queue is full. Never sent.
    case queueFull
    /// The pool or connection was closed by its owner before the request was sent.
    case closed

    /// True when the server may have received and acted on the request.
    public var wasProcessedPossibly: Bool {
        switch self {
        case .connectionLost, .timedOut, .streamReset: return true
        default: return false
        }
    }

    /// True when resending cannot produce a duplicate.
    public var safeToResend: Bool { !wasProcessedPossibly }

    public var description: String {
        switch self {
        case .refusedStream: return "stream refused by server (not processed)"
        case let .goawayUnprocessed(last, code, reason):
            return "GOAWAY (last stream \(last), error \(code)\(reason.map { ", reason \($0)" } ?? "")): not processed"
        case let .connectionLost(why): return "connection lost with the request in flight: \(why)"
        case .timedOut: return "request timed out in flight (outcome unknown)"
        case .queueTimedOut: return "request timed out waiting in the queue (never sent)"
        case let .streamReset(code): return "stream reset by server with error \(code) (outcome unknown)"
        case let .notSent(why): return "not sent: \(why)"
        case let .connectFailed(why): return "connect failed: \(why)"
        case let .tlsFailed(why): return "TLS failed: \(why)"
        case let .addressRefused(why): return "address refused: \(why)"
        case let .http1Only(selected): return "the server speaks HTTP/1.1, not HTTP/2 (ALPN: \(selected)): not sent"
        case .queueFull: return "queue full"
        case .closed: return "closed"
        }
    }
}

import Reactor

/// Why a Redis command did not produce a reply.
public enum RedisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The connection dropped while the command was in flight: it may or may not have run.
    case connectionLost
    /// Not connected and the command could not wait (waiting queue full, or it waited past its timeout).
    case notConnected
    /// No reply within the command timeout; the connection is dropped and re-made (the command may have run).
    case timeout
    /// Connecting failed (socket, refused, connect timeout, AUTH or SELECT refused).
    case connectFailed(String)
    /// Redis answered with an error reply (`-ERR ...`) at the top level. Errors nested in arrays stay
    /// `RESPValue.error` values.
    case server(String)
    /// Bytes that are not RESP, or a reply of a shape the caller did not expect.
    case protocolError(String)
    case closed

    public var description: String {
        switch self {
        case .connectionLost: return "connection to Redis lost (command outcome unknown)"
        case .notConnected: return "not connected to Redis"
        case .timeout: return "Redis command timed out"
        case .connectFailed(let why): return "cannot connect to Redis: \(why)"
        case .server(let message): return "Redis error: \(message)"
        case .protocolError(let why): return "Redis protocol error: \(why)"
        case .closed: return "Redis connection closed"
        }
    }
}

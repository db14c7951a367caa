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
    /// One of Herald's scripts refused to run because `key` holds a `found` (Redis `TYPE`) where it writes a
    /// `expected`: it checked before its first write, so **nothing changed**. Safe to retry once the key is
    /// fixed; never "maybe applied" (unlike `.connectionLost`/`.timeout`).
    case wrongType(key: String, found: String, expected: String)
    /// The command ran on the master, but fewer replicas than `wanted` confirmed it (`redis.wait_replicas`)
    /// within the WAIT timeout: a failover now could lose it. Outcome unknown, like `.connectionLost`.
    case notReplicated(acknowledged: Int, wanted: Int)

    /// Redis could not be reached or answered nothing in time (connect failed, connection lost or closed, a
    /// timeout): the tools exit 69, "service unavailable".
    public var isUnreachable: Bool {
        switch self {
        case .connectionLost, .notConnected, .timeout, .connectFailed, .closed: true
        case .server, .protocolError, .wrongType, .notReplicated: false
        }
    }

    public var description: String {
        switch self {
        case .connectionLost: return "connection to Redis lost (command outcome unknown)"
        case .notConnected: return "not connected to Redis"
        case .timeout: return "Redis command timed out"
        case .connectFailed(let why): return "cannot connect to Redis: \(why)"
        case .server(let message): return "Redis error: \(message)"
        case .protocolError(let why): return "Redis protocol error: \(why)"
        case .closed: return "Redis connection closed"
        case .wrongType(let key, let found, let expected):
            return "Redis key \(key.debugDescription) holds a \(found), expected a \(expected): nothing was changed"
        case .notReplicated(let acknowledged, let wanted):
            return "written on the Redis master but only \(acknowledged) of \(wanted) replicas confirmed it in time (a failover could lose it)"
        }
    }
}

extension RedisError {
    /// The command may or may not have taken effect (for good): a lost reply, a timeout, or a write the
    /// replicas did not confirm. Re-send it only where a repeat is safe.
    public var outcomeUnknown: Bool {
        switch self {
        case .connectionLost, .timeout, .notReplicated: return true
        default: return false
        }
    }
}

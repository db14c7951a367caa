/// Where a `RedisConnection` connects when it is not simply `url`'s host and port (Sentinel): asked before
/// every (re)connect, with a command whose reply must pass a check after AUTH and SELECT.
///
/// Loop-confined with its connection: every call comes on the connection's loop; completions go there too.
public protocol RedisAddressSource: AnyObject {
    /// Finds the endpoint to connect to; calls `completion` once, on the loop, within its own timeouts.
    func resolve(_ completion: @escaping (Result<RedisURL.Endpoint, RedisError>) -> Void)
    /// Run last in the handshake; `check` returns why the server is not acceptable (nil when it is).
    var handshakeCheck: (command: [[UInt8]], check: ((RESPValue) -> String?)?)? { get }
    /// The connection this source serves (held weakly), so it can drop it when the master moves.
    func attach(to connection: RedisConnection)
    /// The connection closed for good: stop whatever runs beside it.
    func detach()
}

import CNghttp2
import Reactor
import TLS

// One owner per C handle of a connection: each is freed exactly once, by whoever drops the last reference
// (the connection's phase carries them, so leaving a phase frees what only that phase used).

/// One `nghttp2_session*`. Its callbacks reach the connection through an unretained `user_data`: sound because
/// only the connection's phase (and, during a call, the caller's local reference) holds this handle.
final class SessionHandle {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    deinit { nghttp2_session_del(pointer) }
}

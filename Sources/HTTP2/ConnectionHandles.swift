import CNghttp2
import COpenSSL
import Glibc
import Reactor
import TLS

// One owner per C handle of a connection: each is freed exactly once, by whoever drops the last reference
// (the connection's phase carries them, so leaving a phase frees what only that phase used).

/// A non-blocking socket and its registration with the loop. `close()` (or `deinit`) unregisters and closes it once.
final class SocketHandle {
    let fd: Int32
    private let loop: EventLoop
    private var registered = false
    private var watchingWritable = false
    private var open = true

    init(fd: Int32, loop: EventLoop) {
        self.fd = fd
        self.loop = loop
    }

    /// Registers for writability only: what a connecting socket waits for.
    func register(_ handler: FileDescriptorHandler) throws(SystemError) {
        try loop.register(fd: fd, handler: handler, readable: false, writable: true)
        registered = true
        watchingWritable = true
    }

    /// Always readable; writable on demand. A no-op when nothing changes, so callers may ask freely.
    func watchWritable(_ writable: Bool) throws(SystemError) {
        guard registered, open, writable != watchingWritable else { return }
        watchingWritable = writable
        try loop.setInterest(fd: fd, readable: true, writable: writable)
    }

    func close() {
        guard open else { return }
        open = false
        if registered { loop.unregister(fd: fd) }
        registered = false
        Glibc.close(fd)
    }

    deinit { close() }
}

/// One `nghttp2_session*`. Its callbacks reach the connection through an unretained `user_data`: sound because
/// only the connection's phase (and, during a call, the caller's local reference) holds this handle.
final class SessionHandle {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    deinit { nghttp2_session_del(pointer) }
}

import Glibc

/// A non-blocking socket and its registration with the loop. `close()` (or `deinit`) unregisters and closes it once.
/// The HTTP/2 and Redis connections keep it in the phases that have a socket, so leaving them frees it.
public final class SocketHandle {
    public let fd: Int32
    private let loop: EventLoop
    private var registered = false
    /// Writability is being watched: a flush is due when the socket turns writable, none needs scheduling.
    public private(set) var watchingWritable = false
    private var open = true

    public init(fd: Int32, loop: EventLoop) {
        self.fd = fd
        self.loop = loop
    }

    /// Registers for writability only: what a connecting socket waits for.
    public func register(_ handler: FileDescriptorHandler) throws(SystemError) {
        try loop.register(fd: fd, handler: handler, readable: false, writable: true)
        registered = true
        watchingWritable = true
    }

    /// Always readable; writable on demand. A no-op when nothing changes, so callers may ask freely.
    public func watchWritable(_ writable: Bool) throws(SystemError) {
        guard registered, open, writable != watchingWritable else { return }
        watchingWritable = writable
        try loop.setInterest(fd: fd, readable: true, writable: writable)
    }

    public func close() {
        guard open else { return }
        open = false
        if registered { loop.unregister(fd: fd) }
        registered = false
        Glibc.close(fd)
    }

    deinit { close() }
}

import Glibc

extension EventLoop {
    /// A listening TCP socket on `host:port` registered with `handler` (closed again if registering fails), and the
    /// port it got (port 0 picks one): how every server on a loop starts.
    public func listen(host: String, port: Int, backlog: Int32, handler: FileDescriptorHandler) throws(SystemError) -> (fd: Int32, port: Int) {
        let fd = try Sockets.listen(host: host, port: port, backlog: backlog)
        do {
            try register(fd: fd, handler: handler)
        } catch {
            Glibc.close(fd)
            throw error
        }
        return (fd, Sockets.localPort(fd))
    }
}

/// A listener's pause after a failed accept. The loop is level-triggered: a connection the kernel holds but cannot
/// hand over (EMFILE, ENFILE, ENOBUFS, ENOMEM) wakes the loop again at once, forever (issue 51: the API spun at 100 %
/// CPU at the open-file limit and answered nothing). So the listening socket is taken off the loop for a while,
/// 10 ms doubling to 1 s while accepts keep failing; the pending connections wait in the kernel's backlog, and are
/// taken once descriptors are free again. Loop-confined.
public final class AcceptBackoff {
    public static let firstPauseMilliseconds = 10
    public static let longestPauseMilliseconds = 1_000
    /// Accepts that failed, since the start.
    public private(set) var failures: UInt64 = 0
    /// The pause in force, or the last one taken (0 after a success).
    public private(set) var pauseMilliseconds = 0
    private var timer: LoopTimer?

    public init() {}

    /// An accept on `fd` failed: `fd` is off the loop (still registered, no interest) until the pause ends.
    public func failed(listener fd: Int32, on loop: EventLoop) {
        failures += 1
        pauseMilliseconds = min(max(pauseMilliseconds * 2, Self.firstPauseMilliseconds), Self.longestPauseMilliseconds)
        timer?.cancel()
        try? loop.setInterest(fd: fd, readable: false, writable: false)
        timer = loop.schedule(afterMilliseconds: pauseMilliseconds) { [weak self] in
            self?.timer = nil
            try? loop.setInterest(fd: fd, readable: true, writable: false)
        }
    }

    /// An accept succeeded (or found none pending): the next failure pauses the shortest time again.
    public func succeeded() { pauseMilliseconds = 0 }

    /// Before the listener is closed, so no timer touches a descriptor number that may be reused.
    public func cancel() {
        timer?.cancel()
        timer = nil
    }
}

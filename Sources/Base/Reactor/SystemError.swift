import CLinux
import Glibc

/// A failed system call, with the call's name and errno, so every log line says which call failed and why.
public struct SystemError: Error, CustomStringConvertible, Equatable, Sendable {
    public let call: String
    public let errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// Errno 0 is no error of the system's (a resolver failure says its own words in `call`): no "Success".
    public var description: String {
        errno == 0 ? call : "\(call): \(String(cString: strerror(errno))) (errno \(errno))"
    }

    /// The socket would block: wait for readiness instead of failing.
    public var isWouldBlock: Bool { errno == EAGAIN || errno == EWOULDBLOCK }
}

/// The one place that calls into libc for I/O: retries EINTR and turns -1 into a typed `SystemError`.
/// Every syscall in Herald goes through this, as swift-nio's `syscall` helper does.
@inline(__always)
public func syscall<T: FixedWidthInteger>(_ name: String, _ body: () -> T) throws(SystemError) -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = clinux_errno()
        if code == EINTR { continue }
        throw SystemError(call: name, errno: code)
    }
}

/// Like `syscall`, but EAGAIN/EWOULDBLOCK come back as nil so non-blocking I/O reads naturally.
@inline(__always)
public func nonBlockingSyscall<T: FixedWidthInteger>(_ name: String, _ body: () -> T) throws(SystemError) -> T? {
    do {
        return try syscall(name, body)
    } catch {
        if error.isWouldBlock || error.errno == EINPROGRESS { return nil }
        throw error
    }
}

import CLinux
import Glibc

/// What one read or write on a non-blocking descriptor did.
public enum IOProgress: Equatable, Sendable {
    /// This many bytes moved (always > 0).
    case bytes(Int)
    /// Nothing to read or no room to write now: wait for readiness.
    case wouldBlock
    /// The peer closed its side (a read returned 0).
    case endOfFile
}

/// The one retrying read/write over `syscall`: EINTR is retried, EAGAIN/EWOULDBLOCK become `.wouldBlock`, any
/// other failure throws a `SystemError` naming the call. Every plain-socket read and write in Herald goes
/// through these two, so the EINTR/EAGAIN rules live in one place.
public enum SocketIO {
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int) throws(SystemError) -> IOProgress {
        guard let n = try nonBlockingSyscall("read", { Glibc.read(fd, buffer, count) }) else { return .wouldBlock }
        return n == 0 ? .endOfFile : .bytes(n)
    }

    public static func write(_ fd: Int32, from buffer: UnsafeRawPointer, count: Int) throws(SystemError) -> IOProgress {
        guard count > 0 else { return .bytes(0) }
        guard let n = try nonBlockingSyscall("write", { Glibc.write(fd, buffer, count) }) else { return .wouldBlock }
        return .bytes(n)
    }

    /// Reads into `buffer` from its start.
    public static func read(_ fd: Int32, into buffer: inout [UInt8]) throws(SystemError) -> IOProgress {
        let count = buffer.count
        let result = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(SystemError) in try read(fd, into: raw.baseAddress!, count: count) }
        }
        return try result.get()
    }

    /// Writes `bytes[offset...]`.
    public static func write(_ fd: Int32, _ bytes: [UInt8], from offset: Int = 0) throws(SystemError) -> IOProgress {
        guard offset < bytes.count else { return .bytes(0) }
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(SystemError) in try write(fd, from: raw.baseAddress! + offset, count: raw.count - offset) }
        }
        return try result.get()
    }
}
